package fakeclaude_test

import (
	"bytes"
	"context"

	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/askctl/askctl/claudecli"
	"github.com/askctl/askctl/claudecli/mcpclient"
	"github.com/askctl/askctl/fakeclaude"
	"github.com/askctl/askctl/internal/replay"
	"github.com/askctl/askctl/protocol"
	"github.com/askctl/askctl/scenarios"
	"github.com/askctl/askctl/transcript"
	"github.com/tidwall/gjson"
)

func newDecoder(r io.Reader) *protocol.Decoder { return protocol.NewDecoder(r) }

// session is a scripted SDK side talking to fakeclaude in-process.
type session struct {
	t      *testing.T
	in     *io.PipeWriter
	out    *protocol.Decoder
	done   chan fakeclaude.Outcome
	stderr *bytes.Buffer
	sent   []string // every line fakeclaude wrote, as read
}

func start(t *testing.T, scenario string, args []string, opts fakeclaude.Options) *session {
	t.Helper()
	sc, err := scenarios.Builtin(scenario)
	if err != nil {
		t.Fatal(err)
	}
	return startScenario(t, sc, args, opts)
}

func startScenario(t *testing.T, sc *scenarios.Scenario, args []string, opts fakeclaude.Options) *session {
	t.Helper()
	flags, err := fakeclaude.ParseArgs(args)
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &session{t: t, in: inW, out: protocol.NewDecoder(outR), done: make(chan fakeclaude.Outcome, 1), stderr: &bytes.Buffer{}}
	opts.Scenario, opts.Flags, opts.Stderr = sc, flags, s.stderr
	if opts.Home == "" {
		opts.Home = t.TempDir() // a getenv of the test's own has no CLAUDE_CONFIG_DIR: keep out of ~/.claude
	}
	if opts.Timeout == 0 {
		opts.Timeout = 5 * time.Second
	}
	if opts.Linger == 0 {
		opts.Linger = 2 * time.Second
	}
	if opts.MCP == nil {
		opts.MCP = mcpclient.Dialer{}
	}
	go func() {
		o := fakeclaude.Run(context.Background(), opts, inR, outW)
		outW.Close()
		inR.Close()
		s.done <- o
	}()
	t.Cleanup(func() { inW.Close() })
	return s
}

func (s *session) send(line string) {
	s.t.Helper()
	if _, err := io.WriteString(s.in, line+"\n"); err != nil {
		s.t.Fatalf("writing to fakeclaude: %v", err)
	}
}

func (s *session) init() {
	s.send(`{"type":"control_request","request_id":"req_1","request":{"subtype":"initialize","hooks":null}}`)
	s.send(`{"type":"user","message":{"role":"user","content":"go"},"parent_tool_use_id":null,"session_id":"default"}`)
}

// until reads lines until one of type/subtype typ ("control_request/can_use_tool",
// "result", …) and returns it.
func (s *session) until(typ string) gjson.Result {
	s.t.Helper()
	for {
		l, err := s.out.Next()
		if err != nil {
			s.t.Fatalf("waiting for %s: %v (read so far: %v)", typ, err, s.sent)
		}
		m := gjson.ParseBytes(l.Raw)
		sub := m.Get("subtype").String()
		if l.Type == "control_request" {
			sub = m.Get("request.subtype").String()
		}
		s.sent = append(s.sent, l.Type+"/"+sub)
		if typ == l.Type || typ == l.Type+"/"+sub {
			return m
		}
	}
}

// finish closes stdin, drains stdout, and returns the outcome.
func (s *session) finish() fakeclaude.Outcome {
	s.t.Helper()
	s.in.Close()
	for {
		l, err := s.out.Next()
		if err != nil {
			break
		}
		s.sent = append(s.sent, l.Type)
	}
	select {
	case o := <-s.done:
		return o
	case <-time.After(10 * time.Second):
		s.t.Fatal("fakeclaude did not exit")
	}
	return fakeclaude.Outcome{}
}

func respond(id, result string) string {
	return `{"type":"control_response","response":{"subtype":"success","request_id":"` + id + `","response":` + result + `}}`
}

var sdk = []string{"--output-format", "stream-json", "--verbose", "--input-format", "stream-json", "--permission-prompt-tool", "stdio"}

const dbQ = `[{"question":"Which database should I use?","header":"Database","options":[{"label":"Postgres","description":"Relational, runs as a server"},{"label":"SQLite","description":"Embedded, one file"}],"multiSelect":false}]`

