package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/askctl/askctl/bridge"
	"github.com/askctl/askctl/bridgeapi"
	"github.com/askctl/askctl/fakeclaude"
	"github.com/askctl/askctl/fakeclaude/fakeapi"
	"github.com/askctl/askctl/internal/agent"
	"github.com/askctl/askctl/internal/testenv"
	"github.com/askctl/askctl/profile"
	"github.com/askctl/askctl/scenarios"
	"github.com/askctl/askctl/transcript"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tidwall/gjson"
)

// served is askctl serve running as a real process (this test binary as
// askctl, its sessions this test binary as fakeclaude), on loopback.
type served struct {
	t     *testing.T
	state string
	trans string // fakeclaude transcripts, one per agent process
	cmd   *exec.Cmd
	log   *lockedBuffer
	args  []string
	env   []string // added to the next start's environment only
	// history is what every bridge started so far wrote.
	history *lockedBuffer
	// nofile, when set, is the bridge's open-file limit.
	nofile int
	// noWait: the next start does not wait for the bridge to be up (it
	// may die first).
	noWait bool
}

func serve(t *testing.T, args ...string) *served {
	t.Helper()
	s := &served{t: t, state: t.TempDir(), trans: t.TempDir(), args: args}
	s.start()
	t.Cleanup(func() {
		if s.cmd.ProcessState == nil {
			s.cmd.Process.Signal(syscall.SIGTERM)
			s.cmd.Wait()
		}
	})
	return s
}

