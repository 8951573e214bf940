package record_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/askctl/askctl/claudecli"
	"github.com/askctl/askctl/fakeclaude/fakeapi"
	"github.com/askctl/askctl/internal/agent"
	"github.com/askctl/askctl/internal/record"
	"github.com/askctl/askctl/internal/replay"
	"github.com/askctl/askctl/internal/shape"
	"github.com/askctl/askctl/internal/testenv"
	"github.com/askctl/askctl/scenarios"
	"github.com/askctl/askctl/transcript"
	"github.com/tidwall/gjson"
)

func TestMain(m *testing.M) {
	testenv.Main(m)
}

var fake = agent.Fake{RunAs: "fakeclaude"}

func realClaude(t *testing.T) string { return testenv.RealClaude(t) }

// recordReal records the real CLI playing a built-in scenario through
// record.Run, the SDK side played by askctl's player, and returns the file.
func recordReal(t *testing.T, claude, name string) string {
	t.Helper()
	sc, err := scenarios.Builtin(name)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(fakeapi.New(sc, nil))
	defer srv.Close()
	dir := t.TempDir()
	out := filepath.Join(t.TempDir(), name+".txtar")
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var stderr bytes.Buffer
	type result struct {
		code int
		err  error
	}
	done := make(chan result, 1)
	go func() {
		code, err := record.Run(context.Background(), record.Options{Out: out, Command: append([]string{claude}, claudecli.SDKArgs...),
			Env: claudecli.RealEnv(srv.URL, dir), Dir: dir, Stdin: inR, Stdout: outW, Stderr: &stderr})
		outW.Close()
		inR.Close()
		done <- result{code, err}
	}()
	plan, err := replay.PlanFor(sc, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := replay.Play(context.Background(), plan, inW, outR, replay.PlayOptions{Timeout: 60 * time.Second}); err != nil {
		t.Fatalf("playing through the recorder: %v", err)
	}
	r := <-done
	if r.err != nil {
		t.Fatalf("record.Run: %v (stderr %s)", r.err, stderr.String())
	}
	if _, err := os.Stat(out + ".partial"); !os.IsNotExist(err) {
		t.Errorf("%s.partial is left behind", out)
	}
	return out
}

// TestRecordRealCLI re-records the fixture captures with askctl record and
// replays each recording against fakeclaude and the real CLI.
func TestRecordRealCLI(t *testing.T) {
	// The captures are of the base release: record that one.
	claude := testenv.RealClaudeOf(t, claudecli.Base)
	tests := []struct{ scenario, capture string }{
		{"ask-multi", "sdk-ask-allow.jsonl"},
		{"ask-skip", "sdk-ask-deny.jsonl"},
		{"ask-skip-interrupt", "sdk-ask-deny-interrupt.jsonl"},
	}
	for _, tt := range tests {
		t.Run(tt.scenario, func(t *testing.T) {
			file := recordReal(t, claude, tt.scenario)
			sc, err := scenarios.ParseFile(file)
			if err != nil {
				t.Fatalf("the recording does not parse: %v", err)
			}
			if sc.Origin != scenarios.Recorded || sc.CLIVersion != claudecli.Base {
				t.Errorf("header origin %q cli_version %q, want recorded and %s", sc.Origin, sc.CLIVersion, claudecli.Base)
			}
			// Same session as the fixture capture, both directions.
			captured, err := transcript.ReadFile(filepath.Join("../../testdata/captures/claude-code-2.1.330", tt.capture))
			if err != nil {
				t.Fatal(err)
			}
			for _, dir := range []string{transcript.FromCLI, transcript.ToCLI} {
				for _, d := range shape.Compare(replay.Shapes(captured, dir), replay.Shapes(sc.Wire, dir)) {
					t.Errorf("re-recorded %s differs from %s: %s", dir, tt.capture, d)
				}
			}
			// The recording replays with no difference against both agents.
			for _, ag := range []agent.Agent{fake, agent.Real{Claude: claude}} {
				rep := replay.Replay(context.Background(), sc, ag, replay.Options{Timeout: 30 * time.Second})
				if !rep.Match || rep.Mode != "recording" {
					t.Errorf("replay against %s: mode %s, error %q, diffs %v", ag.Name(), rep.Mode, rep.Error, rep.Diffs)
				}
			}
		})
	}
}

// TestRecordPrintModeMCP records the real CLI in print mode asking through
// an MCP ask_user server (askctl replay's scripted one), and replays the
// recording against both agents: a route "mcp" scenario whose mcp steps
// carry what the server returned.
func TestRecordPrintModeMCP(t *testing.T) {
	claude := realClaude(t)
	for _, name := range []string{"mcp-ask-multi", "mcp-ask-skip"} {
		t.Run(name, func(t *testing.T) {
			sc, err := scenarios.Builtin(name)
			if err != nil {
				t.Fatal(err)
			}
			api := httptest.NewServer(fakeapi.New(sc, nil))
			defer api.Close()
			script, err := replay.StartMCPScript(sc, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer script.Close()
			dir := t.TempDir()
			out := filepath.Join(t.TempDir(), name+".txtar")
			var stdout, stderr bytes.Buffer
			code, err := record.Run(context.Background(), record.Options{Out: out, Command: append([]string{claude}, agent.PrintArgs(sc, script.Config(sc))...),
				Env: claudecli.RealEnv(api.URL, dir), Dir: dir, Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr})
			if err != nil || code != 0 {
				t.Fatalf("record.Run: exit %d, %v (stderr %s)", code, err, stderr.String())
			}
			rec, err := scenarios.ParseFile(out)
			if err != nil {
				t.Fatalf("the recording does not parse: %v", err)
			}
			if rec.Route != scenarios.RouteMCP || rec.Steps[0].Prompt != sc.Steps[0].Prompt {
				t.Errorf("route %q, first step %+v: want route mcp and the -p prompt", rec.Route, rec.Steps[0])
			}
			var mcpStep *scenarios.Step
			for i := range rec.Steps {
				if rec.Steps[i].Kind == scenarios.KindMCP {
					mcpStep = &rec.Steps[i]
				}
			}
			if mcpStep == nil || mcpStep.MCP.Server != "askctl" || len(mcpStep.MCP.Result) == 0 {
				t.Fatalf("no mcp step with the server's result: %+v", rec.Steps)
			}
			t.Logf("recorded result: %s", mcpStep.MCP.Result)
			for _, ag := range []agent.Agent{fake, agent.Real{Claude: claude}} {
				rep := replay.Replay(context.Background(), rec, ag, replay.Options{Timeout: 30 * time.Second})
				if !rep.Match || rep.Mode != "recording" {
					t.Errorf("replay against %s: mode %s, error %q, diffs %v", ag.Name(), rep.Mode, rep.Error, rep.Diffs)
				}
			}
		})
	}
}

// TestEditedRecordingIsReported: a changed answer and a dropped message are
// reported at the message where the session parts from the recording.
func TestEditedRecordingIsReported(t *testing.T) {
	claude := realClaude(t)
	file := recordReal(t, claude, "ask-multi")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	wire := string(data[bytes.Index(data, []byte("-- wire.jsonl --")):])
	head := string(data[:bytes.Index(data, []byte("-- wire.jsonl --"))])
	var doneLine string
	for _, l := range strings.Split(wire, "\n") {
		if strings.Contains(l, `"from_cli"`) && strings.Contains(l, `"text":"Done."`) {
			doneLine = l + "\n"
		}
	}
	if doneLine == "" {
		t.Fatal("no assistant Done. line in the recording")
	}
	tests := []struct {
		name, edited, want string
	}{
		{"changed answer", head + strings.Replace(wire, `"answers":{"How should I format the output?":"Summary"`, `"answers":{"How should I format the output?":"Detailed"`, 1),
			`#5 from_cli user: content[0].content is "Your questions have been answered: \"How should I format the output?\"=\"Detailed\"`},
		{"dropped message", head + strings.Replace(wire, doneLine, "", 1), "#6: extra from_cli assistant"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.edited == string(data) {
				t.Fatal("the edit changed nothing")
			}
			sc, err := scenarios.Parse("edited.txtar", []byte(tt.edited))
			if err != nil {
				t.Fatal(err)
			}
			for _, ag := range []agent.Agent{fake, agent.Real{Claude: claude}} {
				rep := replay.Replay(context.Background(), sc, ag, replay.Options{Timeout: 30 * time.Second})
				var all []string
				for _, d := range rep.Diffs {
					all = append(all, d.String())
				}
				if rep.Match || !strings.Contains(strings.Join(all, "\n"), tt.want) {
					t.Errorf("%s agent: diffs\n%s\nwant one containing %s", ag.Name(), strings.Join(all, "\n"), tt.want)
				}
			}
		})
	}
}

func TestRedact(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"apiKeySource":"ANTHROPIC_API_KEY"}`, `{"apiKeySource":"ANTHROPIC_API_KEY"}`},
		{`{"headers":{"Authorization":"Bearer abc.def.ghi123"}}`, `{"headers":{"Authorization":"[REDACTED]"}}`},
		{`{"x":"key sk-ant-api03-abcdefghijklmnop"}`, `{"x":"key [REDACTED]"}`},
		{`{"api_key":"hunter2"}`, `{"api_key":"[REDACTED]"}`},
		{`{"env":{"GITHUB_TOKEN":"ghp_abcdefghijklmnopqrstuvwxyz0123"}}`, `{"env":{"GITHUB_TOKEN":"[REDACTED]"}}`},
		{`{"text":"use bearer tokens"}`, `{"text":"use bearer tokens"}`},
	}
	for _, tt := range tests {
		if got := string(record.Redact([]byte(tt.in))); got != tt.want {
			t.Errorf("Redact(%s) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

// TestRecordKeepsEverythingWhenTheCommandDiesEarly: a command that exits in
// the middle still leaves a complete recording of what passed.
func TestRecordKeepsEverythingWhenTheCommandDiesEarly(t *testing.T) {
	out := filepath.Join(t.TempDir(), "early.txtar")
	script := `read line; echo '{"type":"system","subtype":"init","claude_code_version":"9.9.9","cwd":"/x"}'; read line; echo '{"type":"assistant","message":{"content":[{"type":"text","text":"bye"}]}}'; exit 3`
	in := strings.NewReader(`{"type":"control_request","request_id":"req_1","request":{"subtype":"initialize"}}` + "\n" + `{"type":"user","message":{"role":"user","content":"hi"}}` + "\n")
	var stdout bytes.Buffer
	code, err := record.Run(context.Background(), record.Options{Out: out, Command: []string{"sh", "-c", script}, Stdin: in, Stdout: &stdout, Stderr: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	if code != 3 {
		t.Errorf("exit = %d, want the command's 3", code)
	}
	if !strings.Contains(stdout.String(), `"text":"bye"`) {
		t.Errorf("stdout was not passed through: %q", stdout.String())
	}
	sc, err := scenarios.ParseFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if sc.CLIVersion != "9.9.9" || len(sc.Wire) != 5 || len(sc.Steps) != 2 {
		t.Errorf("cli_version %q, %d wire records, %d steps; want 9.9.9, 5 (4 lines and the exit), 2", sc.CLIVersion, len(sc.Wire), len(sc.Steps))
	}
}

func TestRedactMore(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"x":"AKIAIOSFODNN7EXAMPLE"}`, `{"x":"[REDACTED]"}`},
		{`{"cmd":"curl -H 'Authorization: Basic dXNlcjpwYXNz' x"}`, `{"cmd":"curl -H 'Authorization: [REDACTED]' x"}`},
		{`{"log":"authorization: token abc123 then more text"}`, `{"log":"authorization: [REDACTED] then more text"}`},
		{`{"c":"key AKIAIOSFODNN7EXAMPLE Authorization: Bearer abcdefgh12 password=hunter2 in /tmp/rec"}`, `{"c":"key [REDACTED] Authorization: [REDACTED] password=[REDACTED] in /tmp/rec"}`},
		{`{"url":"https://h/db?user=a&password=hunter2&x=1"}`, `{"url":"https://h/db?user=a&password=[REDACTED]&x=1"}`},
		{`{"cmd":"mysql --password=s3cret -u root"}`, `{"cmd":"mysql --password=[REDACTED] -u root"}`},
		{`{"text":"the password field"}`, `{"text":"the password field"}`},
	}
	for _, tt := range tests {
		if got := string(record.Redact([]byte(tt.in))); got != tt.want {
			t.Errorf("Redact(%s) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

// TestRecordRefusesItself: recording a command that is askctl record itself
// (the same executable, or a recording inside a recording) stops at once.
func TestRecordRefusesItself(t *testing.T) {
	self, _ := os.Executable()
	out := filepath.Join(t.TempDir(), "x.txtar")
	for name, o := range map[string]record.Options{
		"same executable":       {Out: out, Command: []string{self}},
		"recording a recording": {Out: out, Command: []string{"true"}, Env: []string{record.EnvRecording + "=1"}},
	} {
		t.Run(name, func(t *testing.T) {
			o.Stdin, o.Stdout, o.Stderr = strings.NewReader(""), io.Discard, io.Discard
			if _, err := record.Run(context.Background(), o); !errors.Is(err, record.ErrRecordsItself) {
				t.Errorf("Run = %v, want ErrRecordsItself", err)
			}
		})
	}
}

// TestRecordAlwaysSaves: a session whose steps cannot be derived (no prompt
// at all; an answer keyed by a question never asked) is still written, with
// its wire section and the reason on stderr; the command's status is kept.
func TestRecordAlwaysSaves(t *testing.T) {
	tests := []struct {
		name, script, stdin, wantStderr string
		wantCode                        int
	}{
		{"nothing passed", "exit 0", "", "has no prompt", 0},
		{"command fails", "exit 7", "", "has no prompt", 7},
		{"answer keyed by no question",
			`read l; read l; echo '{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t1","name":"AskUserQuestion","input":{"questions":[{"question":"Q?","header":"H","options":[{"label":"A","description":"a"},{"label":"B","description":"b"}],"multiSelect":false}]}}]}}'; echo '{"type":"control_request","request_id":"r1","request":{"subtype":"can_use_tool","tool_name":"AskUserQuestion","input":{},"tool_use_id":"t1"}}'; read l; exit 0`,
			`{"type":"control_request","request_id":"req_1","request":{"subtype":"initialize"}}` + "\n" + `{"type":"user","message":{"role":"user","content":"hi"}}` + "\n" + "WAIT" + `{"type":"control_response","response":{"subtype":"success","request_id":"r1","response":{"behavior":"allow","updatedInput":{"answers":{"q_0":"A"}}}}}` + "\n",
			`user.answers: no question "q_0"`, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "s.txtar")
			var stderr bytes.Buffer
			// The bridge answers only after the request was asked ("WAIT").
			inR, inW := io.Pipe()
			go func() {
				before, after, _ := strings.Cut(tt.stdin, "WAIT")
				io.WriteString(inW, before)
				if after != "" {
					time.Sleep(300 * time.Millisecond)
					io.WriteString(inW, after)
				}
				inW.Close()
			}()
			code, err := record.Run(context.Background(), record.Options{Out: out, Command: []string{"sh", "-c", tt.script}, Stdin: inR, Stdout: io.Discard, Stderr: &stderr})
			if err != nil || code != tt.wantCode {
				t.Fatalf("Run = %d, %v; want %d, nil", code, err, tt.wantCode)
			}
			if !strings.Contains(stderr.String(), tt.wantStderr) || !strings.Contains(stderr.String(), "wire section") {
				t.Errorf("stderr %q, want the reason (%q) and that the wire is kept", stderr.String(), tt.wantStderr)
			}
			data, err := os.ReadFile(out)
			if err != nil {
				t.Fatalf("no file written: %v", err)
			}
			if !strings.Contains(string(data), "-- wire.jsonl --") || !strings.Contains(string(data), `"event":"exit"`) || !strings.Contains(string(data), "This recording does not replay") {
				t.Errorf("file lacks the wire section or the reason:\n%s", data)
			}
		})
	}
}

// TestRecordKeepsLinesGoRejects: a line nested deeper than Go's decoder
// allows passes through, is kept byte for byte, and recording goes on after
// it (in the partial file too).
func TestRecordKeepsLinesGoRejects(t *testing.T) {
	deep := `{"type":"assistant","x":` + strings.Repeat("[", 10050) + strings.Repeat("]", 10050) + "}"
	dir := t.TempDir()
	out := filepath.Join(dir, "deep.txtar")
	script := fmt.Sprintf(`read l; read l; printf '%%s\n' '%s'; echo '{"type":"result","subtype":"success"}'`, deep)
	in := `{"type":"control_request","request_id":"req_1","request":{"subtype":"initialize"}}` + "\n" + `{"type":"user","message":{"role":"user","content":"hi"}}` + "\n"
	var stdout bytes.Buffer
	code, err := record.Run(context.Background(), record.Options{Out: out, Command: []string{"sh", "-c", script}, Stdin: strings.NewReader(in), Stdout: &stdout, Stderr: io.Discard})
	if err != nil || code != 0 {
		t.Fatalf("Run = %d, %v", code, err)
	}
	if !strings.Contains(stdout.String(), deep+"\n") {
		t.Error("the deep line did not pass through")
	}
	sc, err := scenarios.ParseFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var raw, after bool
	for _, r := range sc.Wire {
		raw = raw || r.Raw == deep
		after = after || strings.Contains(string(r.Msg), `"result"`)
	}
	if !raw || !after {
		t.Errorf("deep line kept byte-exact: %v; the line after it recorded: %v", raw, after)
	}
}

// TestRecordHasNoLocalPaths: the working directory and home become
// placeholders in the header comment and the wire.
func TestRecordHasNoLocalPaths(t *testing.T) {
	dir := t.TempDir()
	home, _ := os.UserHomeDir()
	out := filepath.Join(dir, "p.txtar")
	script := `read l; read l; echo "{\"type\":\"system\",\"subtype\":\"init\",\"cwd\":\"$PWD\",\"home\":\"$HOME/.claude\",\"claude_code_version\":\"1\"}"; echo '{"type":"result","subtype":"success"}'`
	in := `{"type":"control_request","request_id":"req_1","request":{"subtype":"initialize"}}` + "\n" + `{"type":"user","message":{"role":"user","content":"hi"}}` + "\n"
	if _, err := record.Run(context.Background(), record.Options{Out: out, Dir: dir, Command: []string{"/bin/sh", "-c", script, dir}, Stdin: strings.NewReader(in), Stdout: io.Discard, Stderr: io.Discard}); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(out)
	for _, p := range []string{dir, home, "/bin/sh"} {
		if len(p) > 1 && strings.Contains(string(data), p) {
			t.Errorf("recording holds the local path %s:\n%s", p, data)
		}
	}
	for _, w := range []string{`"cwd":"${CWD}"`, `"home":"${HOME}/.claude"`, "from: sh -c"} {
		if !strings.Contains(string(data), w) {
			t.Errorf("recording lacks %s:\n%s", w, data)
		}
	}
}

func TestReplacePathBoundary(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "b.txtar")
	script := `read l; read l; echo "{\"type\":\"system\",\"subtype\":\"init\",\"cwd\":\"$PWD\",\"a\":\"${PWD}2/x\",\"b\":\"$PWD/y\",\"claude_code_version\":\"1\"}"; echo '{"type":"result","subtype":"success"}'`
	in := `{"type":"control_request","request_id":"req_1","request":{"subtype":"initialize"}}` + "\n" + `{"type":"user","message":{"role":"user","content":"hi"}}` + "\n"
	if _, err := record.Run(context.Background(), record.Options{Out: out, Dir: dir, Command: []string{"sh", "-c", script}, Stdin: strings.NewReader(in), Stdout: io.Discard, Stderr: io.Discard}); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(out)
	for _, w := range []string{`"cwd":"${CWD}"`, `"a":"` + dir + `2/x"`, `"b":"${CWD}/y"`} {
		if !strings.Contains(string(data), w) {
			t.Errorf("recording lacks %s", w)
		}
	}
}