func TestBehaviour(t *testing.T) {
	tests := []struct {
		name       string
		scenario   string
		args       []string
		opts       fakeclaude.Options
		drive      func(s *session)
		wantCode   int
		wantStderr string // substring; "" means stderr must be empty
	}{
		{
			name: "correct answer", scenario: "ask-single",
			drive: func(s *session) {
				s.init()
				id := s.until("control_request/can_use_tool").Get("request_id").String()
				s.send(respond(id, `{"behavior":"allow","updatedInput":{"questions":`+dbQ+`,"answers":{"Which database should I use?":"Postgres"}}}`))
				r := s.until("user")
				if got := r.Get("message.content.0.content").String(); got != `Your questions have been answered: "Which database should I use?"="Postgres". You can now continue with these answers in mind.` {
					s.t.Errorf("tool_result = %q", got)
				}
				s.until("result/success")
			},
			wantCode: fakeclaude.ExitOK,
		},
		{
			name: "answers keyed by index", scenario: "ask-single",
			drive: func(s *session) {
				s.init()
				id := s.until("control_request/can_use_tool").Get("request_id").String()
				s.send(respond(id, `{"behavior":"allow","updatedInput":{"questions":`+dbQ+`,"answers":{"q_0":"Postgres"}}}`))
				if got := s.until("user").Get("message.content.0.content").String(); got != protocol.AskNotAnsweredText {
					s.t.Errorf("tool_result = %q, want %q", got, protocol.AskNotAnsweredText)
				}
				s.until("result")
			},
			wantCode: fakeclaude.ExitExpectation, wantStderr: `no answer keyed "Which database should I use?" (answers are keyed by the full question text; got keys ["q_0"])`,
		},
		{
			name: "an extra answer keyed by no question", scenario: "ask-single",
			drive: func(s *session) {
				s.init()
				id := s.until("control_request/can_use_tool").Get("request_id").String()
				s.send(respond(id, `{"behavior":"allow","updatedInput":{"questions":`+dbQ+`,"answers":{"Which database should I use?":"Postgres","Database":"Postgres"}}}`))
				// The CLI ignores the extra key: the text names the real answer only.
				if got := s.until("user").Get("message.content.0.content").String(); got != `Your questions have been answered: "Which database should I use?"="Postgres". You can now continue with these answers in mind.` {
					s.t.Errorf("tool_result = %q", got)
				}
				s.until("result/success")
			},
			wantCode: fakeclaude.ExitExpectation, wantStderr: `fakeclaude: bridge: step 2: stdin line 3: answers keyed by no question asked: "Database"`,
		},
		{
			name: "empty allow", scenario: "ask-single",
			drive: func(s *session) {
				s.init()
				id := s.until("control_request/can_use_tool").Get("request_id").String()
				s.send(respond(id, `{"behavior":"allow","updatedInput":{}}`))
				if got := s.until("user").Get("message.content.0.content").String(); got != protocol.AskNotAnsweredText {
					s.t.Errorf("tool_result = %q", got)
				}
				s.until("result")
			},
			wantCode: fakeclaude.ExitExpectation, wantStderr: "no answer keyed",
		},
		{
			name: "multiSelect joined wrongly", scenario: "ask-multi",
			drive: func(s *session) {
				s.init()
				m := s.until("control_request/can_use_tool")
				qs := m.Get("request.input.questions").Raw
				s.send(respond(m.Get("request_id").String(), `{"behavior":"allow","updatedInput":{"questions":`+qs+`,"answers":{"How should I format the output?":"Summary","Which sections?":"Intro,Outro"}}}`))
				if got := s.until("user").Get("message.content.0.content").String(); !strings.HasPrefix(got, "The user answered: ") {
					s.t.Errorf("tool_result = %q, want the neutral wording", got)
				}
				s.until("result")
			},
			wantCode: fakeclaude.ExitExpectation, wantStderr: `answer to "Which sections?" is "Intro,Outro", want "Intro, Outro"`,
		},
		{
			name: "updatedInput without questions", scenario: "ask-single",
			drive: func(s *session) {
				s.init()
				id := s.until("control_request/can_use_tool").Get("request_id").String()
				s.send(respond(id, `{"behavior":"allow","updatedInput":{"answers":{"Which database should I use?":"Postgres"}}}`))
				if got := s.until("user").Get("message.content.0.content").String(); got != protocol.UpdatedInputInvalidText("AskUserQuestion", "The required parameter `questions` is missing") {
					s.t.Errorf("tool_result = %q", got)
				}
				s.until("result")
			},
			wantCode: fakeclaude.ExitProtocol, wantStderr: "updatedInput fails the AskUserQuestion schema: The required parameter `questions` is missing",
		},
		{
			name: "skip answered with empty allow instead of deny", scenario: "ask-skip",
			drive: func(s *session) {
				s.init()
				id := s.until("control_request/can_use_tool").Get("request_id").String()
				s.send(respond(id, `{"behavior":"allow"}`))
				s.until("result")
			},
			wantCode: fakeclaude.ExitExpectation, wantStderr: `behavior is "allow", want "deny"`,
		},
		{
			name: "invalid permission result", scenario: "ask-single",
			drive: func(s *session) {
				s.init()
				id := s.until("control_request/can_use_tool").Get("request_id").String()
				s.send(respond(id, `{"behavior":"maybe"}`))
				if got := s.until("user").Get("message.content.0.content").String(); got != protocol.InvalidPermissionResultText {
					s.t.Errorf("tool_result = %q", got)
				}
				s.until("result")
			},
			wantCode: fakeclaude.ExitProtocol, wantStderr: `field "response.response.behavior": want "allow" or "deny", got "maybe"`,
		},
		{
			name: "error response", scenario: "ask-single",
			drive: func(s *session) {
				s.init()
				id := s.until("control_request/can_use_tool").Get("request_id").String()
				s.send(`{"type":"control_response","response":{"subtype":"error","request_id":"` + id + `","error":"bridge exploded"}}`)
				if got := s.until("user").Get("message.content.0.content").String(); got != "Tool permission request failed: Error: bridge exploded" {
					s.t.Errorf("tool_result = %q", got)
				}
				s.until("result")
			},
			wantCode: fakeclaude.ExitExpectation, wantStderr: `got an error response ("bridge exploded")`,
		},
		{
			name: "malformed line", scenario: "ask-single",
			drive: func(s *session) {
				s.init()
				s.until("control_request/can_use_tool")
				s.send(`this is not json`)
			},
			wantCode: fakeclaude.ExitProtocol, wantStderr: "stdin line 3: invalid JSON",
		},
		{
			name: "unknown request id", scenario: "ask-single",
			drive: func(s *session) {
				s.init()
				id := s.until("control_request/can_use_tool").Get("request_id").String()
				s.send(respond("nope", `{"behavior":"deny","message":"x"}`))
				s.send(respond(id, `{"behavior":"allow","updatedInput":{"questions":`+dbQ+`,"answers":{"Which database should I use?":"Postgres"}}}`))
				s.until("result")
			},
			wantCode: fakeclaude.ExitProtocol, wantStderr: `control_response for unknown request_id "nope"`,
		},
		{
			name: "two answers to one request", scenario: "ask-single",
			drive: func(s *session) {
				s.init()
				id := s.until("control_request/can_use_tool").Get("request_id").String()
				ok := respond(id, `{"behavior":"allow","updatedInput":{"questions":`+dbQ+`,"answers":{"Which database should I use?":"Postgres"}}}`)
				s.send(ok)
				s.send(ok)
				s.until("result")
			},
			wantCode: fakeclaude.ExitProtocol, wantStderr: "second control_response for request",
		},
		{
			name: "stdin closed while pending", scenario: "ask-single",
			drive: func(s *session) {
				s.init()
				s.until("control_request/can_use_tool")
				s.in.Close()
				s.until("control_cancel_request")
				if got := s.until("user").Get("message.content.0.content").String(); got != protocol.DenyInterruptText {
					s.t.Errorf("tool_result = %q", got)
				}
				s.until("result/error_during_execution")
			},
			wantCode: fakeclaude.ExitEarlyEOF, wantStderr: "stdin closed while AskUserQuestion request",
		},
		{
			name: "stdin closed before the prompt", scenario: "ask-single",
			drive: func(s *session) {
				s.send(`{"type":"control_request","request_id":"req_1","request":{"subtype":"initialize"}}`)
				s.until("control_response")
			},
			wantCode: fakeclaude.ExitEarlyEOF, wantStderr: "stdin closed before the prompt of turn 1",
		},
		{
			name: "no answer in time", scenario: "ask-single", opts: fakeclaude.Options{Timeout: 200 * time.Millisecond},
			drive: func(s *session) {
				s.init()
				s.until("control_request/can_use_tool")
				if o := <-s.done; o.Code != fakeclaude.ExitTimeout {
					s.t.Errorf("exit = %d, want %d", o.Code, fakeclaude.ExitTimeout)
				}
				s.done <- fakeclaude.Outcome{Code: fakeclaude.ExitTimeout}
			},
			wantCode: fakeclaude.ExitTimeout, wantStderr: "no answer to AskUserQuestion request",
		},
		{
			name: "no permission prompt surface", scenario: "ask-single", args: []string{"--output-format", "stream-json", "--verbose", "--input-format", "stream-json"},
			drive: func(s *session) {
				s.init()
				if init := s.until("system/init"); strings.Contains(init.Get("tools").Raw, "AskUserQuestion") {
					s.t.Errorf("tools offer AskUserQuestion without a permission prompt surface")
				}
				if got := s.until("user").Get("message.content.0.content").String(); got != protocol.AskUnavailableText {
					s.t.Errorf("tool_result = %q", got)
				}
				s.until("result")
			},
			wantCode: fakeclaude.ExitExpectation, wantStderr: "AskUserQuestion is not offered",
		},
		{
			name: "interrupt while pending", scenario: "ask-single",
			drive: func(s *session) {
				s.init()
				id := s.until("control_request/can_use_tool").Get("request_id").String()
				s.send(`{"type":"control_request","request_id":"req_2","request":{"subtype":"interrupt"}}`)
				if got := s.until("control_cancel_request").Get("request_id").String(); got != id {
					s.t.Errorf("cancelled %q, want %q", got, id)
				}
				if got := s.until("control_response").Get("response.request_id").String(); got != "req_2" {
					s.t.Errorf("interrupt answered as %q", got)
				}
				r := s.until("result/error_during_execution")
				if r.Get("terminal_reason").String() != "aborted_tools" || r.Get("permission_denials.#").Int() != 1 {
					s.t.Errorf("result = %s", r.Raw)
				}
			},
			wantCode: fakeclaude.ExitExpectation, wantStderr: "interrupted the turn instead of answering",
		},
		{
			name: "cancel-pending: late deny tolerated", scenario: "cancel-pending",
			drive: func(s *session) {
				s.init()
				id := s.until("control_request/can_use_tool").Get("request_id").String()
				if got := s.until("control_cancel_request").Get("request_id").String(); got != id {
					s.t.Errorf("cancelled %q, want %q", got, id)
				}
				s.send(respond(id, `{"behavior":"deny","message":"Permission request cancelled"}`))
				s.until("result/error_during_execution")
			},
			wantCode: fakeclaude.ExitErrorResult,
		},
		{
			name: "cancel-pending: late allow rejected", scenario: "cancel-pending",
			drive: func(s *session) {
				s.init()
				id := s.until("control_request/can_use_tool").Get("request_id").String()
				s.until("result/error_during_execution")
				s.send(respond(id, `{"behavior":"allow","updatedInput":{"questions":`+dbQ+`,"answers":{"Which database should I use?":"Postgres"}}}`))
			},
			wantCode: fakeclaude.ExitProtocol, wantStderr: "after it was cancelled: late answers must not reach the agent",
		},
		{
			name: "exit-pending", scenario: "exit-pending",
			drive: func(s *session) {
				s.init()
				s.until("control_request/can_use_tool")
				if _, err := s.out.Next(); err != io.EOF {
					s.t.Errorf("after exit_after: %v, want EOF on stdout", err)
				}
			},
			wantCode: 1,
		},
		{
			name: "unscripted second prompt", scenario: "ask-skip",
			drive: func(s *session) {
				s.init()
				id := s.until("control_request/can_use_tool").Get("request_id").String()
				s.send(respond(id, `{"behavior":"deny","message":"skipped"}`))
				s.until("result/success")
				s.send(`{"type":"user","message":{"role":"user","content":"again"},"parent_tool_use_id":null,"session_id":"default"}`)
				if r := s.until("result"); r.Get("errors.0").String() == "" {
					s.t.Errorf("unscripted turn result has no errors[]: %s", r.Raw)
				}
			},
			wantCode: fakeclaude.ExitExpectation, wantStderr: "unscripted prompt on stdin line 4",
		},
		{
			name: "bad flags", scenario: "ask-single", args: []string{"--input-format", "stream-json", "--output-format", "stream-json"},
			drive:    func(s *session) {},
			wantCode: fakeclaude.ExitUsage, wantStderr: "requires --verbose",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := tt.args
			if args == nil {
				args = sdk
			}
			s := start(t, tt.scenario, args, tt.opts)
			tt.drive(s)
			o := s.finish()
			if o.Code != tt.wantCode {
				t.Errorf("exit = %d, want %d; failures: %v", o.Code, tt.wantCode, o.Failures)
			}
			stderr := s.stderr.String()
			if tt.wantStderr == "" && stderr != "" {
				t.Errorf("stderr = %q, want none", stderr)
			}
			if !strings.Contains(stderr, tt.wantStderr) {
				t.Errorf("stderr = %q, want it to contain %q", stderr, tt.wantStderr)
			}
		})
	}
}

