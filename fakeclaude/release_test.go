package fakeclaude

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/askctl/askctl/claudecli"
	"github.com/askctl/askctl/scenarios"
)

func TestPatchPaths(t *testing.T) {
	m := obj{{"type", "user"}, {"meta", []obj{{{"id", "a"}, {"pd", obj{{"d", "x"}}}}, {{"id", "b"}}}}, {"message", obj{{"role", "user"}}}}
	enc := func(v any) string { b, _ := encode(v); return string(b) }
	orig := enc(m)
	for _, c := range []struct {
		name string
		got  obj
		want string
	}{
		{"drop top", dropPath(m, []string{"type"}), `{"meta":[{"id":"a","pd":{"d":"x"}},{"id":"b"}],"message":{"role":"user"}}`},
		{"drop in each element", dropPath(m, []string{"meta[]", "pd"}), `{"type":"user","meta":[{"id":"a"},{"id":"b"}],"message":{"role":"user"}}`},
		{"drop nested", dropPath(m, []string{"message", "role"}), `{"type":"user","meta":[{"id":"a","pd":{"d":"x"}},{"id":"b"}],"message":{}}`},
		{"drop missing", dropPath(m, []string{"nope", "x"}), orig},
		{"add after", addPath(m, []string{"k"}, []string{"type"}, true), `{"type":"user","k":true,"meta":[{"id":"a","pd":{"d":"x"}},{"id":"b"}],"message":{"role":"user"}}`},
		{"add first", addPath(m, []string{"k"}, nil, 1), `{"k":1,"type":"user","meta":[{"id":"a","pd":{"d":"x"}},{"id":"b"}],"message":{"role":"user"}}`},
		{"add after a key not there: last", addPath(m, []string{"k"}, []string{"gone"}, 1), `{"type":"user","meta":[{"id":"a","pd":{"d":"x"}},{"id":"b"}],"message":{"role":"user"},"k":1}`},
		{"add in each element", addPath(m, []string{"meta[]", "n"}, []string{"id"}, 2), `{"type":"user","meta":[{"id":"a","n":2,"pd":{"d":"x"}},{"id":"b","n":2}],"message":{"role":"user"}}`},
		{"add under a missing parent: nothing", addPath(m, []string{"nope", "n"}, nil, 2), orig},
		{"add replaces", addPath(m, []string{"type"}, nil, "x"), `{"type":"x","meta":[{"id":"a","pd":{"d":"x"}},{"id":"b"}],"message":{"role":"user"}}`},
	} {
		if got := enc(c.got); got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, c.want)
		}
	}
	if enc(m) != orig {
		t.Errorf("patching changed the original: %s", enc(m))
	}
}

// TestPlaysARelease: a release file changes what fakeclaude writes, on
// stdout and in the session file, and --version says which it plays.
func TestPlaysARelease(t *testing.T) {
	dir := t.TempDir()
	rel := filepath.Join(dir, "2.1.999.json")
	os.WriteFile(rel, []byte(`{"version":"2.1.999","messages":{
		"system/init":{"drop":["served_by_anthropic"],"add":[{"key":"sandbox_enabled","after":"uuid","value":false}]},
		"session:user/prompt":{"add":[{"key":"rowSource","after":"sentAtMs","value":"local"},{"key":"sentAtMs","after":"promptSource","gen":"now-ms"}]}}}`), 0o644)
	env := map[string]string{claudecli.EnvCLIVersion: rel, "CLAUDE_CONFIG_DIR": filepath.Join(dir, "cfg")}
	getenv := func(k string) string { return env[k] }
	var out, errb bytes.Buffer
	if code := Command([]string{"--version"}, getenv, strings.NewReader(""), &out, &errb); code != 0 || out.String() != "2.1.999 (Claude Code)\n" {
		t.Errorf("--version: %d %q %q", code, out.String(), errb.String())
	}
	out.Reset()
	stdin := `{"type":"control_request","request_id":"r1","request":{"subtype":"initialize"}}` + "\n" +
		`{"type":"user","message":{"role":"user","content":"Set up storage for the app."},"parent_tool_use_id":null,"session_id":""}` + "\n"
	Command([]string{"--scenario", "ask-single", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose", "--permission-prompt-tool", "stdio"},
		func(k string) string {
			if k == EnvTimeout {
				return "2s"
			}
			return getenv(k)
		}, strings.NewReader(stdin), &out, &errb)
	var init map[string]json.RawMessage
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.Contains(l, `"subtype":"init"`) {
			json.Unmarshal([]byte(l), &init)
			if !strings.Contains(l, `"claude_code_version":"2.1.999"`) || !strings.Contains(l, `","sandbox_enabled":false,`) {
				t.Errorf("system/init does not play the release: %s", l)
			}
		}
	}
	if init == nil {
		t.Fatalf("no system/init in %s\nstderr %s", out.String(), errb.String())
	}
	if _, ok := init["served_by_anthropic"]; ok {
		t.Errorf("system/init keeps a dropped key: served_by_anthropic")
	}
	files, _ := filepath.Glob(filepath.Join(dir, "cfg", "projects", "*", "*.jsonl"))
	if len(files) != 1 {
		t.Fatalf("session files: %v", files)
	}
	b, _ := os.ReadFile(files[0])
	if !bytes.Contains(b, []byte(`"turnPosition"`)) || !bytes.Contains(b, []byte(`"promptSource":"sdk","sentAtMs":1`)) || !bytes.Contains(b, []byte(`,"rowSource":"local","turnOrigin"`)) || !bytes.Contains(b, []byte(`"version":"2.1.999"`)) {
		t.Errorf("the session file's prompt row does not play the release:\n%s", b)
	}
}