// TestPrintModeStepsKeepServerMeta: a print-mode recording's mcp step keeps
// what the server returned, its _meta too (a current-protocol server's
// serverInfo, which the CLI writes into tool_use_result), so the scripted
// server can return it again.
func TestPrintModeStepsKeepServerMeta(t *testing.T) {
	wire := []string{
		`{"type":"system","subtype":"init","cwd":"/p","session_id":"s","tools":[],"mcp_servers":[{"name":"askctl","status":"connected","source":"dynamic"}],"claude_code_version":"2.1.330"}`,
		`{"type":"assistant","message":{"content":[{"type":"tool_use","id":"toolu_1","name":"mcp__askctl__ask_user","input":{"question":"Q?","options":[{"label":"A"},{"label":"B"}]}}]}}`,
		`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","content":"The user declined to answer: no","is_error":true,"tool_use_id":"toolu_1"}]},"tool_use_result":{"content":"Error: The user declined to answer: no","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"askctl","version":"1"}}}}`,
		`{"type":"assistant","message":{"content":[{"type":"text","text":"OK."}]}}`,
		`{"type":"result","subtype":"success","result":"OK."}`,
	}
	var recs []transcript.Record
	for _, w := range wire {
		recs = append(recs, transcript.Record{Dir: transcript.FromCLI, Msg: json.RawMessage(w)})
	}
	data, problem := record.Scenario("p", "p.txtar", []string{"claude", "-p", "Ask me.", "--output-format", "stream-json", "--verbose"}, recs)
	if problem != nil {
		t.Fatalf("%v\n%s", problem, data)
	}
	sc, err := scenarios.Parse("p.txtar", data)
	if err != nil {
		t.Fatal(err)
	}
	if sc.Route != scenarios.RouteMCP || sc.Steps[0].Prompt != "Ask me." {
		t.Errorf("route %q, prompt %q", sc.Route, sc.Steps[0].Prompt)
	}
	got := string(sc.Steps[1].MCP.Result)
	want := `{"content":[{"text":"The user declined to answer: no","type":"text"}],"isError":true,"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"askctl","version":"1"}}}`
	if got != want {
		t.Errorf("result\n%s\nwant\n%s", got, want)
	}
}