// TestBuiltinScenariosPlayThrough plays every built-in scenario against
// fakeclaude with the SDK side the scenario itself describes.
func TestBuiltinScenariosPlayThrough(t *testing.T) {
	want := map[string]int{"ask-skip-interrupt": 1, "cancel-pending": 1, "exit-pending": 1, "late-answer": 1}
	for _, name := range scenarios.Names() {
		t.Run(name, func(t *testing.T) {
			sc, err := scenarios.Builtin(name)
			if err != nil {
				t.Fatal(err)
			}
			plan, err := replay.PlanFor(sc, true)
			if err != nil {
				t.Fatal(err)
			}
			if sc.Route == scenarios.RouteMCP {
				recs, out := playPrint(t, sc)
				if out.Code != 0 {
					t.Errorf("exit = %d, want 0; failures: %v", out.Code, out.Failures)
				}
				if d := replay.CheckSteps(replay.Expected(sc, ""), replay.Shapes(recs, transcript.FromCLI)); len(d) > 0 {
					t.Errorf("differs from the steps: %v", d)
				}
				return
			}
			recs, out := play(t, sc, plan, sdkFlags)
			if out.Code != want[name] {
				t.Errorf("exit = %d, want %d; failures: %v", out.Code, want[name], out.Failures)
			}
			asked := 0
			for _, r := range recs {
				if r.Dir == transcript.FromCLI && gjson.GetBytes(r.Msg, "request.subtype").String() == "can_use_tool" {
					asked++
				}
			}
			wantAsked := 0
			for _, st := range sc.Steps {
				if st.Kind == scenarios.KindAsk || st.Kind == scenarios.KindTool {
					wantAsked++
				}
			}
			if asked != wantAsked {
				t.Errorf("%d can_use_tool requests, want %d", asked, wantAsked)
			}
		})
	}
}

