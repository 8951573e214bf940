package scenarios

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
)

// FS holds the built-in scenarios, one NAME.txtar each.
//
//go:embed *.txtar
var FS embed.FS

// Names lists the built-in scenarios in order.
func Names() []string {
	entries, _ := fs.ReadDir(FS, ".")
	var names []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".txtar") {
			names = append(names, strings.TrimSuffix(e.Name(), ".txtar"))
		}
	}
	sort.Strings(names)
	return names
}

// Builtin parses the named built-in scenario.
func Builtin(name string) (*Scenario, error) {
	data, err := FS.ReadFile(name + ".txtar")
	if err != nil {
		return nil, fmt.Errorf("no built-in scenario %q (built-ins: %s)", name, strings.Join(Names(), ", "))
	}
	return Parse("builtin:"+name, data)
}

// Load returns a scenario given a built-in name or a file path. A name that is
// both a built-in and an existing file means the file only if it looks like a
// path (has a slash or the .txtar suffix).
func Load(nameOrPath string) (*Scenario, error) {
	if nameOrPath == "" {
		return nil, fmt.Errorf("no scenario given (a built-in name or a file path; built-ins: %s)", strings.Join(Names(), ", "))
	}
	looksLikePath := strings.ContainsRune(nameOrPath, '/') || path.Ext(nameOrPath) == ".txtar"
	if !looksLikePath {
		if _, err := FS.Open(nameOrPath + ".txtar"); err == nil {
			return Builtin(nameOrPath)
		}
	}
	if _, err := os.Stat(nameOrPath); err != nil {
		if looksLikePath {
			return nil, fmt.Errorf("scenario file: %w", err)
		}
		return nil, fmt.Errorf("no built-in scenario or file %q (built-ins: %s)", nameOrPath, strings.Join(Names(), ", "))
	}
	return ParseFile(nameOrPath)
}
