package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"github.com/askctl/askctl/claudecli"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/askctl/askctl/claudecli/mcpclient"
	"github.com/askctl/askctl/fakeclaude"
	"github.com/askctl/askctl/internal/testenv"
	"github.com/askctl/askctl/scenarios"
	"github.com/rogpeppe/go-internal/testscript"
	"github.com/rogpeppe/go-internal/txtar"
)

// envTestAsAskctl makes the test binary askctl whatever its name, so a test
// can run it as the recording shim named claude.
const envTestAsAskctl = "_ASKCTL_TEST_AS_ASKCTL"

// envTestCrashAt names a bridge.Crash* point where the test binary, as
// askctl serve, kills itself (kill -9): the kill tests.
const envTestCrashAt = "_ASKCTL_TEST_CRASH_AT"

func askctlMain() {
	os.Exit(run(context.Background(), os.Args, os.Getenv, os.Stdin, os.Stdout, os.Stderr))
}

func TestMain(m *testing.M) {
	// The fake agent re-executes this binary as fakeclaude.
	testenv.RunAsFakeclaude()
	if os.Getenv(envTestAsAskctl) != "" {
		// Not inherited: the agents an askctl serve here spawns are fakeclaude.
		os.Unsetenv(envTestAsAskctl)
		if at := os.Getenv(envTestCrashAt); at != "" {
			os.Unsetenv(envTestCrashAt)
			crashHook = killedAt(at)
		}
		askctlMain()
	}
	testscript.Main(testenv.Cleaned(m), map[string]func(){
		"askctl":     askctlMain,
		"fakeclaude": fakeclaudeMain,
		// Scripts find fakeclaude first on PATH as claude, where a bridge
		// under test looks for the CLI.
		"claude": fakeclaudeMain,
	})
}

// TestScripts runs the CLI behaviour scripts in testdata.
func TestScripts(t *testing.T) {
	examples, err := filepath.Abs("../../examples")
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{Dir: "testdata", RequireExplicitExec: true, RequireUniqueNames: true,
		Setup: func(env *testscript.Env) error {
			env.Setenv("EXAMPLES", examples)
			return nil
		}})
}

const wrongScenario = `The person answers Postgres, and the scenario expects SQLite.
-- scenario.json --
{"name":"wrong"}
-- steps.jsonl --
{"prompt":"Set up storage."}
{"ask":{"questions":[{"question":"Which database should I use?","header":"Database","options":[{"label":"Postgres","description":"a"},{"label":"SQLite","description":"b"}],"multiSelect":false}]},"user":{"answers":{"Which database should I use?":"Postgres"}},"expect":{"match":{"updatedInput.answers.Which database should I use\\?":"SQLite"}}}
{"text":"Done."}
`