// TestExpectMatch checks gjson-path expectations on the permission result.
func TestExpectMatch(t *testing.T) {
	const tmpl = `-- scenario.json --
{"name":"match"}
-- steps.jsonl --
{"prompt":"go"}
{"ask":{"questions":` + dbQ + `},"expect":{"match":{"behavior":"allow","updatedInput.answers.Which database should I use\\?":WANT,"updatedInput.questions.#":1}}}
{"text":"ok"}
`
	tests := []struct {
		name, want string
		code       int
		stderr     string
	}{
		{"holds", `"Postgres"`, fakeclaude.ExitOK, ""},
		{"breaks", `"SQLite"`, fakeclaude.ExitExpectation, `match updatedInput.answers.Which database should I use\?: got "Postgres", want "SQLite"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc, err := scenarios.Parse("match.txtar", []byte(strings.Replace(tmpl, "WANT", tt.want, 1)))
			if err != nil {
				t.Fatal(err)
			}
			s := startScenario(t, sc, sdk, fakeclaude.Options{})
			s.init()
			id := s.until("control_request/can_use_tool").Get("request_id").String()
			s.send(respond(id, `{"behavior":"allow","updatedInput":{"questions":`+dbQ+`,"answers":{"Which database should I use?":"Postgres"}}}`))
			s.until("result")
			if o := s.finish(); o.Code != tt.code {
				t.Errorf("exit %d, want %d: %v", o.Code, tt.code, o.Failures)
			}
			if !strings.Contains(s.stderr.String(), tt.stderr) {
				t.Errorf("stderr %q, want %q", s.stderr.String(), tt.stderr)
			}
		})
	}
}

// TestResume: with --resume ID fakeclaude keeps ID as its session id,
// appends to the session's file (the new prompt's parentUuid is the old
// conversation's leaf) and plays the scenario's resume.jsonl, checking the
// prompt, or its steps again when it has none; a session with no file is
// refused as the real CLI refuses it.
func TestResume(t *testing.T) {
	const id = "0f6c8e2e-1111-4222-8333-444455556666"
	const leaf = "11111111-2222-4333-8444-555555555555"
	tests := []struct {
		name, scenario, prompt string
		noFile                 bool
		wantCode               int
		wantStderr             string
	}{
		{"resumed with the answer", "late-answer", "You asked: Which database should I use? The user answered: Postgres.", false, fakeclaude.ExitOK, ""},
		{"resumed without it", "late-answer", "Hello again.", false, fakeclaude.ExitExpectation, `the prompt "Hello again." does not match`},
		{"steps again", "ask-single", "Set up storage for the app.", false, fakeclaude.ExitOK, ""},
		{"no such session", "ask-single", "x", true, fakeclaude.ExitErrorResult, "No conversation found with session ID: " + id},
		{"not a session id", "ask-single", "x", true, fakeclaude.ExitErrorResult, `Provided value "../../x" is not a UUID`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, cwd := t.TempDir(), t.TempDir()
			file := claudecli.SessionFile(cfg, cwd, id)
			if err := os.WriteFile(filepath.Join(cfg, "x.jsonl"), []byte("untouched\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if !tt.noFile {
				if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
					t.Fatal(err)
				}
				row := `{"parentUuid":null,"type":"user","message":{"role":"user","content":"first"},"uuid":"` + leaf + `","promptId":"p","turnPosition":{"promptIndex":0,"turnIndex":1},"sessionId":"` + id + `"}` + "\n"
				if err := os.WriteFile(file, []byte(row), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			env := map[string]string{claudecli.EnvConfigDir: cfg}
			arg := id
			if tt.name == "not a session id" {
				arg = "../../x"
			}
			s := start(t, tt.scenario, append(append([]string(nil), sdk...), "--resume", arg), fakeclaude.Options{Cwd: cwd, Getenv: func(k string) string { return env[k] }})
			if tt.noFile {
				// The CLI's error result comes on stdout too.
				if r := s.until("result"); !strings.Contains(r.Get("errors.0").String(), tt.wantStderr) || r.Get("subtype").String() != "error_during_execution" {
					t.Errorf("result %s", r.Raw)
				}
			}
			if !tt.noFile {
				s.send(`{"type":"control_request","request_id":"req_1","request":{"subtype":"initialize","hooks":null}}`)
				s.send(`{"type":"user","message":{"role":"user","content":` + strconv.Quote(tt.prompt) + `},"parent_tool_use_id":null,"session_id":"default"}`)
				init := s.until("system/init")
				if got := init.Get("session_id").String(); got != id {
					t.Errorf("session_id = %q, want the resumed one", got)
				}
				if tt.scenario == "ask-single" {
					r := s.until("control_request")
					s.send(`{"type":"control_response","response":{"subtype":"success","request_id":"` + r.Get("request_id").String() + `","response":{"behavior":"allow","updatedInput":{"questions":` + r.Get("request.input.questions").Raw + `,"answers":{"Which database should I use?":"Postgres"}}}}}`)
				}
				s.until("result")
			}
			o := s.finish()
			if o.Code != tt.wantCode || !strings.Contains(s.stderr.String(), tt.wantStderr) {
				t.Errorf("exit %d, stderr %q; want %d and %q", o.Code, s.stderr.String(), tt.wantCode, tt.wantStderr)
			}
			if tt.noFile {
				if _, err := os.Stat(file); err == nil {
					t.Errorf("a refused --resume wrote %s", file)
				}
				// "../../x" must not reach the file it names.
				if b, err := os.ReadFile(filepath.Join(cfg, "x.jsonl")); err != nil || string(b) != "untouched\n" {
					t.Errorf("%s: %q, %v; want it untouched", filepath.Join(cfg, "x.jsonl"), b, err)
				}
				return
			}
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			rows := strings.Split(strings.TrimSpace(string(data)), "\n")
			var prompt gjson.Result
			for _, r := range rows[1:] {
				if g := gjson.Parse(r); g.Get("type").String() == "user" && g.Get("promptId").Exists() && !g.Get("toolUseResult").Exists() {
					prompt = g
					break
				}
			}
			// The old conversation ended on the user's side: the CLI's
			// synthetic reply comes first, then the prompt.
			var synthetic gjson.Result
			for _, r := range rows[1:] {
				if g := gjson.Parse(r); g.Get("message.model").String() == "<synthetic>" {
					synthetic = g
					break
				}
			}
			if synthetic.Get("message.model").String() != "<synthetic>" || synthetic.Get("parentUuid").String() != leaf {
				t.Errorf("the first resumed row %s: want the synthetic assistant reply to %s", synthetic.Raw, leaf)
			}
			if prompt.Get("parentUuid").String() != synthetic.Get("uuid").String() || prompt.Get("sessionId").String() != id || prompt.Get("turnPosition.promptIndex").Int() != 1 {
				t.Errorf("the resumed prompt row %s: want parentUuid %s (the synthetic reply), sessionId %s, promptIndex 1", prompt.Raw, synthetic.Get("uuid"), id)
			}
		})
	}
}

// TestContinue: --continue resumes the directory's latest session, and
// starts a new one when there is none, as the real CLI does.
func TestContinue(t *testing.T) {
	cfg, cwd := t.TempDir(), t.TempDir()
	env := map[string]string{claudecli.EnvConfigDir: cfg}
	opts := fakeclaude.Options{Cwd: cwd, Getenv: func(k string) string { return env[k] }}
	// None yet: a new session, as the CLI starts.
	s := start(t, "ask-single", append(append([]string(nil), sdk...), "--continue"), opts)
	s.send(`{"type":"control_request","request_id":"req_1","request":{"subtype":"initialize","hooks":null}}`)
	s.send(`{"type":"user","message":{"role":"user","content":"hi"},"parent_tool_use_id":null,"session_id":"default"}`)
	newID := s.until("system/init").Get("session_id").String()
	s.finish()
	files, _ := filepath.Glob(filepath.Join(claudecli.ProjectDir(cfg, cwd), "*.jsonl"))
	if len(files) != 1 || filepath.Base(files[0]) != newID+".jsonl" {
		t.Errorf("--continue with no session wrote %v, want the new session %s's file", files, newID)
	}
	for _, f := range files {
		os.Remove(f)
	}
	dir := claudecli.ProjectDir(cfg, cwd)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i, id := range []string{"11111111-1111-4111-8111-111111111111", "22222222-2222-4222-8222-222222222222"} {
		path := filepath.Join(dir, id+".jsonl")
		if err := os.WriteFile(path, []byte(`{"type":"user","uuid":"u`+strconv.Itoa(i)+`","promptId":"p","message":{"role":"user","content":"x"}}`+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		at := time.Now().Add(time.Duration(i-2) * time.Minute)
		if err := os.Chtimes(path, at, at); err != nil {
			t.Fatal(err)
		}
	}
	s = start(t, "ask-single", append(append([]string(nil), sdk...), "--continue"), opts)
	s.send(`{"type":"control_request","request_id":"req_1","request":{"subtype":"initialize","hooks":null}}`)
	s.send(`{"type":"user","message":{"role":"user","content":"again"},"parent_tool_use_id":null,"session_id":"default"}`)
	if got := s.until("system/init").Get("session_id").String(); got != "22222222-2222-4222-8222-222222222222" {
		t.Errorf("--continue resumed %q, want the latest session", got)
	}
	s.finish()
}

// TestSessionIDNotAPath: a session id that is not a UUID (from a harness, or
// --session-id) names no file: fakeclaude takes a new one, and writes only
// in the config directory.
func TestSessionIDNotAPath(t *testing.T) {
	cfg, cwd := t.TempDir(), t.TempDir()
	env := map[string]string{claudecli.EnvConfigDir: filepath.Join(cfg, "config")}
	s := start(t, "ask-single", sdk, fakeclaude.Options{Cwd: cwd, SessionID: "../../../evil", Getenv: func(k string) string { return env[k] }})
	s.send(`{"type":"control_request","request_id":"req_1","request":{"subtype":"initialize","hooks":null}}`)
	s.send(`{"type":"user","message":{"role":"user","content":"hi"},"parent_tool_use_id":null,"session_id":"default"}`)
	id := s.until("system/init").Get("session_id").String()
	s.finish()
	if strings.Contains(id, "/") || len(id) != 36 {
		t.Errorf("session id %q: want a new UUID", id)
	}
	var outside []string
	filepath.WalkDir(cfg, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && !strings.HasPrefix(p, filepath.Join(cfg, "config")+string(filepath.Separator)) {
			outside = append(outside, p)
		}
		return nil
	})
	if len(outside) > 0 {
		t.Errorf("files written outside the config directory: %v", outside)
	}
}

// TestResumeWhere: as the real CLI, --resume finds a session of another
// directory and appends to its file; --fork-session copies the conversation
// into a new session's file; an empty id, an unreadable file, or an unknown
// id with the file switched off are refused.
func TestResumeWhere(t *testing.T) {
	const id = "0f6c8e2e-1111-4222-8333-444455556666"
	row := `{"parentUuid":null,"type":"user","message":{"role":"user","content":"first"},"uuid":"11111111-2222-4333-8444-555555555555","promptId":"p","turnPosition":{"promptIndex":0,"turnIndex":1},"sessionId":"` + id + `"}` + "\n"
	setup := func(t *testing.T) (cfg, other, file string, opts fakeclaude.Options) {
		cfg, cwd, other := t.TempDir(), t.TempDir(), t.TempDir()
		file = claudecli.SessionFile(cfg, other, id)
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, []byte(row), 0o644); err != nil {
			t.Fatal(err)
		}
		env := map[string]string{claudecli.EnvConfigDir: cfg}
		return cfg, cwd, file, fakeclaude.Options{Cwd: cwd, Getenv: func(k string) string { return env[k] }}
	}
	play := func(t *testing.T, s *session) string {
		s.send(`{"type":"control_request","request_id":"req_1","request":{"subtype":"initialize","hooks":null}}`)
		s.send(`{"type":"user","message":{"role":"user","content":"Set up storage for the app."},"parent_tool_use_id":null,"session_id":"default"}`)
		id := s.until("system/init").Get("session_id").String()
		r := s.until("control_request")
		s.send(`{"type":"control_response","response":{"subtype":"success","request_id":"` + r.Get("request_id").String() + `","response":{"behavior":"allow","updatedInput":{"questions":` + r.Get("request.input.questions").Raw + `,"answers":{"Which database should I use?":"Postgres"}}}}}`)
		s.until("result")
		if o := s.finish(); o.Code != 0 {
			t.Errorf("exit %d: %s", o.Code, s.stderr.String())
		}
		return id
	}
	t.Run("another directory", func(t *testing.T) {
		cfg, cwd, file, opts := setup(t)
		if got := play(t, start(t, "ask-single", append(append([]string(nil), sdk...), "--resume", id), opts)); got != id {
			t.Errorf("session %s, want %s", got, id)
		}
		data, _ := os.ReadFile(file)
		if n := strings.Count(string(data), "\n"); n < 5 {
			t.Errorf("the original file has %d rows; want the resumed session appended", n)
		}
		if m, _ := filepath.Glob(filepath.Join(claudecli.ProjectDir(cfg, cwd), "*")); len(m) > 0 {
			t.Errorf("a new file in this directory's project: %v", m)
		}
	})
	t.Run("fork", func(t *testing.T) {
		cfg, cwd, _, opts := setup(t)
		got := play(t, start(t, "ask-single", append(append([]string(nil), sdk...), "--resume", id, "--fork-session"), opts))
		if got == id {
			t.Fatalf("a fork keeps the session id %s", id)
		}
		data, err := os.ReadFile(claudecli.SessionFile(cfg, cwd, got))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), `"content":"first"`) || strings.Contains(string(data), id) {
			t.Errorf("the fork's file does not hold the conversation under its own id:\n%s", data)
		}
	})
	for name, args := range map[string][]string{
		"empty id":       {"--resume", ""},
		"unreadable":     {"--resume", id},
		"no file at all": {"--resume", "99999999-1111-4222-8333-444455556666", "--no-session-persistence"},
	} {
		t.Run(name, func(t *testing.T) {
			_, _, file, opts := setup(t)
			if name == "unreadable" {
				// A file even root cannot read: a directory in its place.
				if err := os.Remove(file); err != nil {
					t.Fatal(err)
				}
				if err := os.Mkdir(file, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			s := start(t, "ask-single", append(append([]string(nil), sdk...), args...), opts)
			if o := s.finish(); o.Code != fakeclaude.ExitErrorResult {
				t.Errorf("exit %d, stderr %q: want 1, refused", o.Code, s.stderr.String())
			}
		})
	}
}

// TestProjectDir: the project directory is named as the real CLI 2.1.330
// names it (each checked against the CLI): every character that is not a
// letter or digit becomes "-" (two for one beyond the BMP), and a name over
// 200 characters is cut with a hash of the path.
func TestProjectDir(t *testing.T) {
	long := "/tmp/" + strings.Repeat("b", 120) + "/" + strings.Repeat("c", 120)
	for _, tt := range []struct{ cwd, want string }{
		{"/tmp/a b", "-tmp-a-b"},
		{"/tmp/t10 ü 😀", "-tmp-t10---" + "--"},
		{long, "-tmp-" + strings.Repeat("b", 120) + "-" + strings.Repeat("c", 74) + "-wt7w14"},
	} {
		if got := filepath.Base(claudecli.ProjectDir("/c", tt.cwd)); got != tt.want {
			t.Errorf("%q: %q, want %q", tt.cwd, got, tt.want)
		}
	}
}

// TestMCPToolTimeoutEndsEveryCall: a scenario's cancel_after on an mcp step
// is the CLI's tool timeout, which ends every call of the session with no
// result by then, an answered one too (the real CLI's MCP_TOOL_TIMEOUT),
// not only the step it is written on.
func TestMCPToolTimeoutEndsEveryCall(t *testing.T) {
	sc, err := scenarios.Parse("t.txtar", []byte(`-- scenario.json --
{"name":"t","route":"mcp"}
-- steps.jsonl --
{"prompt":"Ask me."}
{"mcp":{"server":"askctl","input":{"question":"First?"}},"user":{"silent":true},"cancel_after":"1s"}
{"mcp":{"server":"askctl","input":{"question":"Second?"}},"user":{"answers":{"Second?":"late"},"after":"3s"}}
{"text":"Done."}
`))
	if err != nil {
		t.Fatal(err)
	}
	recs, out := playPrint(t, sc)
	if out.Code != fakeclaude.ExitExpectation {
		t.Errorf("exit = %d, want %d (the answered call was ended by the tool timeout); failures: %v", out.Code, fakeclaude.ExitExpectation, out.Failures)
	}
	want := claudecli.MCPToolTimedOut("askctl", "ask_user", time.Second)
	ended := 0
	for _, r := range recs {
		for _, c := range gjson.GetBytes(r.Msg, "message.content").Array() {
			if c.Get("type").String() == "tool_result" && strings.Contains(c.Get("content").String(), want) {
				ended++
			}
		}
	}
	if ended != 2 {
		t.Errorf("%d tool_results say %q, want 2 (both calls)", ended, want)
	}
}
