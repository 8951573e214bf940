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
	for _, a := range inOrder(p.Add) {
		path := strings.Split(a.Key, ".")
		var after []string
		if a.After != "" {
			after = []string{a.After}
		}
		m = addPath(m, path, after, f.genValue(a))
	}
	return m
}

// inOrder puts additions in an order that honours their After: one that
// follows a key another addition adds comes after that one, so that keys
// land in the release's own order whatever the file's order.
func inOrder(adds []claudecli.Addition) []claudecli.Addition {
	out := make([]claudecli.Addition, 0, len(adds))
	done := make([]bool, len(adds))
	pending := func(key string) bool {
		for i, a := range adds {
			if !done[i] && a.Key == key {
				return true
			}
		}
		return false
	}
	for len(out) < len(adds) {
		progress := false
		for i, a := range adds {
			if done[i] {
				continue
			}
			after := a.After
			if j := strings.LastIndex(a.Key, "."); j >= 0 && after != "" {
				after = a.Key[:j+1] + after // a sibling's full path
			}
			if after != "" && after != a.Key && pending(after) {
				continue
			}
			out, done[i], progress = append(out, a), true, true
		}
		if !progress { // a cycle: keep the file's order for the rest
			for i, a := range adds {
				if !done[i] {
					out, done[i] = append(out, a), true
				}
			}
		}
	}
	return out
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
		return o.inside(i, each, func(in obj) obj { return dropPath(in, path[1:]) })
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
		if f.k == key {
			return o.inside(i, each, func(in obj) obj { return addPath(in, path[1:], after, v) })
		}
	}
	return o
}

// inside is o with fn applied within its i-th value (see within), in a
// copy of o; o itself when that value is not what fn applies to.
func (o obj) inside(i int, each bool, fn func(obj) obj) obj {
	v, ok := within(o[i].v, each, fn)
	if !ok {
		return o
	}
	out := append(obj{}, o...)
	out[i].v = v
	return out
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

// encodeAs encodes m as the release writes it. session says m is a
// session file row (its kind is claudecli.SessionKind's).
func (f *fake) encodeAs(m any, session bool) ([]byte, error) {
	if onEncode != nil {
		onEncode(m)
	}
	o, ok := m.(obj)
	if !ok || len(f.release.Messages) == 0 {
		return encode(m)
	}
	kind, ok := o.kind()
	if !ok {
		// A part of it is raw JSON: classify its encoding.
		b, err := encode(m)
		if err != nil {
			return nil, err
		}
		kind = claudecli.Kind(b)
		if f.release.For(prefixed(kind, session)) == nil {
			return b, nil
		}
	}
	return encode(f.patched(prefixed(kind, session), o))
}

// onEncode, in tests, sees every message and row before it is encoded.
var onEncode func(m any)

func prefixed(kind string, session bool) string {
	if session {
		return "session:" + kind
	}
	return kind
}

// get is the value of key k, if o has it.
func (o obj) get(k string) (any, bool) {
	for _, f := range o {
		if f.k == k {
			return f.v, true
		}
	}
	return nil, false
}

func (o obj) str(k string) string {
	v, _ := o.get(k)
	s, _ := v.(string)
	return s
}

// kind is claudecli.Kind of o's encoding, read off o itself; false when
// a part it needs is raw JSON (TestObjKindIsKind holds the two together).
func (o obj) kind() (string, bool) {
	typ := o.str("type")
	sub := func(k string) (obj, bool) {
		v, _ := o.get(k)
		in, ok := v.(obj)
		return in, ok
	}
	switch typ {
	case "control_request":
		r, ok := sub("request")
		return typ + "/" + r.str("subtype"), ok
	case "control_response":
		r, ok := sub("response")
		if !ok {
			return "", false
		}
		switch inner, _ := r.get("response"); inner := inner.(type) {
		case obj:
			if _, has := inner.get("claude_code_version"); has {
				return typ + "/initialize", true
			}
		case nil:
		default:
			return "", false
		}
		return typ + "/" + r.str("subtype"), true
	case "user", "assistant":
		if _, has := o.get("turnPosition"); has {
			return typ + "/prompt", true
		}
		msg, ok := sub("message")
		if !ok {
			return "", false
		}
		switch c, _ := msg.get("content"); c := c.(type) {
		case string:
			return typ + "/text", true
		case []obj:
			if len(c) > 0 {
				if t := c[0].str("type"); t != "" {
					return typ + "/" + t, true
				}
			}
			return typ, true
		}
		return "", false
	case "queue-operation":
		return typ + "/" + o.str("operation"), true
	}
	if s := o.str("subtype"); s != "" {
		return typ + "/" + s, true
	}
	return typ, true
}