// TestRecordResumedSession records the real CLI resuming a session (--resume
// in the first session's directory, as a bridge resumes) and replays the
// recording against both agents.
func TestRecordResumedSession(t *testing.T) {
	claude := realClaude(t)
	sc, err := scenarios.Builtin("ask-single")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	first := replay.Replay(context.Background(), sc, agent.Real{Claude: claude}, replay.Options{Dir: dir, Timeout: 30 * time.Second})
	if !first.Match {
		t.Fatalf("the first session: %s %v", first.Error, first.Diffs)
	}
	var id string
	for _, r := range first.Records {
		if gjson.GetBytes(r.Msg, "subtype").String() == "init" {
			id = gjson.GetBytes(r.Msg, "session_id").String()
			break
		}
	}
	resumed, err := sc.Resumed()
	if err != nil {
		t.Fatal(err)
	}
	api := httptest.NewServer(fakeapi.New(resumed.Conversation(), nil))
	defer api.Close()
	out := filepath.Join(t.TempDir(), "resumed.txtar")
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var stderr bytes.Buffer
	done := make(chan error, 1)
	go func() {
		_, err := record.Run(context.Background(), record.Options{Out: out, Command: append(append([]string{claude}, claudecli.SDKArgs...), "--resume", id),
			Env: claudecli.RealEnv(api.URL, dir), Dir: dir, Stdin: inR, Stdout: outW, Stderr: &stderr})
		outW.Close()
		inR.Close()
		done <- err
	}()
	plan, err := replay.PlanFor(resumed.ResumePart(), false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := replay.Play(context.Background(), plan, inW, outR, replay.PlayOptions{Timeout: 60 * time.Second}); err != nil {
		t.Fatalf("playing through the recorder: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("record.Run: %v (stderr %s)", err, stderr.String())
	}
	rec, err := scenarios.ParseFile(out)
	if err != nil {
		t.Fatalf("the recording does not parse: %v", err)
	}
	for _, r := range rec.Wire {
		if got := gjson.GetBytes(r.Msg, "session_id"); r.Dir == transcript.FromCLI && got.Exists() && got.String() != id {
			t.Errorf("a recorded message of session %q, want the resumed %q", got, id)
			break
		}
	}
	for _, ag := range []agent.Agent{fake, agent.Real{Claude: claude}} {
		rep := replay.Replay(context.Background(), rec, ag, replay.Options{Timeout: 30 * time.Second})
		if !rep.Match || rep.Mode != "recording" {
			t.Errorf("replay against %s: mode %s, error %q, diffs %v", ag.Name(), rep.Mode, rep.Error, rep.Diffs)
		}
	}
}