func (s *served) start() {
	s.t.Helper()
	self, _ := os.Executable()
	s.log = &lockedBuffer{}
	args := append([]string{"serve", "--claude", "fakeclaude", "--addr", "127.0.0.1:0"}, s.args...)
	s.cmd = exec.Command(self, args...)
	if s.nofile > 0 {
		// The open-file limit, soft and hard (a Go program raises its soft
		// limit to the hard one as it starts).
		s.cmd = exec.Command("sh", append([]string{"-c", fmt.Sprintf(`ulimit -n %d && exec "$@"`, s.nofile), "sh", self}, args...)...)
	}
	s.cmd.Env = append(os.Environ(), envTestAsAskctl+"=1", bridgeapi.EnvStateDir+"="+s.state)
	s.cmd.Env = append(s.cmd.Env, fakeclaude.Env{Transcript: filepath.Join(s.trans, "t-{pid}.jsonl"), Timeout: 30 * time.Second, Linger: 2 * time.Second}.Environ()...)
	s.cmd.Env, s.env = append(s.cmd.Env, s.env...), nil
	if s.history == nil {
		s.history = &lockedBuffer{}
	}
	fmt.Fprintf(s.history, "--- bridge started %s\n", time.Now().Format(time.StampMicro))
	s.cmd.Stdout, s.cmd.Stderr = io.MultiWriter(s.log, s.history), io.MultiWriter(s.log, s.history)
	if err := s.cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	if s.noWait {
		s.noWait = false
		return
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if e, err := bridgeapi.ReadEndpoint(s.state); err == nil && e.PID == s.cmd.Process.Pid {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("askctl serve did not start: %s", s.log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// lockedBuffer is what the bridge process wrote, read while it writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// askctl runs an askctl command against the bridge, in process.
func (s *served) askctl(args ...string) (int, string, string) {
	s.t.Helper()
	var stdout, stderr bytes.Buffer
	env := map[string]string{bridgeapi.EnvStateDir: s.state}
	code := run(context.Background(), append([]string{"askctl"}, args...), func(k string) string { return env[k] }, strings.NewReader(""), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func (s *served) must(args ...string) string {
	s.t.Helper()
	code, out, errOut := s.askctl(args...)
	if code != 0 {
		s.t.Fatalf("askctl %s: exit %d\n%s%s\nbridge log:\n%s", strings.Join(args, " "), code, out, errOut, s.log)
	}
	return out
}

// transcripts returns every fakeclaude record, in file order.
func (s *served) transcripts() []transcript.Record {
	files, _ := filepath.Glob(filepath.Join(s.trans, "t-*.jsonl"))
	var out []transcript.Record
	for _, f := range files {
		recs, _ := transcript.ReadFile(f)
		out = append(out, recs...)
	}
	return out
}

// responses are the permission results the agents received (each
// control_response's response.response), in file order.
func (s *served) responses() []gjson.Result {
	var out []gjson.Result
	for _, r := range s.transcripts() {
		if r.Dir == transcript.ToCLI && gjson.GetBytes(r.Msg, "type").String() == "control_response" {
			out = append(out, gjson.GetBytes(r.Msg, "response.response"))
		}
	}
	return out
}

// exits waits for n fakeclaude exit records and returns their codes.
func (s *served) exits(n int) []int {
	s.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		var codes []int
		for _, r := range s.transcripts() {
			if r.Event == transcript.EventExit {
				codes = append(codes, *r.Code)
			}
		}
		if len(codes) >= n {
			return codes
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("%d fakeclaude exits after 15s, want %d; bridge log:\n%s", len(codes), n, s.log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// sessionsEnded waits until the bridge has seen n sessions end.
func (s *served) sessionsEnded(n int) []bridgeapi.Session {
	s.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		var ls []bridgeapi.Session
		_ = json.Unmarshal([]byte(s.must("session", "ls", "--json")), &ls)
		ended := 0
		for _, ss := range ls {
			if ss.Status == bridgeapi.StatusExited {
				ended++
			}
		}
		if ended >= n {
			return ls
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("%d of %d sessions ended after 60s: %+v\nbridge log:\n%s", ended, n, ls, s.log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestServeAnswerEndToEnd: askctl serve with fakeclaude playing ask-multi;
// pending --wait --json sees the request; answer answers it; the agent gets
// exactly the answers and exits 0.
func TestServeAnswerEndToEnd(t *testing.T) {
	s := serve(t)
	s.must("session", "start", "--scenario", "ask-multi", "--prompt", "Ask me how to format.")
	out := s.must("pending", "--wait", "--timeout", "10s", "--json")
	id := gjson.Get(out, "0.question_id").String()
	if !strings.HasPrefix(id, "q_") || gjson.Get(out, "0.questions.#").Int() != 2 {
		t.Fatalf("pending: %s", out)
	}
	if code, _, errOut := s.askctl("answer", "--id", id, "Sumary"); code != exitRejected || !strings.Contains(errOut, `"Sumary" is not an option of any question of `+id) || !strings.Contains(errOut, `did you mean "Summary"?`) {
		t.Errorf("a mistyped label of a two-question request: exit %d, %s", code, errOut)
	}
	if code, _, errOut := s.askctl("answer", "--id", id, "Summary", "Intro"); code != exitUsage || !strings.Contains(errOut, "holds 2 questions: say which") {
		t.Errorf("labels of two questions of a two-question request: exit %d, %s", code, errOut)
	}
	// A bare label that names an option of exactly one question answers it.
	if out := s.must("answer", "--id", id, "Summary"); !strings.Contains(out, "held "+id+`: waiting for "Which sections?"`) {
		t.Errorf("first half: %s", out)
	}
	if out := s.must("answer", "--id", id, "Intro", "Outro"); !strings.Contains(out, "answered "+id) || !strings.Contains(out, "Which sections? = Intro, Outro") {
		t.Errorf("second half: %s", out)
	}
	if codes := s.exits(1); codes[0] != 0 {
		t.Errorf("fakeclaude exited %v", codes)
	}
	var sent []string
	for _, r := range s.responses() {
		sent = append(sent, r.Get("updatedInput.answers").Raw)
	}
	if len(sent) != 1 || sent[0] != `{"How should I format the output?":"Summary","Which sections?":"Intro, Outro"}` {
		t.Errorf("the agent received %v", sent)
	}
	if code, _, errOut := s.askctl("answer", "--id", id, "--set", "1=Detailed", "--set", "2=Body"); code != exitResolved {
		t.Errorf("a second answer: exit %d, %s", code, errOut)
	}
	if code, _, _ := s.askctl("answer", "--id", "q_nosuch", "x"); code != exitNotFound {
		t.Errorf("unknown id: exit %d", code)
	}

	// session show: how the session ended, and what its agent got.
	ss := s.sessionsEnded(1)[0]
	shown := s.must("session", "show", ss.ID)
	for _, want := range []string{"session " + ss.ID + ": exited (exit status 0)", "prompt:   Ask me how to format.", "scenario: ask-multi",
		"1 question(s):", id + "  answered", "1. How should I format the output?", "→ Summary", "2. Which sections?", "→ Intro, Outro"} {
		if !strings.Contains(shown, want) {
			t.Errorf("session show does not say %q:\n%s", want, shown)
		}
	}
	js := s.must("session", "show", "--json", ss.ID)
	if gjson.Get(js, "id").String() != ss.ID || gjson.Get(js, "questions.0.answers.Which sections?").String() != "Intro, Outro" {
		t.Errorf("session show --json: %s", js)
	}
	logs := s.must("session", "logs", ss.ID)
	for _, want := range []string{id + ` asked "How should I format the output?", "Which sections?"`, id + ` held (waiting for 1 more answer(s)): "How should I format the output?"="Summary"`,
		id + ` answered: "How should I format the output?"="Summary", "Which sections?"="Intro, Outro"`, "session exited (exit status 0)", "the agent wrote nothing on stderr"} {
		if !strings.Contains(logs, want) {
			t.Errorf("session logs does not say %q:\n%s", want, logs)
		}
	}
	if strings.Index(logs, " asked ") > strings.Index(logs, " answered") {
		t.Errorf("session logs is out of order:\n%s", logs)
	}
	if code, _, errOut := s.askctl("session", "logs", "s_nosuch"); code != exitNotFound {
		t.Errorf("session logs of no session: exit %d, %s", code, errOut)
	}
	if code, _, errOut := s.askctl("session", "show", "s_nosuch"); code != exitNotFound {
		t.Errorf("session show of no session: exit %d, %s", code, errOut)
	}
	if code, _, errOut := s.askctl("session", "show"); code != exitUsage || !strings.Contains(errOut, "show takes one session id") {
		t.Errorf("session show with no id: exit %d, %s", code, errOut)
	}
}

// TestServeSkipAndTimeout: skip sends a deny; a question nobody answers in
// time gets a deny that says so, and a late answer is refused.
func TestServeSkipAndTimeout(t *testing.T) {
	s := serve(t, "--timeout", "500ms")
	s.must("session", "start", "--scenario", "ask-skip", "--prompt", "x")
	id := gjson.Get(s.must("pending", "--wait", "--timeout", "10s", "--json"), "0.question_id").String()
	if out := s.must("skip", "--id", id, "--reason", "User skipped this question"); !strings.Contains(out, "skipped "+id) {
		t.Errorf("skip: %s", out)
	}
	s.must("session", "start", "--scenario", "ask-skip", "--prompt", "x")
	time.Sleep(200 * time.Millisecond)
	if codes := s.exits(2); codes[0] != 0 || codes[1] != 0 {
		t.Errorf("fakeclaude exits %v, want 0 0 (ask-skip accepts a deny)", codes)
	}
	var denies []string
	for _, r := range s.responses() {
		denies = append(denies, r.Get("behavior").String()+": "+r.Get("message").String())
	}
	if len(denies) != 2 || !strings.Contains(strings.Join(denies, "\n"), "deny: User skipped this question") || !strings.Contains(strings.Join(denies, "\n"), "timed out") {
		t.Errorf("the agents received %q", denies)
	}
	qs := s.must("pending", "--json")
	if gjson.Get(qs, "#").Int() != 0 {
		t.Errorf("pending after: %s", qs)
	}
}

// TestServeRestartKeepsQuestions: kill -9 of the bridge with a question
// pending loses nothing: after a restart it is listed again, and answering
// it resumes the session (--resume, same session id) with the question and
// the answer, which the resumed agent checks.
func TestServeRestartKeepsQuestions(t *testing.T) {
	s := serve(t)
	s.must("session", "start", "--scenario", "late-answer", "--prompt", "Set up storage for the app.")
	before := gjson.Get(s.must("pending", "--wait", "--timeout", "10s", "--json"), "0")
	if err := s.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	s.cmd.Wait()
	s.exits(1) // the agent saw its bridge die
	s.start()
	after := gjson.Get(s.must("pending", "--json"), "0")
	if after.Get("question_id").String() != before.Get("question_id").String() || !after.Get("orphaned").Bool() {
		t.Fatalf("after the restart: %s, before: %s", after.Raw, before.Raw)
	}
	out := s.must("answer", "--id", after.Get("question_id").String(), "Postgres")
	if !strings.Contains(out, "resumed") {
		t.Errorf("answer: %s", out)
	}
	codes := s.exits(2)
	if codes[len(codes)-1] != 0 {
		t.Errorf("the resumed agent exited %v; log:\n%s", codes, s.log)
	}
	var sessions []string
	for _, r := range s.transcripts() {
		if gjson.GetBytes(r.Msg, "subtype").String() == "init" {
			sessions = append(sessions, r.Session)
		}
	}
	if len(sessions) != 2 || sessions[0] != sessions[1] {
		t.Errorf("system/init session ids %v, want the same one resumed", sessions)
	}
	if ls := s.sessionsEnded(1); *ls[0].ExitCode != 0 {
		t.Errorf("sessions %+v", ls)
	}
}

// TestCommandsWithoutABridge: the commands say what is wrong, with their
// exit statuses, when no bridge runs or the token is wrong.
func TestCommandsWithoutABridge(t *testing.T) {
	state := t.TempDir()
	env := map[string]string{bridgeapi.EnvStateDir: state}
	runIn := func(args ...string) (int, string) {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), append([]string{"askctl"}, args...), func(k string) string { return env[k] }, strings.NewReader(""), &stdout, &stderr)
		return code, stderr.String()
	}
	for _, cmd := range []string{"pending", "login"} {
		if code, errOut := runIn(cmd); code != exitBridgeDown || !strings.Contains(errOut, "no bridge is running") {
			t.Errorf("%s with no bridge: exit %d, %s", cmd, code, errOut)
		}
	}
	s := serve(t)
	env[bridgeapi.EnvStateDir] = s.state
	for _, cmd := range []string{"pending", "login"} {
		if code, errOut := runIn(cmd, "--token", "wrong"); code != exitBridgeDown || !strings.Contains(errOut, "token") {
			t.Errorf("%s with a wrong token: exit %d, %s", cmd, code, errOut)
		}
	}
	if code, errOut := runIn("pending", "--wait", "--timeout", "300ms"); code != exitNothing || !strings.Contains(errOut, "no question within 300ms") {
		t.Errorf("pending --wait with nothing: exit %d, %s", code, errOut)
	}
	for _, args := range [][]string{{"answer", "x"}, {"answer", "--id", "q_1"}, {"answer", "--id", "q_1", "--text", "t", "A"}, {"answer", "--id", "q_1", "--set", "nolabel"}, {"skip"}, {"session", "start"}, {"session", "stop"}} {
		if code, errOut := runIn(args...); code != exitUsage {
			t.Errorf("%v: exit %d, %s", args, code, errOut)
		}
	}
	fi, err := os.Stat(filepath.Join(s.state, "token"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v, %v; want 0600", fi.Mode().Perm(), err)
	}
	if fi, err := os.Stat(filepath.Join(s.state, "bridge.db")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("database mode %v, %v; want 0600", fi.Mode().Perm(), err)
	}
}

func TestServeRefusesRemoteWithoutFlag(t *testing.T) {
	var stderr bytes.Buffer
	code := run(context.Background(), []string{"askctl", "serve", "--addr", "0.0.0.0:0"}, func(string) string { return "" }, strings.NewReader(""), &bytes.Buffer{}, &stderr)
	if code != exitUsage || !strings.Contains(stderr.String(), "--allow-remote") {
		t.Errorf("exit %d, %s", code, stderr.String())
	}
}

// TestServeRealCLI: the bridge spawns the real claude 2.1.330 against the
// fake model API; its question appears in askctl pending, askctl answer
// reaches it, and the tool_result the CLI sends the model carries the
// answers.
func TestServeRealCLI(t *testing.T) {
	claude := testenv.RealClaude(t)
	sc, err := scenarios.Builtin("ask-multi")
	if err != nil {
		t.Fatal(err)
	}
	api := fakeapi.New(sc, nil)
	var mu sync.Mutex
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(b))
		api.ServeHTTP(w, r)
	}))
	defer srv.Close()
	home := t.TempDir()
	var envFlags []string
	for _, kv := range []string{"ANTHROPIC_BASE_URL=" + srv.URL, "ANTHROPIC_API_KEY=sk-askctl-fake-key", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "ENABLE_TOOL_SEARCH=false", "HOME=" + home} {
		envFlags = append(envFlags, "--env", kv)
	}
	s := serve(t, envFlags...)
	// --claude comes last: the later flag wins over serve's own "fakeclaude".
	s.cmd.Process.Signal(syscall.SIGTERM)
	s.cmd.Wait()
	s.args = append(s.args, "--claude", claude)
	s.start()
	s.must("session", "start", "--prompt", "Ask me how to format.")
	out := s.must("pending", "--wait", "--timeout", "60s", "--json")
	id := gjson.Get(out, "0.question_id").String()
	if gjson.Get(out, "0.questions.1.question").String() != "Which sections?" {
		t.Fatalf("pending: %s", out)
	}
	s.must("answer", "--id", id, "--set", "1=Summary", "--set", "2=Intro", "--set", "2=Outro")
	if ls := s.sessionsEnded(1); *ls[0].ExitCode != 0 {
		t.Errorf("the real CLI exited %d: %s", *ls[0].ExitCode, ls[0].Detail)
	}
	mu.Lock()
	defer mu.Unlock()
	want := `Your questions have been answered: \"How should I format the output?\"=\"Summary\", \"Which sections?\"=\"Intro, Outro\".`
	found := false
	for _, b := range bodies {
		found = found || strings.Contains(b, want)
	}
	if !found {
		t.Errorf("no request to the model carried the answers (%d requests)", len(bodies))
	}
}

// TestAutomationLoop: the README's shell loop answers whatever the bridge
// holds; both agents get their first options and exit 0.
func TestAutomationLoop(t *testing.T) {
	s := serve(t)
	s.must("session", "start", "--scenario", "ask-single", "--prompt", "one")
	s.must("session", "start", "--scenario", "ask-single", "--prompt", "two")
	self, _ := os.Executable()
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "askctl"), []byte("#!/bin/sh\n"+envTestAsAskctl+"=1 exec '"+self+"' \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	script, _ := filepath.Abs("../../examples/shell/answer-first-option.sh")
	cmd := exec.Command("bash", script)
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), bridgeapi.EnvStateDir+"="+s.state, "WAIT=2s")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the loop: %v\n%s", err, out)
	}
	if strings.Count(string(out), "answered q_") != 2 {
		t.Errorf("the loop answered:\n%s", out)
	}
	codes := s.exits(2)
	sent := len(s.responses())
	if codes[0] != 0 || codes[1] != 0 || sent != 2 {
		t.Errorf("exits %v, %d responses; want 0 0 and 2\n%s", codes, sent, out)
	}
}

// TestServeGracefulRestart: a bridge stopped with SIGTERM keeps its pending
// questions as a killed one does; a second bridge on the same state
// directory is refused while the first runs.
func TestServeGracefulRestart(t *testing.T) {
	s := serve(t)
	s.must("session", "start", "--scenario", "late-answer", "--prompt", "Set up storage for the app.")
	id := gjson.Get(s.must("pending", "--wait", "--timeout", "10s", "--json"), "0.question_id").String()

	var stderr bytes.Buffer
	env := map[string]string{bridgeapi.EnvStateDir: s.state}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	code := run(ctx, []string{"askctl", "serve", "--claude", "fakeclaude", "--addr", "127.0.0.1:0", "--state", s.state}, func(k string) string { return env[k] }, strings.NewReader(""), &bytes.Buffer{}, &stderr)
	if code != exitError || !strings.Contains(stderr.String(), "another bridge is using the database") {
		t.Errorf("a second bridge: exit %d, %s", code, stderr.String())
	}

	s.cmd.Process.Signal(syscall.SIGTERM)
	s.cmd.Wait()
	s.start()
	q := gjson.Get(s.must("pending", "--json"), "0")
	if q.Get("question_id").String() != id || !q.Get("orphaned").Bool() {
		t.Fatalf("after a graceful restart: %s", q.Raw)
	}
	if out := s.must("answer", "--id", id, "Postgres"); !strings.Contains(out, "resumed") {
		t.Errorf("answer: %s", out)
	}
	if ls := s.sessionsEnded(1); *ls[0].ExitCode != 0 {
		t.Errorf("the resumed session: %+v", ls[0])
	}
}

// TestAnswerLabelsAreOptions: a label that is no option is refused (exit 6,
// the options named), not sent as free text; --text is the way to free
// text, commas and all; a value with a comma stays one value.
func TestAnswerLabelsAreOptions(t *testing.T) {
	s := serve(t, "--env", "ASKCTL_TEST_COMMA=a,b")
	s.must("session", "start", "--scenario", "ask-free-text", "--prompt", "x")
	id := gjson.Get(s.must("pending", "--wait", "--timeout", "10s", "--json"), "0.question_id").String()
	code, _, errOut := s.askctl("answer", "--id", id, "--set", "1=MySQL, we already run it")
	if code != exitRejected || !strings.Contains(errOut, `"MySQL, we already run it" is not an option`) || !strings.Contains(errOut, "--text") {
		t.Errorf("free text as a label: exit %d, %s", code, errOut)
	}
	s.must("answer", "--id", id, "--text", "MySQL, we already run it")
	if codes := s.exits(1); codes[0] != 0 {
		t.Errorf("fakeclaude exited %v", codes)
	}
}

// TestAnswerThroughProfiles: answer, skip and pending --bridge reach the
// bridge through a profile's surface (each adapter kind), with the same
// rules and exit statuses as through the HTTP API.
func TestAnswerThroughProfiles(t *testing.T) {
	s := serve(t)
	for _, kind := range []string{"reference-ws", "reference-http", "reference-control-ws"} {
		t.Run(kind, func(t *testing.T) {
			s.must("session", "start", "--scenario", "ask-multi", "--prompt", "Ask me how to format.")
			out := s.must("pending", "--bridge", kind, "--wait", "--timeout", "10s", "--json")
			id := gjson.Get(out, "0.question_id").String()
			if !strings.HasPrefix(id, "q_") || gjson.Get(out, "0.questions.1.options.2.description").String() != "c" {
				t.Fatalf("pending --bridge %s: %s", kind, out)
			}
			if code, _, errOut := s.askctl("answer", "--bridge", kind, "--id", id, "--question", "1", "Nonsense"); code != exitRejected {
				t.Errorf("a label that is no option: exit %d, %s", code, errOut)
			}
			if code, _, errOut := s.askctl("answer", "--bridge", kind, "--id", "q_nosuch", "x"); code != exitNotFound {
				t.Errorf("unknown id: exit %d, %s", code, errOut)
			}
			s.must("answer", "--bridge", kind, "--id", id, "--set", "1=Summary", "--set", "2=Outro", "--set", "2=Intro")
			if code, _, errOut := s.askctl("skip", "--bridge", kind, "--id", id); code != exitResolved {
				t.Errorf("skipping an answered question: exit %d, %s", code, errOut)
			}
			if code, _, errOut := s.askctl("answer", "--bridge", kind, "--id", id, "--set", "1=Detailed", "--set", "2=Body"); code != exitResolved {
				t.Errorf("answering it again: exit %d, %s", code, errOut)
			}
			q := s.question(id)
			if q.Status != bridgeapi.QuestionAnswered || q.Answers["Which sections?"] != "Outro, Intro" {
				t.Errorf("the bridge holds %+v", q)
			}
		})
	}
	if code, _, errOut := s.askctl("pending", "--bridge", "nosuch.json"); code != exitUsage || !strings.Contains(errOut, "no such profile file") {
		t.Errorf("a missing profile: exit %d, %s", code, errOut)
	}
	if code, _, errOut := s.askctl("pending", "--bridge", "reference-ws", "--state", t.TempDir()); code != exitBridgeDown || !strings.Contains(errOut, "no bridge is running") {
		t.Errorf("no bridge running: exit %d, %s", code, errOut)
	}
}

// question reads question id from the bridge's API.
func (s *served) question(id string) *bridgeapi.Question {
	s.t.Helper()
	c := &bridgeapi.Client{URL: s.endpoint(), Token: s.token()}
	q, err := c.Question(context.Background(), id)
	if err != nil {
		s.t.Fatal(err)
	}
	return q
}

func (s *served) endpoint() string {
	e, err := bridgeapi.ReadEndpoint(s.state)
	if err != nil {
		s.t.Fatal(err)
	}
	return e.URL
}

func (s *served) token() string {
	tok, err := bridgeapi.ReadToken(s.state)
	if err != nil {
		s.t.Fatal(err)
	}
	return tok
}

// TestMCPServer: askctl mcp, an MCP client's ask_user tool: the call shows
// on the bridge as a pending question, and its answer, skip or timeout comes
// back as the tool's result; a client that goes away withdraws it.
func TestMCPServer(t *testing.T) {
	s := serve(t, "--timeout", "1s")
	self, _ := os.Executable()
	cmd := exec.Command(self, "mcp")
	cmd.Env = append(os.Environ(), envTestAsAskctl+"=1", bridgeapi.EnvStateDir+"="+s.state)
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tools.Tools) != 1 || tools.Tools[0].Name != "ask_user" {
		t.Fatalf("tools: %+v", tools.Tools)
	}
	schema, _ := json.Marshal(tools.Tools[0].InputSchema)
	if gjson.GetBytes(schema, "required.0").String() != "question" || gjson.GetBytes(schema, "properties.options.items.properties.description.type").String() != "string" ||
		gjson.GetBytes(schema, "properties.multiSelect.type").String() != "boolean" {
		t.Errorf("input schema %s", schema)
	}
	call := func(args map[string]any) chan *mcp.CallToolResult {
		out := make(chan *mcp.CallToolResult, 1)
		go func() {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask_user", Arguments: args})
			if err != nil {
				t.Error(err)
			}
			out <- res
		}()
		return out
	}
	text := func(r *mcp.CallToolResult) string {
		if r == nil || len(r.Content) == 0 {
			return ""
		}
		return r.Content[0].(*mcp.TextContent).Text
	}
	pendingID := func() string {
		out := s.must("pending", "--wait", "--timeout", "10s", "--json")
		return gjson.Get(out, "0.question_id").String()
	}

	res := call(map[string]any{"question": "Which sections?", "options": []map[string]string{{"label": "Intro"}, {"label": "Body"}, {"label": "Outro"}}, "multiSelect": true})
	id := pendingID()
	s.must("answer", "--id", id, "Outro", "Intro")
	if r := <-res; r.IsError || text(r) != "User selected: Outro, Intro" {
		t.Errorf("answered: %v %q", r.IsError, text(r))
	}

	res = call(map[string]any{"question": "Which database?", "options": []map[string]string{{"label": "Postgres"}, {"label": "SQLite"}}})
	id = pendingID()
	s.must("answer", "--id", id, "--text", "MySQL, we run it")
	if r := <-res; r.IsError || text(r) != "User answered: MySQL, we run it" {
		t.Errorf("free text: %v %q", r.IsError, text(r))
	}

	res = call(map[string]any{"question": "Deploy now?"})
	id = pendingID()
	s.must("skip", "--id", id, "--reason", "not today")
	if r := <-res; !r.IsError || !strings.Contains(text(r), "declined") || !strings.Contains(text(r), "not today") {
		t.Errorf("skipped: %v %q", r.IsError, text(r))
	}

	res = call(map[string]any{"question": "Anyone there?"})
	if r := <-res; !r.IsError || !strings.Contains(text(r), "did not respond in time") {
		t.Errorf("timed out: %v %q", r.IsError, text(r))
	}

	// The client goes away with a question pending: it is withdrawn.
	call(map[string]any{"question": "Still there?"})
	id = pendingID()
	cs.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		out := s.must("pending", "--json")
		if !strings.Contains(out, id) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("question %s still pending after the client left: %s", id, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if code, _, errOut := s.askctl("answer", "--id", id, "--text", "yes"); code != exitResolved {
		t.Errorf("answering a withdrawn MCP question: exit %d, %s", code, errOut)
	}
}

// TestMCPRealCLI: the real claude CLI 2.1.330 in print mode, given askctl
// mcp's --mcp-config and --allowedTools mcp__askctl__ask_user, against the
// fake model API, asks through askctl mcp: the question shows in askctl
// pending, askctl answer (or skip, or the timeout) resolves it, and the
// CLI's tool_result carries it.
func TestMCPRealCLI(t *testing.T) {
	claude := testenv.RealClaude(t)
	s := serve(t, "--timeout", "2s")
	self, _ := os.Executable()
	// As askctl mcp --print-config writes it, with this test binary as
	// askctl.
	out := s.must("mcp", "--print-config", "--state", s.state)
	if gjson.Get(out, "mcpServers.askctl.type").String() != "stdio" || gjson.Get(out, "mcpServers.askctl.args.0").String() != "mcp" {
		t.Fatalf("--print-config: %s", out)
	}
	cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"askctl": map[string]any{"type": "stdio", "command": self,
		"args": []string{"mcp", "--state", s.state}, "env": map[string]string{envTestAsAskctl: "1"}}}})
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(cfgPath, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	steps := `{"prompt":"Ask me how to format."}
{"tool":{"name":"mcp__askctl__ask_user","input":{"question":"How should I format?","options":[{"label":"Summary"},{"label":"Detailed"}]}},"user":{"allow":true}}
{"text":"Done."}
`
	sc, err := scenarios.Parse("mcp-ask.txtar", []byte("MCP ask.\n-- scenario.json --\n{\"name\":\"mcp-ask\",\"route\":\"sdk\"}\n-- steps.jsonl --\n"+steps))
	if err != nil {
		t.Fatal(err)
	}
	run := func(t *testing.T, person func(id string)) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		p, err := agent.Real{Claude: claude}.Start(ctx, sc, agent.Options{Dir: t.TempDir(), Args: []string{"-p", "Ask me how to format.",
			"--output-format", "stream-json", "--verbose", "--mcp-config", cfgPath, "--allowedTools", "mcp__askctl__ask_user"}})
		if err != nil {
			t.Fatal(err)
		}
		p.Stdin.Close()
		var stdout bytes.Buffer
		copied := make(chan struct{})
		go func() { io.Copy(&stdout, p.Stdout); close(copied) }()
		if person != nil {
			out := s.must("pending", "--wait", "--timeout", "60s", "--json")
			if q := gjson.Get(out, "0.questions.0.question").String(); q != "How should I format?" {
				t.Fatalf("pending: %s", out)
			}
			person(gjson.Get(out, "0.question_id").String())
		}
		<-copied
		if code, _ := p.Wait(); code != 0 {
			t.Errorf("the real CLI exited %d: %s", code, p.Stderr())
		}
		var results []string
		for _, line := range strings.Split(stdout.String(), "\n") {
			m := gjson.Parse(line)
			if m.Get("type").String() == "system" && m.Get("subtype").String() == "init" {
				if st := m.Get(`mcp_servers.#(name=="askctl").status`).String(); st != "connected" {
					t.Errorf("mcp server status %q in init: %s", st, m.Get("mcp_servers").Raw)
				}
			}
			if r := m.Get(`message.content.#(type=="tool_result")`); r.Exists() {
				results = append(results, r.Raw)
			}
		}
		if len(results) != 1 {
			t.Fatalf("tool results: %v\nstdout: %s", results, stdout.String())
		}
		return results[0]
	}
	t.Run("answer", func(t *testing.T) {
		r := run(t, func(id string) { s.must("answer", "--id", id, "Detailed") })
		if !strings.Contains(r, "User selected: Detailed") || gjson.Get(r, "is_error").Bool() {
			t.Errorf("tool_result %s", r)
		}
	})
	t.Run("skip", func(t *testing.T) {
		r := run(t, func(id string) { s.must("skip", "--id", id, "--reason", "not now") })
		if !strings.Contains(r, "declined") || !gjson.Get(r, "is_error").Bool() {
			t.Errorf("tool_result %s", r)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		r := run(t, nil)
		if !strings.Contains(r, "did not respond in time (no answer within 2 s)") || !gjson.Get(r, "is_error").Bool() {
			t.Errorf("tool_result %s", r)
		}
	})
}

// escapeScenario asks a question whose text, header and option carry
// terminal control sequences (clear screen, a window title, a carriage
// return that overwrites).
const escapeScenario = `A question whose text would drive a terminal if printed raw.
-- scenario.json --
{"name":"ask-escapes","route":"sdk","cli_version":"2.1.330","origin":"synthetic"}
-- steps.jsonl --
{"prompt":"Go."}
{"ask":{"questions":[{"question":"Pick one\u001b[2J\u001b]0;owned\u0007\rSAFE?","header":"Esc","options":[{"label":"A\u001b[31m","description":"red"},{"label":"B","description":"plain"}],"multiSelect":false}]},"id":"toolu_01E","user":{"answers":{"Pick one\u001b[2J\u001b]0;owned\u0007\rSAFE?":"B"}}}
{"text":"Done."}
`

// TestWatchAndTerminalEscapes: askctl watch prints the events as they
// happen (a question, its answer, the session's end), and no person command
// prints a control character the agent sent: pending, answer and watch
// escape them.
func TestWatchAndTerminalEscapes(t *testing.T) {
	s := serve(t)
	sc := filepath.Join(t.TempDir(), "escapes.txtar")
	if err := os.WriteFile(sc, []byte(escapeScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	watched, done := s.watch(ctx)
	s.must("session", "start", "--scenario", sc, "--prompt", "Go.")
	listed := s.must("pending", "--wait", "--timeout", "10s")
	id := gjson.Get(s.must("pending", "--json"), "0.question_id").String()
	answered := s.must("answer", "--id", id, "B")
	if codes := s.exits(1); codes[0] != 0 {
		t.Errorf("fakeclaude exited %v", codes)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(watched.String(), "exited") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("watch, which runs until interrupted: exit %d, want 0", code)
	}
	out := watched.String()
	for _, want := range []string{id + " asked", id + " answered", "exited"} {
		if !strings.Contains(out, want) {
			t.Errorf("watch printed no %q:\n%s", want, out)
		}
	}
	for name, text := range map[string]string{"pending": listed, "answer": answered, "watch": out} {
		if i := strings.IndexFunc(text, func(r rune) bool { return r < 0x20 && r != '\n' || r == 0x7f }); i >= 0 {
			t.Errorf("%s printed a control character %q: %q", name, text[i], text)
		}
		if name != "answer" && !strings.Contains(text, `\x1b[2J`) {
			t.Errorf("%s does not show the escaped sequence: %q", name, text)
		}
	}
}

// watch runs askctl watch (with args) on the bridge until ctx ends: what it
// prints, and its exit status once it has ended.
func (s *served) watch(ctx context.Context, args ...string) (*syncBuffer, <-chan int) {
	watched := &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		env := map[string]string{bridgeapi.EnvStateDir: s.state}
		done <- run(ctx, append([]string{"askctl", "watch"}, args...), func(k string) string { return env[k] }, strings.NewReader(""), watched, io.Discard)
	}()
	return watched, done
}

// syncBuffer is a bytes.Buffer safe for one writer and one reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestServeOpensNoPathAClientNames: a client that names a path as a
// session's scenario gets the same refusal whether the file exists or not,
// at once (no /dev/zero read until the bridge dies); askctl session start
// reads a scenario file itself and sends its content, so a relative path
// works from any directory; content over the bound is refused before it is
// sent; a fakeclaude bridge refuses a session with no scenario up front.
func TestServeOpensNoPathAClientNames(t *testing.T) {
	s := serve(t)
	api, err := (&bridgeConn{state: s.state}).client(&stdio{getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var msgs []string
	for _, path := range []string{"/etc/passwd", "/dev/zero", "/no/such/file.txtar", "../../etc/hostname"} {
		_, err := api.StartSession(ctx, bridgeapi.StartOptions{Prompt: "x", Scenario: path})
		if !errors.Is(err, bridgeapi.ErrInvalid) {
			t.Fatalf("scenario %s: %v, want invalid", path, err)
		}
		msgs = append(msgs, strings.ReplaceAll(err.Error(), path, "PATH"))
	}
	for _, m := range msgs[1:] {
		if m != msgs[0] {
			t.Errorf("the refusals differ by path, which tells what exists:\n%s\n%s", msgs[0], m)
		}
	}

	// A file of the caller's own, by a path relative to the working
	// directory: read here, sent as content.
	dir := t.TempDir()
	good := filepath.Join(dir, "good.txtar")
	src, _ := scenarios.Builtin("ask-single")
	if err := os.WriteFile(good, src.Source, 0o644); err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	rel, err := filepath.Rel(wd, good)
	if err != nil {
		t.Fatal(err)
	}
	id := strings.TrimSpace(s.must("session", "start", "--scenario", rel, "--prompt", "Set up storage for the app."))
	var ss bridgeapi.Session
	if err := json.Unmarshal([]byte(s.must("session", "ls", "--json")), &[]*bridgeapi.Session{&ss}); err != nil || ss.ID != id || !strings.HasPrefix(ss.Scenario, "sent-") {
		t.Errorf("the session: %+v (%v), want %s playing a sent scenario", ss, err, id)
	}
	q := gjson.Get(s.must("pending", "--wait", "--timeout", "10s", "--json"), "0.question_id").String()
	s.must("answer", "--id", q, "Postgres")
	if codes := s.exits(1); codes[0] != 0 {
		t.Errorf("fakeclaude exited %v", codes)
	}

	big := filepath.Join(dir, "big.txtar")
	if err := os.WriteFile(big, bytes.Repeat([]byte("x"), bridgeapi.MaxScenarioText+1), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := s.askctl("session", "start", "--scenario", big, "--prompt", "x"); code != exitRejected || !strings.Contains(errOut, "KiB") {
		t.Errorf("an oversized scenario: exit %d, %s", code, errOut)
	}
	bad := filepath.Join(dir, "bad.txtar")
	if err := os.WriteFile(bad, []byte("no sections\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := s.askctl("session", "start", "--scenario", bad, "--prompt", "x"); code != exitRejected || !strings.Contains(errOut, "bad.txtar") {
		t.Errorf("a broken scenario: exit %d, %s", code, errOut)
	}
	if code, _, errOut := s.askctl("session", "start", "--prompt", "x"); code != exitRejected || !strings.Contains(errOut, "fakeclaude") {
		t.Errorf("no scenario on a fakeclaude bridge: exit %d, %s", code, errOut)
	}
}

// TestUnknownNamesExit: a session that does not exist is exit 4 for
// pending and watch (not an empty list, not a wait forever); a mistyped
// command followed by its flags is named, with the nearest command.
func TestUnknownNamesExit(t *testing.T) {
	s := serve(t)
	for _, args := range [][]string{{"pending", "--session", "s_nope"}, {"pending", "--session", "s_nope", "--wait", "--timeout", "30s"}, {"watch", "--session", "s_nope"}} {
		done := make(chan struct{})
		var code int
		var errOut string
		go func() {
			defer close(done)
			code, _, errOut = s.askctl(args...)
		}()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatalf("askctl %s: still running after 20s", strings.Join(args, " "))
		}
		if code != exitNotFound || !strings.Contains(errOut, "s_nope") {
			t.Errorf("askctl %s: exit %d, %s; want %d naming the session", strings.Join(args, " "), code, errOut, exitNotFound)
		}
	}
	if code, _, errOut := s.askctl("anwser", "--id", "q_1", "x"); code != exitUsage || !strings.Contains(errOut, `did you mean "answer"`) {
		t.Errorf("a typo with flags: exit %d, %s", code, errOut)
	}
}

// TestInterruptedWaitIsNoTimeout: Ctrl-C on pending --wait is reported as
// an interruption (exit 130), not as nothing having come in time.
func TestInterruptedWaitIsNoTimeout(t *testing.T) {
	s := serve(t)
	ctx, cancel := context.WithCancel(context.Background())
	env := map[string]string{bridgeapi.EnvStateDir: s.state}
	var stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"askctl", "pending", "--wait", "--timeout", "1m"}, func(k string) string { return env[k] }, strings.NewReader(""), io.Discard, &stderr)
	}()
	// Give the wait a moment to be under way (the verdict is the same if
	// the interrupt comes sooner: it is never a timeout).
	select {
	case code := <-done:
		t.Fatalf("pending --wait returned %d before the interrupt: %s", code, stderr.String())
	case <-time.After(300 * time.Millisecond):
	}
	cancel()
	select {
	case code := <-done:
		if code != exitInterrupted || strings.Contains(stderr.String(), "no question within") || !strings.Contains(stderr.String(), "interrupted") {
			t.Errorf("interrupted pending --wait: exit %d, %q; want %d, interrupted", code, stderr.String(), exitInterrupted)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("pending --wait did not stop when interrupted")
	}
}

// TestAgentFailureIsTold: an agent that fails at start with an error
// result (the real CLI's "Not logged in") has its reason in session ls, on
// watch (with its exit status), and pending --wait on its session returns
// at once with it instead of waiting out its timeout.
func TestAgentFailureIsTold(t *testing.T) {
	cli := filepath.Join(t.TempDir(), "claude")
	// It reads the initialize first, as the CLI does: one that exits before
	// the bridge wrote it fails the start itself ("exited at once").
	script := "#!/bin/sh\nread line\necho 'warming up' >&2\necho 'no credentials in ~/.claude' >&2\necho '{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":true,\"result\":\"Not logged in · Please run /login\"}'\nexit 1\n"
	if err := os.WriteFile(cli, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	s := serve(t, "--claude", cli)
	id := strings.TrimSpace(s.must("session", "start", "--prompt", "hi"))
	ls := s.sessionsEnded(1)
	if ls[0].ID != id || ls[0].ExitCode == nil || *ls[0].ExitCode != 1 || !strings.Contains(ls[0].Detail, "Not logged in") {
		t.Errorf("session ls: %+v, want exit 1 with the agent's reason", ls[0])
	}
	if logs := s.must("session", "logs", id); !strings.Contains(logs, "the agent's stderr (its end):\n  warming up\n  no credentials in ~/.claude\n") || !strings.Contains(logs, "session exited (exit status 1)") {
		t.Errorf("session logs of an agent that failed:\n%s", logs)
	}
	start := time.Now()
	code, _, errOut := s.askctl("pending", "--session", id, "--wait", "--timeout", "1m")
	if code != exitResolved || !strings.Contains(errOut, "Not logged in") {
		t.Errorf("pending --wait on an ended session: exit %d, %s", code, errOut)
	}
	if waited := time.Since(start); waited > 30*time.Second {
		t.Errorf("pending --wait waited %v for a session that had ended", waited)
	}
	ctx, cancel := context.WithCancel(context.Background())
	watched, done := s.watch(ctx, "--session", id)
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(watched.String(), "Not logged in") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	<-done
	if out := watched.String(); !strings.Contains(out, "exited (exit 1)") || !strings.Contains(out, "Not logged in") {
		t.Errorf("watch: %q, want the exit status and the reason", out)
	}
}

// TestLoginLinks: askctl serve prints a login link for the page when it
// starts, askctl login prints another; each works once and hands the page
// its key; --json says when it stops working.
func TestLoginLinks(t *testing.T) {
	s := serve(t)
	// serve prints the link just after it says where it listens (which
	// serve() waits for).
	linkRe := regexp.MustCompile(`open (http://127\.0\.0\.1:\d+/login\?code=[0-9a-f]{32})\b`)
	var printed []string
	for deadline := time.Now().Add(10 * time.Second); printed == nil; time.Sleep(10 * time.Millisecond) {
		if printed = linkRe.FindStringSubmatch(s.log.String()); printed == nil && time.Now().After(deadline) {
			t.Fatalf("askctl serve printed no login link within 10s:\n%s", s.log)
		}
	}
	link := strings.TrimSpace(s.must("login"))
	var j struct {
		URL       string    `json:"url"`
		ExpiresAt time.Time `json:"expires_at"`
	}
	if err := json.Unmarshal([]byte(s.must("login", "--json")), &j); err != nil || !strings.Contains(j.URL, "/login?code=") || time.Until(j.ExpiresAt) < 5*time.Minute {
		t.Errorf("login --json: %+v %v", j, err)
	}
	token, _ := os.ReadFile(filepath.Join(s.state, "token"))
	for _, l := range []string{printed[1], link, j.URL} {
		if strings.Contains(l, strings.TrimSpace(string(token))) {
			t.Errorf("%s holds the token", l)
		}
		for try, want := range []int{http.StatusOK, http.StatusUnauthorized} {
			resp, err := http.Get(l)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != want || (want == http.StatusOK) != strings.Contains(string(body), `name="askctl-key"`) {
				t.Errorf("%s, use %d: %d, want %d: %s", l, try+1, resp.StatusCode, want, body)
			}
		}
	}
	if code, _, errOut := s.askctl("login", "extra"); code != exitUsage || !strings.Contains(errOut, "takes no arguments") {
		t.Errorf("login extra: exit %d, %s", code, errOut)
	}
}

// TestWatchSaysBridgeDownAndBack: watch tells the person when the bridge
// stops and when it is back (restarted on its address), and goes on.
func TestWatchSaysBridgeDownAndBack(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	s := serve(t, "--addr", addr)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	watched, done := s.watch(ctx)
	waitFor := func(what string) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for !strings.Contains(watched.String(), what) {
			if time.Now().After(deadline) {
				t.Fatalf("watch did not say %q in 20s:\n%s", what, watched.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	s.must("session", "start", "--scenario", "ask-single", "--prompt", "Go.")
	waitFor(" asked ")
	s.cmd.Process.Signal(syscall.SIGTERM)
	s.cmd.Wait()
	waitFor("the bridge is down")
	s.start()
	waitFor("the bridge is back")
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("watch, which runs until interrupted: exit %d, want 0\n%s", code, watched.String())
	}
}

// TestServeCrashAtNamesItsPoints: a crash point the bridge does not have
// is refused, naming the ones it has; and every point the conformance
// suite can arm (a profile's capabilities.crash) is one of them.
func TestServeCrashAtNamesItsPoints(t *testing.T) {
	var stderr bytes.Buffer
	env := func(k string) string {
		if k == EnvCrashAt {
			return "answer-sent"
		}
		return ""
	}
	code := run(context.Background(), []string{"askctl", "serve", "--addr", "127.0.0.1:0", "--state", t.TempDir()}, env, strings.NewReader(""), &bytes.Buffer{}, &stderr)
	if code != exitUsage || !strings.Contains(stderr.String(), "answer-sent: no such crash point") || !strings.Contains(stderr.String(), bridge.CrashAnswerCommitted) {
		t.Errorf("exit %d, %s", code, stderr.String())
	}
	for _, p := range profile.CrashPointNames() {
		if !slices.Contains(bridge.CrashPoints, p) {
			t.Errorf("the suite arms crash point %s, which askctl serve does not have (%v)", p, bridge.CrashPoints)
		}
	}
}