// TestExitStatus checks the one mapping from outcomes to exit statuses.
func TestExitStatus(t *testing.T) {
	dir := t.TempDir()
	wrong := dir + "/wrong.txtar"
	if err := os.WriteFile(wrong, []byte(wrongScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args       []string
		env        map[string]string
		want       int
		wantStderr string
	}{
		{args: []string{"replay", "ask-single"}, want: 0},
		{args: []string{"replay", wrong}, want: 1},
		{args: []string{"replay", "--agent", "robot"}, want: 2, wantStderr: `--agent: want fake or real, got "robot"`},
		{args: []string{"replay", "no-such"}, want: 2, wantStderr: `no built-in scenario or file "no-such"`},
		{args: []string{"replay", "--bogus"}, want: 2, wantStderr: "askctl: unknown flag --bogus\nRun 'askctl replay --help' for usage.\n"},
		{args: []string{"pending", "--wiat"}, want: 2, wantStderr: "askctl: unknown flag --wiat: did you mean --wait?\n"},
		{args: []string{"replay", "--agnet", "fake"}, want: 2, wantStderr: "unknown flag --agnet: did you mean --agent?"},
		{args: []string{"pending", "--timeout", "abc"}, want: 2, wantStderr: `askctl: invalid value "abc" for --timeout: want a duration such as 30s, 2m or 1h30m`},
		{args: []string{"bench", "--sessions", "x"}, want: 2, wantStderr: `askctl: invalid value "x" for --sessions: want a whole number`},
		{args: []string{"serve", "-q"}, want: 2, wantStderr: "askctl: unknown flag -q\n"},
		{args: []string{"answer", "q_123", "Use SQLite"}, want: 2, wantStderr: "--id is required: did you mean askctl answer --id q_123 'Use SQLite'?"},
		{args: []string{"skip", "q_9"}, want: 2, wantStderr: "did you mean askctl skip --id q_9?"},
		{args: []string{"answer", "Summary"}, want: 2, wantStderr: "--id is required: the question to answer"},
		{args: []string{"session", "stop", "--id", "s_1"}, want: 2, wantStderr: "unknown flag --id: askctl session stop takes the id as its argument: askctl session stop ID"},
		{args: []string{"record", "--", "true"}, want: 2, wantStderr: "askctl: -o FILE is required (or ASKCTL_RECORD_OUT)\nRun 'askctl record --help' for usage.\n"},
		{args: []string{"record", "-o", dir + "/true.txtar", "--", "true"}, want: 0, wantStderr: "has no prompt"},
		{args: []string{"record", "-o", dir + "/false.txtar", "--", "false"}, want: 1, wantStderr: "has no prompt"},
		{args: []string{"replay", "--agent", "real", "--claude", dir + "/nope"}, want: 3, wantStderr: "--claude: stat"},
		{args: []string{"scenarios"}, want: 0},
		{args: []string{"scenarios", "ask-single"}, want: 0},
		{args: []string{"scenarios", "ask-singel"}, want: 2, wantStderr: `no built-in scenario or file "ask-singel"`},
		{args: []string{"replya"}, want: 2, wantStderr: `unknown command "replya": did you mean "replay"?`},
		{args: []string{"frobnicate"}, want: 2, wantStderr: "askctl: unknown command \"frobnicate\"\nRun 'askctl --help' for usage.\n"},
		{args: nil, want: 0},
		{args: []string{"--version"}, want: 0},
		{args: []string{"help", "replay"}, want: 0},
		{args: []string{"fidelity", "--timeout", "0s"}, want: 2, wantStderr: "--timeout: want a positive duration, got 0s"},
		{args: []string{"replay", "--cli", "1.0.0", "ask-single"}, want: 2, wantStderr: "claude 1.0.0 is not a learned release"},
		{args: []string{"fidelity", "--cli", "1.0.0"}, want: 2, wantStderr: "askctl claude learn 1.0.0"},
		{args: []string{"claude", "install", "1", "2"}, want: 2, wantStderr: "install takes at most one argument"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			getenv := func(k string) string { return tt.env[k] }
			got := run(context.Background(), append([]string{"askctl"}, tt.args...), getenv, strings.NewReader(""), &stdout, &stderr)
			if got != tt.want {
				t.Errorf("exit = %d, want %d\nstdout:\n%s\nstderr:\n%s", got, tt.want, stdout.String(), stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.wantStderr) {
				t.Errorf("stderr = %q, want it to contain %q", stderr.String(), tt.wantStderr)
			}
			if tt.want == exitUsage && strings.Count(stderr.String(), "\n") > 2 {
				t.Errorf("a usage error printed %d lines, want the error and a hint:\n%s", strings.Count(stderr.String(), "\n"), stderr.String())
			}
		})
	}
}

// TestClaudeDrift: drift asks npm for the newest release and exits 1 when
// it is newer than the newest learned, naming the next step.
func TestClaudeDrift(t *testing.T) {
	bin := t.TempDir()
	t.Setenv("PATH", bin)
	for _, c := range []struct {
		latest, want string
		code         int
	}{
		{claudecli.Newest(), "is the newest release, and it is learned", 0},
		{"2.1.999", "claude 2.1.999 is out; the newest learned release is " + claudecli.Newest() + ".\nnext: askctl claude learn 2.1.999", 1},
		{"2.1.1", "npm's newest claude is 2.1.1; askctl has learned a newer one, " + claudecli.Newest() + ": nothing to learn", 0},
	} {
		os.WriteFile(filepath.Join(bin, "npm"), []byte("#!/bin/sh\necho "+c.latest+"\n"), 0o755)
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), []string{"askctl", "claude", "drift", "--quick"}, func(string) string { return "" }, strings.NewReader(""), &stdout, &stderr)
		if code != c.code || !strings.Contains(stdout.String(), c.want) {
			t.Errorf("npm says %s: exit %d, stdout %q, stderr %q; want %d and %q", c.latest, code, stdout.String(), stderr.String(), c.code, c.want)
		}
	}
	os.WriteFile(filepath.Join(bin, "npm"), []byte("#!/bin/sh\necho 'network down' >&2\nexit 1\n"), 0o755)
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"askctl", "claude", "drift", "--quick"}, func(string) string { return "" }, strings.NewReader(""), &stdout, &stderr); code != exitError || !strings.Contains(stderr.String(), "network down") {
		t.Errorf("npm fails: exit %d, stderr %q; want %d and npm's complaint", code, stderr.String(), exitError)
	}
}

