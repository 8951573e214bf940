package profile

import (
	"embed"
	"slices"
)

// builtin are worked example profiles: the reference bridge over each
// surface kind.
//
//go:embed builtin/*.json
var builtin embed.FS

// Builtins are the names of the built-in profiles usable as they are. The
// exec one (builtin/reference-exec.json) needs its adapter on disk, beside
// the file: name the file.
func Builtins() []string {
	return []string{"reference-ws", "reference-http", "reference-control-ws", "reference-browser"}
}

// Builtin is the built-in profile name (Builtins), and false when there is
// no such built-in.
func Builtin(name string) (*Profile, bool, error) {
	if !slices.Contains(Builtins(), name) {
		return nil, false, nil
	}
	data, err := builtin.ReadFile("builtin/" + name + ".json")
	if err != nil {
		return nil, true, err
	}
	p, err := Parse(name, data)
	return p, true, err
}