func TestUnknownRelease(t *testing.T) {
	var out, errb bytes.Buffer
	code := Command([]string{"--scenario", "ask-single", "--input-format", "stream-json", "--output-format", "stream-json"},
		func(k string) string {
			if k == claudecli.EnvCLIVersion {
				return "1.0.0"
			}
			return ""
		}, strings.NewReader(""), &out, &errb)
	if code != ExitUsage || !strings.Contains(errb.String(), "1.0.0 is not a learned release") || !strings.Contains(errb.String(), "askctl claude learn 1.0.0") {
		t.Errorf("exit %d, stderr %q", code, errb.String())
	}
}

// TestChooseRelease: the environment's release, else a recorded
// scenario's own, else the newest learned.
func TestChooseRelease(t *testing.T) {
	recorded := &scenarios.Scenario{Origin: scenarios.Recorded, CLIVersion: "2.1.325"}
	synthetic := &scenarios.Scenario{Origin: scenarios.Synthetic, CLIVersion: "2.1.325"}
	for _, c := range []struct {
		env  string
		sc   *scenarios.Scenario
		want string
	}{
		{"", recorded, "2.1.325"},
		{"", synthetic, claudecli.Newest()},
		{"", nil, claudecli.Newest()},
		{"2.1.318", recorded, "2.1.318"},
		{"latest", recorded, claudecli.Newest()},
		{"oldest", nil, claudecli.Oldest()},
	} {
		r, err := chooseRelease(func(k string) string {
			if k == claudecli.EnvCLIVersion {
				return c.env
			}
			return ""
		}, c.sc)
		if err != nil || r.Version != c.want {
			t.Errorf("env %q, scenario %+v: %v, %v; want %s", c.env, c.sc, r, err, c.want)
		}
	}
	if _, err := chooseRelease(func(string) string { return "" }, &scenarios.Scenario{Origin: scenarios.Recorded, CLIVersion: "2.0.0"}); err == nil || !strings.Contains(err.Error(), "askctl claude learn 2.0.0") {
		t.Errorf("a recording of an unknown release: %v, want the learn hint", err)
	}
}

// TestObjKindIsKind: the kind fakeclaude reads off a message it builds is
// claudecli.Kind of its encoding, for every message and row of sessions
// that ask, answer, withdraw, fail and resume.
func TestObjKindIsKind(t *testing.T) {
	seen, checked := map[string]bool{}, 0
	onEncode = func(m any) {
		o, ok := m.(obj)
		if !ok {
			return
		}
		b, err := encode(o)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := o.kind()
		if !ok {
			return // raw JSON inside: encodeAs classifies the encoding
		}
		checked++
		seen[got] = true
		if want := claudecli.Kind(b); got != want {
			t.Errorf("kind %q, Kind of the encoding %q: %s", got, want, b)
		}
	}
	defer func() { onEncode = nil }()
	dir := t.TempDir()
	env := map[string]string{"CLAUDE_CONFIG_DIR": dir, EnvTimeout: "2s", EnvLinger: "100ms"}
	for _, c := range []struct{ scenario, release, stdin string }{
		{"ask-single", "", `{"type":"control_request","request_id":"r1","request":{"subtype":"initialize"}}` + "\n" +
			`{"type":"user","message":{"role":"user","content":"Set up storage for the app."},"parent_tool_use_id":null,"session_id":""}` + "\n"},
		{"late-answer", "2.1.325", `{"type":"user","message":{"role":"user","content":"Set up storage for the app."},"parent_tool_use_id":null,"session_id":""}` + "\n"},
		{"other-tool", "", `{"type":"user","message":{"role":"user","content":"Clean the build."},"parent_tool_use_id":null,"session_id":""}` + "\n"},
	} {
		env[claudecli.EnvCLIVersion] = c.release
		var out, errb bytes.Buffer
		Command([]string{"--scenario", c.scenario, "--input-format", "stream-json", "--output-format", "stream-json", "--verbose", "--permission-prompt-tool", "stdio"},
			func(k string) string { return env[k] }, strings.NewReader(c.stdin), &out, &errb)
	}
	for _, k := range []string{"system/init", "control_response/initialize", "assistant/tool_use", "user/tool_result", "result/success", "user/prompt", "queue-operation/enqueue"} {
		if !seen[k] {
			t.Errorf("no %s message was checked (checked %d: %v)", k, checked, seen)
		}
	}
}