// TestRecordShimAsClaude: askctl installed as "claude" records the session of
// the command in ASKCTL_RECORD_COMMAND, with the bridge's own arguments.
func TestRecordShimAsClaude(t *testing.T) {
	dir := t.TempDir()
	real := dir + "/real-claude"
	script := "#!/bin/sh\necho \"{\\\"type\\\":\\\"system\\\",\\\"subtype\\\":\\\"init\\\",\\\"claude_code_version\\\":\\\"0.0.1\\\",\\\"args\\\":\\\"$*\\\"}\"\nread line\necho '{\"type\":\"result\",\"subtype\":\"success\"}'\n"
	if err := os.WriteFile(real, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	out := dir + "/rec.txtar"
	env := map[string]string{envRecordCommand: real, envRecordOut: out}
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{dir + "/claude", "--verbose", "--output-format", "stream-json"}, func(k string) string { return env[k] },
		strings.NewReader(`{"type":"user","message":{"role":"user","content":"hi"}}`+"\n"), &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), `"args":"--verbose --output-format stream-json"`) {
		t.Errorf("the bridge's arguments did not reach the command: %s", stdout.String())
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{`"origin":"recorded"`, `"cli_version":"0.0.1"`, `{"prompt":"hi"}`, `"dir":"to_cli"`} {
		if !strings.Contains(string(data), w) {
			t.Errorf("recording lacks %s:\n%s", w, data)
		}
	}
}

// TestRecordShimFindsItself: askctl installed as "claude" first on PATH,
// told to record "claude", would find itself; it stops at once with a clear
// error instead of spawning itself until killed. Linked or copied.
func TestRecordShimFindsItself(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, how := range []string{"symlink", "copy"} {
		t.Run(how, func(t *testing.T) {
			dir := t.TempDir()
			shim := filepath.Join(dir, "claude")
			if how == "symlink" {
				err = os.Symlink(self, shim)
			} else {
				var b []byte
				if b, err = os.ReadFile(self); err == nil {
					err = os.WriteFile(shim, b, 0o755)
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, shim, "--verbose")
			cmd.Env = append(os.Environ(), envTestAsAskctl+"=1", "PATH="+dir+":"+os.Getenv("PATH"),
				envRecordCommand+"=claude", envRecordOut+"="+filepath.Join(dir, "rec.txtar"))
			cmd.Stdin = strings.NewReader("")
			out, err := cmd.CombinedOutput()
			if ctx.Err() != nil {
				t.Fatalf("the shim was still running after 20s: %s", out)
			}
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() == 0 || !strings.Contains(string(out), "askctl record would run itself") {
				t.Errorf("shim exited %v with %q; want a failure saying it would run itself", err, out)
			}
			if n := strings.Count(string(out), "would run itself"); n > 2 {
				t.Errorf("the error was printed %d times: it ran itself more than once", n)
			}
		})
	}
}

// TestModelServes: askctl model prints the environment for the CLI, serves
// the scenario's model turns, and stops cleanly when interrupted.
func TestModelServes(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	outR, outW := io.Pipe()
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"askctl", "model", "ask-single"}, func(string) string { return "" }, strings.NewReader(""), outW, &stderr)
		outW.Close()
	}()
	br := bufio.NewReader(outR)
	line, err := br.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "ANTHROPIC_BASE_URL=")
	if !ok || !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("first line %q, want ANTHROPIC_BASE_URL=http://127.0.0.1:…", line)
	}
	go io.Copy(io.Discard, br)
	resp, err := http.Post(url+"/v1/messages", "application/json", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"name":"AskUserQuestion"`) {
		t.Errorf("POST /v1/messages = %d %s", resp.StatusCode, body)
	}
	resp, err = http.Post(url+"/v2/other", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("POST /v2/other = %d, want 404", resp.StatusCode)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit %d after interrupt, want 0", code)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("askctl model did not stop")
	}
	if !strings.Contains(stderr.String(), "not POST /v2/other") {
		t.Errorf("the bad request was not logged: %s", stderr.String())
	}
}

// TestShowSeveralParsesBack: askctl scenarios --show with several names
// prints one archive whose files are the scenarios, each parsing back whole.
func TestShowSeveralParsesBack(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"askctl", "scenarios", "--show", "ask-single", "ask-skip"}, func(string) string { return "" }, strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	ar := txtar.Parse(stdout.Bytes())
	if len(ar.Files) != 2 {
		t.Fatalf("%d files in the archive, want 2", len(ar.Files))
	}
	for _, f := range ar.Files {
		data, err := txtar.Unquote(f.Data)
		if err != nil {
			t.Fatal(err)
		}
		sc, err := scenarios.Parse(f.Name, data)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := scenarios.FS.ReadFile(f.Name)
		if sc.Name+".txtar" != f.Name || !bytes.Equal(data, want) {
			t.Errorf("%s parsed back as %s, or differs from the built-in", f.Name, sc.Name)
		}
	}
}

// fakeclaudeMain is fakeclaude with its MCP client in process, as askctl
// runs it (the test binary links the SDK anyway).
func fakeclaudeMain() { fakeclaude.MainWith(mcpclient.Dialer{}) }
