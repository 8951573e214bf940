package claudecli

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"
)

func TestCompareVersions(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"2.1.330", "2.1.330", 0}, {"2.1.99", "2.1.330", -1}, {"2.1.330", "2.1.318", 1},
		{"2.2.0", "2.1.999", 1}, {"2.1", "2.1.0", -1}, {"10.0.0", "9.9.9", 1},
		{"2.1.99", "2.1.100-rc.1", -1}, {"2.1.331-rc.1", "2.1.331", -1}, {"2.1.331", "2.1.331-rc.1", 1}, {"2.1.331-rc.1", "2.1.331-rc.2", -1},
	} {
		if got := CompareVersions(c.a, c.b); got != c.want {
			t.Errorf("CompareVersions(%s, %s) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

// TestReleasesShipped: every shipped file parses, is named after its
// version, and the base is among them.
func TestReleasesShipped(t *testing.T) {
	rs := Releases()
	if len(rs) == 0 || rs[len(rs)-1] != Newest() || rs[0] != Oldest() {
		t.Fatalf("Releases() = %v, Newest %s, Oldest %s", rs, Newest(), Oldest())
	}
	base := false
	for i, v := range rs {
		if i > 0 && CompareVersions(rs[i-1], v) >= 0 {
			t.Errorf("Releases() out of order: %s before %s", rs[i-1], v)
		}
		r, err := Load(v)
		if err != nil {
			t.Fatal(err)
		}
		if r.Version != v {
			t.Errorf("releases/%s.json says version %s", v, r.Version)
		}
		if v == Base {
			base = true
			if len(r.Messages) != 0 {
				t.Errorf("the base release %s has differences from itself: %v", v, r.Messages)
			}
		}
	}
	if !base {
		t.Errorf("the base release %s is not among the learned: %v", Base, rs)
	}
	if n := newestIn(releaseFiles); Newest() != n {
		t.Errorf("Newest() = %s, but the newest release file is %s: newest.go is stale (askctl claude learn %s writes it)", Newest(), n, n)
	}
	if Pinned != Newest() {
		t.Errorf("Pinned = %s, want the newest learned %s", Pinned, Newest())
	}
}

func TestLoadUnknown(t *testing.T) {
	_, err := Load("2.0.1")
	var ue *UnknownRelease
	if !errors.As(err, &ue) {
		t.Fatalf("Load(2.0.1) = %v, want an *UnknownRelease", err)
	}
	for _, s := range []string{"2.0.1 is not a learned release", Newest(), "askctl claude learn 2.0.1"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not say %q", err, s)
		}
	}
}

func TestParseReleaseErrors(t *testing.T) {
	for _, c := range []struct{ body, want string }{
		{`{"version":"2.1.1","messages":{"system/init":{"add":[{"key":"x"}]}}}`, "x.json: messages.system/init.add[0] (x): want one of value and gen"},
		{`{"version":"2.1.1","messages":{"system/init":{"add":[{"key":"x","gen":"dice"}]}}}`, `gen "dice"`},
		{`{"version":"2.1.1","messages":{"system/init":{"add":[{"value":1}]}}}`, "add[0]: no key"},
		{`{"version":"2.1.1","mesages":{}}`, `x.json: json: unknown field "mesages"`},
		{`{}`, "x.json: no version"},
	} {
		_, err := ParseRelease("x.json", []byte(c.body))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseRelease(%s) = %v, want %q", c.body, err, c.want)
		}
	}
}

func TestKind(t *testing.T) {
	for _, c := range []struct{ raw, want string }{
		{`{"type":"system","subtype":"init"}`, "system/init"},
		{`{"type":"control_response","response":{"subtype":"success","response":{"commands":[],"claude_code_version":"2.1.330"}}}`, "control_response/initialize"},
		{`{"type":"control_response","response":{"subtype":"success","response":{}}}`, "control_response/success"},
		{`{"type":"control_request","request":{"subtype":"can_use_tool"}}`, "control_request/can_use_tool"},
		{`{"type":"user","message":{"content":"hi"}}`, "user/text"},
		{`{"type":"user","message":{"content":[{"type":"tool_result"}]}}`, "user/tool_result"},
		{`{"type":"user","message":{"content":"hi"},"turnPosition":{}}`, "user/prompt"},
		{`{"type":"assistant","message":{"content":[{"type":"tool_use"}]}}`, "assistant/tool_use"},
		{`{"type":"result","subtype":"success"}`, "result/success"},
		{`{"type":"queue-operation","operation":"enqueue"}`, "queue-operation/enqueue"},
		{`{"type":"last-prompt"}`, "last-prompt"},
	} {
		if got := Kind([]byte(c.raw)); got != c.want {
			t.Errorf("Kind(%s) = %s, want %s", c.raw, got, c.want)
		}
	}
	if got := SessionKind([]byte(`{"type":"last-prompt"}`)); got != "session:last-prompt" {
		t.Errorf("SessionKind = %s", got)
	}
}

func TestBehaviourIn(t *testing.T) {
	b := Behaviour{Name: "x", Since: "2.1.328"}
	for v, want := range map[string]bool{"2.1.327": false, "2.1.328": true, "2.1.332": true, "": true} {
		if b.In(v) != want {
			t.Errorf("In(%q) = %v, want %v", v, !want, want)
		}
	}
}

// dirFS is a directory listed once, as an embed.FS is: ReadDir hands out
// the list it holds.
type dirFS struct {
	fstest.MapFS
	entries []fs.DirEntry
}

func (d dirFS) ReadDir(name string) ([]fs.DirEntry, error) { return d.entries, nil }

// BenchmarkLoad: reading the release a process plays, the newest, as
// fakeclaude does by default, with the releases shipped today and with a
// hundred times as many. Only that file is read, and which one it is is a
// constant (Newest), so the time does not grow with the count.
func BenchmarkLoad(b *testing.B) {
	for _, n := range []int{15, 1500} {
		m := fstest.MapFS{}
		for i := 0; i < n; i++ {
			v := fmt.Sprintf("2.1.%d", 300+i)
			m["releases/"+v+".json"] = &fstest.MapFile{Data: []byte(`{"version":"` + v + `","messages":{"system/init":{"add":[{"key":"k","value":true}]}}}`)}
		}
		entries, _ := fs.ReadDir(m, "releases")
		fsys := dirFS{m, entries}
		b.Run(fmt.Sprintf("releases=%d", n), func(b *testing.B) {
			for b.Loop() {
				if _, err := loadFrom(fsys, "2.1.314"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestUnknownFlags(t *testing.T) {
	help := `Usage: claude [options] [command] [prompt]

Options:
  -d, --debug [filter]        Enable debug mode
  --verbose                   Override verbose mode
  --model <model>             Model for the current session
  --brand-new-thing <x>       Something a newer release added
  -h, --help                  Display help
`
	if got := UnknownFlags(help); len(got) != 1 || got[0] != "--brand-new-thing" {
		t.Errorf("UnknownFlags = %v, want [--brand-new-thing]", got)
	}
}
