package fakeclaude

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/askctl/askctl/claudecli"
	"github.com/askctl/askctl/internal/uuid"
	"github.com/askctl/askctl/scenarios"
)

// This file makes fakeclaude play a learned release: the code writes the
// base release's messages, and each message passes through its release's
// patch (claudecli.Release) on its way out, stdout and session file alike.

// chooseRelease is the release a run plays: the one the environment names
// (FAKECLAUDE_CLI_VERSION), else the one a recorded scenario was recorded
// with, else the newest learned.
func chooseRelease(getenv func(string) string, sc *scenarios.Scenario) (*claudecli.Release, error) {
	v := getenv(claudecli.EnvCLIVersion)
	if v == "" && sc != nil && sc.Origin == scenarios.Recorded && sc.CLIVersion != "" {
		r, err := claudecli.Load(sc.CLIVersion)
		if err != nil {
			return nil, fmt.Errorf("scenario %s was recorded with claude %s, which it plays: %w; or play it as a learned release with %s (askctl's --cli)", sc.Name, sc.CLIVersion, err, claudecli.EnvCLIVersion)
		}
		return r, nil
	}
	return claudecli.Load(v)
}

// defaultModel is the model the release reports with no --model.
func (f *fake) defaultModel() string {
	if f.release.DefaultModel != "" {
		return f.release.DefaultModel
	}
	return DefaultModel
}

// patched is m as the release writes it: kind is claudecli.Kind of its
// encoding. It returns m itself when the release changes nothing there.
func (f *fake) patched(kind string, m obj) obj {
	p := f.release.For(kind)
	if p == nil {
		return m
	}
	for _, k := range p.Drop {
		m = dropPath(m, strings.Split(k, "."))
	}
	for _, a := range p.Add {
		path := strings.Split(a.Key, ".")
		var after []string
		if a.After != "" {
			after = []string{a.After}
		}
		m = addPath(m, path, after, f.genValue(a))
	}
	return m
}

// genValue is an addition's value for one message.
func (f *fake) genValue(a claudecli.Addition) any {
	switch a.Gen {
	case claudecli.GenUUID:
		return uuid.New()
	case claudecli.GenNowMillis:
		return f.now().UnixMilli()
	case claudecli.GenTimestamp:
		return f.now().UTC().Format("2006-01-02T15:04:05.000Z07:00")
	}
	return json.RawMessage(a.Value)
}

// step splits a path element "k[]" into its key and whether it steps into
// each element of an array.
func step(el string) (key string, each bool) {
	key = strings.TrimSuffix(el, "[]")
	return key, key != el
}

// dropPath is o without the key at path. The levels it changes are
// copies: o may be shared.
func dropPath(o obj, path []string) obj {
	key, each := step(path[0])
	for i, f := range o {
		if f.k != key {
			continue
		}
		if len(path) == 1 {
			out := append(obj{}, o[:i]...)
			return append(out, o[i+1:]...)
		}
		v, ok := within(f.v, each, func(in obj) obj { return dropPath(in, path[1:]) })
		if !ok {
			return o
		}
		out := append(obj{}, o...)
		out[i].v = v
		return out
	}
	return o
}

// addPath is o with the key at path set to v, placed after the key named
// by after (first when none, last when after is not there). A missing
// parent adds nothing: the release adds the key where the base has its
// parent.
func addPath(o obj, path, after []string, v any) obj {
	key, each := step(path[0])
	if len(path) == 1 {
		out := make(obj, 0, len(o)+1)
		for _, f := range o {
			if f.k != key {
				out = append(out, f)
			}
		}
		at := len(out)
		if len(after) == 0 {
			at = 0
		}
		for i, f := range out {
			if len(after) > 0 && f.k == after[0] {
				at = i + 1
			}
		}
		out = append(out, kv{})
		copy(out[at+1:], out[at:])
		out[at] = kv{key, v}
		return out
	}
	for i, f := range o {
		if f.k != key {
			continue
		}
		nv, ok := within(f.v, each, func(in obj) obj { return addPath(in, path[1:], after, v) })
		if !ok {
			return o
		}
		out := append(obj{}, o...)
		out[i].v = nv
		return out
	}
	return o
}

// within applies fn to the object v is, or with each to every object of
// the array v is; ok is false when v is not that.
func within(v any, each bool, fn func(obj) obj) (any, bool) {
	if !each {
		in, ok := v.(obj)
		if !ok {
			return nil, false
		}
		return fn(in), true
	}
	switch arr := v.(type) {
	case []obj:
		out := make([]obj, len(arr))
		for i, e := range arr {
			out[i] = fn(e)
		}
		return out, true
	case []any:
		out := make([]any, len(arr))
		for i, e := range arr {
			if in, ok := e.(obj); ok {
				out[i] = fn(in)
			} else {
				out[i] = e
			}
		}
		return out, true
	}
	return nil, false
}

// encodeAs encodes m as the release writes it; kind classifies the base's
// encoding (claudecli.Kind, or SessionKind for a session file row).
func (f *fake) encodeAs(m any, kind func([]byte) string) ([]byte, error) {
	b, err := encode(m)
	if err != nil || len(f.release.Messages) == 0 {
		return b, err
	}
	o, ok := m.(obj)
	if !ok {
		return b, nil
	}
	k := kind(b)
	if f.release.For(k) == nil {
		return b, nil
	}
	return encode(f.patched(k, o))
}
