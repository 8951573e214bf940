package conformance_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/askctl/askctl/conformance"
	"github.com/askctl/askctl/internal/testenv"
	"github.com/askctl/askctl/profile"
	"github.com/askctl/askctl/surface"
	"github.com/askctl/askctl/surface/browser"
	"github.com/rogpeppe/go-internal/testscript"
)

// askctlBin is askctl built for this test run, the reference bridge the
// profiles start; fakeclaude and fakeclaude-mcp are built next to it, as
// make build lays them out, and the claude shim runs that fakeclaude.
var askctlBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "askctl-conformance-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	askctlBin = filepath.Join(dir, "askctl")
	if out, err := exec.Command("go", "build", "-o", dir+string(filepath.Separator), "../cmd/askctl", "../cmd/fakeclaude", "../cmd/fakeclaude-mcp", "../examples/chatbot", "../examples/chatbot/chatbot-adapter").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building askctl, fakeclaude and fakeclaude-mcp: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	browser.StopAll()
	os.RemoveAll(dir)
	os.Exit(code)
}

// TestReferenceBridge: the reference bridge passes every case, over each
// kind of surface.
func TestReferenceBridge(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"ws", "http", "control-ws", "exec"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			p, err := profile.Load(filepath.Join("..", "profile", "builtin", "reference-"+kind+".json"))
			if err != nil {
				t.Fatal(err)
			}
			conformance.Run(t, conformance.Config{Profile: p, Askctl: askctlBin})
		})
	}
}

// TestChatbotExample runs the suite against examples/chatbot, a chat-style
// bridge written as a third party would (cards, typed numbers, no skip, no
// header, other tools put to the person), through its own exec adapter and
// profile, and holds every verdict to what that bridge is: the missing
// header fails SDK-DELIVER alone (cases that only show questions on the way
// are BLOCKED by it), cases that need a skip or a malformed answer are
// skipped naming the operation, and the rest pass, SDK-PASSTHROUGH's
// permit op and SDK-TIMEOUT among them.
func TestChatbotExample(t *testing.T) {
	t.Parallel()
	p, err := profile.Load(filepath.Join("..", "examples", "chatbot", "askctl-profile.json"))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(askctlBin)
	p.Start.Command, p.Surface.Command = filepath.Join(dir, "chatbot"), filepath.Join(dir, "chatbot-adapter")
	rep, err := conformance.RunSuite(context.Background(), conformance.Config{Profile: p, Askctl: askctlBin}, conformance.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"SDK-DELIVER":         conformance.Fail + ` header is ""`,
		"SDK-ISOLATION":       conformance.Blocked + " SDK-DELIVER",
		"SDK-PASSTHROUGH":     conformance.Blocked + " SDK-DELIVER",
		"SDK-SEQUENTIAL":      conformance.Blocked + " SDK-DELIVER",
		"UI-RECONNECT-REPLAY": conformance.Blocked + " SDK-DELIVER",
		"SDK-BAD-INPUT":       conformance.Skip + " no raw operation",
		"SDK-LATE-ANSWER":     conformance.Skip + " no skip operation",
		"SDK-NO-EMPTY":        conformance.Skip + " no skip operation",
		"SDK-SKIP-DENY":       conformance.Skip + " no skip operation",
		"UI-PERSIST":          conformance.Skip + " capability persist",
		"UI-TAKEOVER":         conformance.Skip + " capability takeover",
	}
	for _, r := range rep.Results {
		w := want[r.Case]
		if w == "" && strings.HasPrefix(r.Case, "MCP-") {
			w = conformance.Skip + " capability mcp"
		}
		if w == "" {
			w = conformance.Pass
		}
		status, detail, _ := strings.Cut(w, " ")
		if r.Status != status || !strings.Contains(r.Detail, detail) {
			t.Errorf("%s: %s (%s), want %s naming %q", r.Case, r.Status, r.Detail, status, detail)
		}
	}
}

// TestDimensionTable: README.md's dimension table names every generated
// row, so the documented coverage is the coverage.
func TestDimensionTable(t *testing.T) {
	data, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	for id, rows := range conformance.DimensionRows() {
		for _, r := range rows {
			if !strings.Contains(string(data), r) {
				t.Errorf("README.md's dimension table does not name %s's row %q", id, r)
			}
		}
	}
}

// TestOtherToolsPolicies: SDK-PASSTHROUGH checks whichever policy a profile
// declares for other tools. The reference bridge passes with allow (the
// profiles) and with deny (--other-tools deny); a bridge that allows what
// its profile says it denies, or denies what it says it allows, fails.
func TestOtherToolsPolicies(t *testing.T) {
	for _, tc := range []struct {
		flag, declared, want string
	}{
		{"deny", "deny", conformance.Pass},
		{"allow", "deny", conformance.Fail},
		{"deny", "allow", conformance.Fail},
	} {
		t.Run("bridge "+tc.flag+", profile "+tc.declared, func(t *testing.T) {
			t.Parallel()
			p, err := profile.Load(filepath.Join("..", "profile", "builtin", "reference-ws.json"))
			if err != nil {
				t.Fatal(err)
			}
			p.Start.Args = append(p.Start.Args, "--other-tools", tc.flag)
			p.Policy.OtherTools = tc.declared
			rep, err := conformance.RunSuite(context.Background(), conformance.Config{Profile: p, Askctl: askctlBin},
				conformance.RunOptions{Match: func(name string) bool { return name == "SDK-PASSTHROUGH" }})
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Results) != 1 || rep.Results[0].Status != tc.want {
				t.Fatalf("SDK-PASSTHROUGH: %+v, want %s", rep.Results, tc.want)
			}
		})
	}
}

// TestReferenceBridgeBrowser runs the whole suite through the reference
// bridge's page, in headless Chromium (profile/builtin/reference-browser.json): the
// browser adapter finds questions and controls by ARIA role and accessible
// name and acts as a person. Every case passes, but for the two whose
// operation a person on the page cannot perform (malformed or partial
// answers), which are skipped naming it.
func TestReferenceBridgeBrowser(t *testing.T) {
	testenv.Chromium(t)
	t.Parallel()
	p, err := profile.Load(filepath.Join("..", "profile", "builtin", "reference-browser.json"))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := conformance.RunSuite(context.Background(), conformance.Config{Profile: p, Askctl: askctlBin}, conformance.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// SDK-BAD-INPUT sends malformed answers, to questions the page does
	// not show. (A part of a request is sent as a person does, pressing
	// Send before answering the rest: SDK-ANSWER-ALL runs.)
	wantSkip := map[string]string{"SDK-BAD-INPUT": "answer operation"}
	for _, r := range rep.Results {
		switch {
		case wantSkip[r.Case] != "":
			if r.Status != conformance.Skip || !strings.Contains(r.Detail, wantSkip[r.Case]) {
				t.Errorf("%s: %s (%s), want a skip naming %q", r.Case, r.Status, r.Detail, wantSkip[r.Case])
			}
		case r.Status != conformance.Pass:
			t.Errorf("%s: %s: %s\n%s", r.Case, r.Status, r.Detail, r.Log)
		}
	}
}

var profileFlag = flag.String("bridge", os.Getenv("ASKCTL_CONFORMANCE_BRIDGE"), "a bridge profile to check (TestBridge); default $ASKCTL_CONFORMANCE_BRIDGE")

// TestBridge checks the bridge of -bridge PROFILE (or
// $ASKCTL_CONFORMANCE_BRIDGE): go test ./conformance -run TestBridge -bridge mybridge.json.
// With neither it has nothing to check, and says so.
func TestBridge(t *testing.T) {
	if *profileFlag == "" {
		t.Skip("no profile: pass -bridge FILE or set ASKCTL_CONFORMANCE_BRIDGE to check a bridge of yours")
	}
	p, err := profile.Load(*profileFlag)
	if err != nil {
		t.Fatal(err)
	}
	conformance.Run(t, conformance.Config{Profile: p, Askctl: askctlBin})
}

// TestReferenceBridgeRealAgent: the reference bridge passes every case with
// the real claude CLI 2.1.330 as its agent, against askctl's fake model API.
func TestReferenceBridgeRealAgent(t *testing.T) {
	claude := testenv.RealClaude(t)
	p, err := profile.Load(filepath.Join("..", "profile", "builtin", "reference-ws.json"))
	if err != nil {
		t.Fatal(err)
	}
	conformance.Run(t, conformance.Config{Profile: p, Askctl: askctlBin, RealClaude: claude})
}

var update = flag.Bool("update", false, "rewrite README.md's command reference")

// readmeMarker starts README.md's command reference, which runs to the end.
const readmeMarker = "<!-- commands: generated from conformance.Usage(); TestReadmeCommands checks it -->\n"

// TestReadmeCommands: README.md's command reference is the commands' usage
// (go test ./conformance -run TestReadmeCommands -update rewrites it).
func TestReadmeCommands(t *testing.T) {
	data, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	head, _, ok := strings.Cut(string(data), readmeMarker)
	if !ok {
		t.Fatal("README.md has no command reference marker")
	}
	want := head + readmeMarker + "```\n" + strings.Join(conformance.Usage(), "\n") + "\n```\n"
	if *update {
		if err := os.WriteFile("README.md", []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if string(data) != want {
		t.Errorf("README.md's command reference is stale: run go test ./conformance -run TestReadmeCommands -update")
	}
}

// TestSetupFailureStopsTheRun: a bridge that never spawns the harness's
// claude stops the run after the first case, with ErrBridgeWontStart; the
// rest are not run, not failed.
func TestSetupFailureStopsTheRun(t *testing.T) {
	p, err := profile.Parse("wrong-claude.json", []byte(`{"name": "a bridge that spawns another claude",
		"start": {"command": "${ASKCTL}", "args": ["serve", "--addr", "127.0.0.1:${PORT}", "--state", "${STATE}", "--claude", "/bin/false"]},
		"ready": {"url": "http://127.0.0.1:${PORT}/api/health"}, "claude": "env:NOTHING",
		"surface": {"kind": "http", "url": "http://127.0.0.1:${PORT}", "token_file": "${STATE}/token"},
		"capabilities": {"sdk": true}}`))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	rep, err := conformance.RunSuite(context.Background(), conformance.Config{Profile: p, Askctl: askctlBin, ClaimTimeout: time.Second},
		conformance.RunOptions{Parallel: 1})
	// The bridge either takes the session and spawns no agent the harness
	// hears of, or refuses it when its CLI exits at once: a setup failure
	// either way, never a requirement failing.
	if !errors.Is(err, conformance.ErrBridgeWontStart) || !strings.Contains(err.Error(), "no agent asked the harness") && !strings.Contains(err.Error(), "exited at once") {
		t.Fatalf("err = %v", err)
	}
	var failed, notRun int
	for _, r := range rep.Results {
		switch {
		case r.Status == conformance.Fail:
			failed++
		case r.Status == conformance.NotRun:
			notRun++
		}
	}
	if failed != 0 || notRun != len(rep.Results) {
		t.Errorf("%d failed, %d not run of %d; want every case not run, none failed: a bridge that cannot be set up is no verdict", failed, notRun, len(rep.Results))
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("took %v", d)
	}
}

// TestInterruptedRun: ending the context stops the run at once; cases cut
// short are reported interrupted, not failed.
func TestInterruptedRun(t *testing.T) {
	p, err := profile.Load(filepath.Join("..", "profile", "builtin", "reference-ws.json"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	start := time.Now()
	rep, err := conformance.RunSuite(ctx, conformance.Config{Profile: p, Askctl: askctlBin}, conformance.RunOptions{Parallel: 2})
	if !errors.Is(err, conformance.ErrInterrupted) {
		t.Fatalf("err = %v", err)
	}
	interrupted := 0
	for _, r := range rep.Results {
		if r.Status == conformance.Fail {
			t.Errorf("%s failed after the interrupt: %s", r.Case, r.Detail)
		}
		if r.Status == conformance.Skip && strings.Contains(r.Detail, "interrupt") {
			t.Errorf("%s is reported skipped, not interrupted: %s", r.Case, r.Detail)
		}
		if r.Status == conformance.Interrupted {
			interrupted++
		}
	}
	if interrupted == 0 {
		t.Error("no case was reported interrupted")
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the run took %v to stop", d)
	}
}

// TestUnsupportedIsSkip: a surface with no such operation (a chat with no
// skip button) says so, and the case that needs it is a SKIP naming the
// operation: never a FAIL, never a PASS. A blank answer the chat drops
// (ignored) passes as refused, and the case goes on.
func TestUnsupportedIsSkip(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("the exec example needs python3")
	}
	p, err := profile.Load(filepath.Join("..", "profile", "builtin", "reference-exec.json"))
	if err != nil {
		t.Fatal(err)
	}
	p.Surface.Args = append(p.Surface.Args, "--no-skip", "--drop-empty")
	rep, err := conformance.RunSuite(context.Background(), conformance.Config{Profile: p, Askctl: askctlBin},
		conformance.RunOptions{Match: func(n string) bool { return n == "SDK-SKIP-DENY" || n == "SDK-ANSWER-SINGLE" || n == "SDK-NO-EMPTY" }})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Results {
		switch r.Case {
		case "SDK-SKIP-DENY":
			if r.Status != conformance.Skip || !strings.Contains(r.Detail, "no skip operation") || !strings.Contains(r.Detail, "no skip button") {
				t.Errorf("SDK-SKIP-DENY on a surface with no skip: %s %q", r.Status, r.Detail)
			}
		case "SDK-NO-EMPTY":
			// A blank answer dropped by the chat is as good as refused; the
			// skip half of the case then needs the skip it lacks.
			if r.Status != conformance.Skip || !strings.Contains(r.Detail, "no skip operation") {
				t.Errorf("SDK-NO-EMPTY on a chat that drops blanks and has no skip: %s %q", r.Status, r.Detail)
			}
		case "SDK-ANSWER-SINGLE":
			if r.Status != conformance.Pass {
				t.Errorf("SDK-ANSWER-SINGLE: %s %s", r.Status, r.Detail)
			}
		}
	}
}

// TestEveryCaseHearsTheAgentsVerdict: every session a case starts ends with
// check (which waits for the agent's own verdict on every answer it got)
// or is named in a "# no check: ALIAS — why" line: a case cannot pass
// while an agent rejected what it was given.
func TestEveryCaseHearsTheAgentsVerdict(t *testing.T) {
	for _, name := range conformance.CaseNames() {
		data, err := conformance.CaseScript(name)
		if err != nil {
			t.Fatal(err)
		}
		started, checked := map[string]bool{}, map[string]bool{}
		for _, line := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(line, "-- ") {
				break // the case's files
			}
			if why, ok := strings.CutPrefix(line, "# no check: "); ok {
				checked[strings.Fields(why)[0]] = true
				continue
			}
			if i := strings.Index(line, "] "); strings.HasPrefix(line, "[") && i > 0 {
				line = line[i+2:] // a condition's prefix
			}
			f := strings.Fields(line)
			for len(f) > 1 && strings.HasPrefix(f[1], "-") {
				f = append(f[:1], f[2:]...) // flags
			}
			switch {
			case len(f) >= 2 && f[0] == "start":
				started[f[1]] = true
			case len(f) >= 2 && f[0] == "check":
				checked[f[1]] = true
			}
		}
		for alias := range started {
			if !checked[alias] {
				t.Errorf("%s starts session %s and never checks it: end with check %s, or say why not (# no check: %s — …)", name, alias, alias, alias)
			}
		}
	}
}

// TestTooLateIsSkip: an answer the case sends after the declared timeout,
// refused as timed out, is a SKIP that says the case was late, not a
// FAIL of the bridge; the same answer in time passes.
func TestTooLateIsSkip(t *testing.T) {
	p, err := profile.Load(filepath.Join("..", "profile", "builtin", "reference-ws.json"))
	if err != nil {
		t.Fatal(err)
	}
	body := func(pause string) string {
		return "requirement SDK-ANSWER-SINGLE\nstart s1 ask-single\nawait s1 question\n" + pause + "answer s1\nawait s1 answered\ncheck s1\n"
	}
	replay := func(pause string) string {
		return "requirement UI-RECONNECT-REPLAY\nstart s1 ask-single\nawait s1 question\n" + pause + "connect s1 c2\nawait -conn c2 -same s1 question\nanswer -conn c2 s1\nawait s1 answered\ncheck s1\n"
	}
	// The bridge's timeout is the declared one scaled by the slow factor
	// (make race runs with ASKCTL_SLOW=2): the late answer comes a second
	// after that. A case that waits as long without naming $TIMEOUT runs
	// a bridge whose timeout is long (conformance.UnwaitedTimeout), and
	// its answer is in time.
	slow, _ := strconv.ParseFloat(os.Getenv(conformance.EnvSlow), 64)
	late := p.WithSlowTimeout(slow).Capabilities.Timeout.D() + time.Second
	results := runCaseFiles(t, p, map[string]string{
		"late": body("sleep $TIMEOUT_GRACE\n"), "slow": body(fmt.Sprintf("sleep %dms\n", late.Milliseconds())), "in-time": body(""),
		// A question awaited again past its timeout, which the bridge says
		// it ended: the explorer's schedule through a page, two restarts
		// long, on a busy machine.
		"replay-late":    replay("sleep $TIMEOUT_GRACE\n"),
		"replay-in-time": replay(""),
		// Its agent killed with the bridge: only a status says it is over.
		"restart-late": replay("restart -kill\nsleep $TIMEOUT_GRACE\n"),
	})
	for _, r := range results {
		switch r.Case {
		case "late":
			if r.Status != conformance.Skip || !strings.Contains(r.Detail, "too late to judge") {
				t.Errorf("an answer after the timeout: %s %q, want a SKIP saying the case was late", r.Status, r.Detail)
			}
		case "slow":
			if r.Status != conformance.Pass {
				t.Errorf("an answer as late, in a case that names no $TIMEOUT: %s %s", r.Status, r.Detail)
			}
		case "in-time", "replay-in-time":
			if r.Status != conformance.Pass {
				t.Errorf("%s: %s %s", r.Case, r.Status, r.Detail)
			}
		case "replay-late", "restart-late":
			if r.Status != conformance.Skip || !strings.Contains(r.Detail, "too late to judge") || !strings.Contains(r.Detail, "awaited again") {
				t.Errorf("%s: a question awaited again after its timeout: %s %q, want a SKIP saying the case was late", r.Case, r.Status, r.Detail)
			}
		}
	}
}

// TestNothingOutlivesItsCase: the agents a case's bridge spawned through
// the harness's shim are gone when the case ends, however the bridge
// stopped them. The real CLI here is a script that ignores its stdin and
// runs until killed; the run is interrupted once it runs. Seen failing
// without DieWithLauncher: the shim was killed, and the CLI ran on in its
// own process group (a real CLI with an MCP call then wrote its session
// file into a removed work directory, 20 s later: CI).
func TestNothingOutlivesItsCase(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	p, err := profile.Load(filepath.Join("..", "profile", "builtin", "reference-ws.json"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "stubborn-claude")
	started := script + ".started"
	if err := os.WriteFile(script, []byte("#!/bin/sh\ncase \"$1\" in --version) echo '2.1.332 (Claude Code)'; exit 0;; esac\ntouch \"$0.started\"\nwhile :; do sleep 1; done\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := conformance.RunSuite(ctx, conformance.Config{Profile: p, Askctl: askctlBin, RealClaude: script},
			conformance.RunOptions{Parallel: 1, Match: func(n string) bool { return n == "SDK-ANSWER-SINGLE" }})
		done <- err
	}()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(started); err == nil {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("the run ended before the CLI started: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the CLI did not start within 60s")
		}
	}
	cancel()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("the interrupted run did not end within 60s")
	}
	var left []int
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if left = processesOf(script); len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			break
		}
	}
	var states []string
	for _, pid := range left {
		stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		states = append(states, strings.TrimSpace(string(stat)))
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	t.Errorf("the CLI outlived its case: %s still runs: %s", script, strings.Join(states, "; "))
}

// processesOf lists the processes whose command line holds path.
func processesOf(path string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline")); err == nil && bytes.Contains(cmdline, []byte(path)) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// TestDroppedRefusalsFail: a surface that says nothing when the bridge
// refuses a late or malformed answer (ignored) fails SDK-LATE-ANSWER and
// SDK-BAD-INPUT, which want a clear error, and only those: a blank answer
// it drops is still as good as refused (SDK-NO-EMPTY).
func TestDroppedRefusalsFail(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("the exec example needs python3")
	}
	p, err := profile.Load(filepath.Join("..", "profile", "builtin", "reference-exec.json"))
	if err != nil {
		t.Fatal(err)
	}
	p.Surface.Args = append(p.Surface.Args, "--drop-refused")
	cases := []string{"SDK-LATE-ANSWER", "SDK-BAD-INPUT", "SDK-NO-EMPTY", "SDK-ANSWER-SINGLE"}
	rep, err := conformance.RunSuite(context.Background(), conformance.Config{Profile: p, Askctl: askctlBin},
		conformance.RunOptions{Match: func(n string) bool { return slices.Contains(cases, n) }})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Results {
		want := conformance.Pass
		if r.Case == "SDK-LATE-ANSWER" || r.Case == "SDK-BAD-INPUT" {
			want = conformance.Fail
		}
		if r.Status != want || want == conformance.Fail && !strings.Contains(r.Detail, "dropped without a word") {
			t.Errorf("%s: %s %q, want %s", r.Case, r.Status, r.Detail, want)
		}
	}
}

// TestPreflight: a program the profile starts that is not there stops the
// run before any case, every case NOT-RUN with the field and the path.
func TestPreflight(t *testing.T) {
	p, err := profile.Parse(filepath.Join(t.TempDir(), "mine.json"), []byte(`{"name": "a bridge not built yet",
		"start": {"command": "./bin/mybridge", "args": ["--claude", "${CLAUDE}", "--port", "${PORT}"]},
		"ready": {"url": "http://127.0.0.1:${PORT}/health"}, "claude": "arg",
		"surface": {"kind": "http", "url": "http://127.0.0.1:${PORT}"}, "capabilities": {"sdk": true}}`))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := conformance.RunSuite(context.Background(), conformance.Config{Profile: p, Askctl: askctlBin}, conformance.RunOptions{})
	if !errors.Is(err, conformance.ErrBridgeWontStart) || !strings.Contains(err.Error(), `start.command "./bin/mybridge"`) {
		t.Fatalf("err = %v", err)
	}
	for _, r := range rep.Results {
		if r.Status != conformance.NotRun || !strings.Contains(r.Detail, "mybridge") {
			t.Errorf("%s: %s %q, want NOT-RUN naming the program", r.Case, r.Status, r.Detail)
		}
	}
	if len(rep.Results) != len(conformance.CaseNames()) {
		t.Errorf("%d cases reported, want all %d", len(rep.Results), len(conformance.CaseNames()))
	}
}

// TestTimeoutIsNoOtherBreach: on a machine too slow for the bridge's
// timeout (here a timeout of 200ms), a question that times out while a case
// watches that nothing answers it is a SKIP saying the case was too late,
// never another requirement's FAIL.
func TestTimeoutIsNoOtherBreach(t *testing.T) {
	p, err := profile.Load(filepath.Join("..", "profile", "builtin", "reference-ws.json"))
	if err != nil {
		t.Fatal(err)
	}
	p.Capabilities.Timeout = surface.Duration(200 * time.Millisecond) // the bridge is started with it: ${TIMEOUT}
	rep, err := conformance.RunSuite(context.Background(), conformance.Config{Profile: p, Askctl: askctlBin},
		conformance.RunOptions{Match: func(n string) bool { return n == "SDK-SKIP-DENY" }})
	if err != nil {
		t.Fatal(err)
	}
	r := rep.Results[0]
	late := 0
	for _, row := range r.Rows {
		switch {
		case row.Status == conformance.Skip && strings.Contains(row.Detail, "too late to judge"):
			late++
		case row.Status != conformance.Pass:
			t.Errorf("row %q: %s %s", row.Name, row.Status, row.Detail)
		}
	}
	if r.Status == conformance.Fail {
		t.Errorf("SDK-SKIP-DENY with a 200ms timeout: %s %s", r.Status, r.Detail)
	}
	t.Logf("%s; %d row(s) too late to judge", r.Status, late)
}

// TestMissingOperationsAreSkips: an adapter with only start and open
// written (every other operation unsupported, as askctl init's skeleton
// has them) gets SKIPs naming what to write, never a FAIL (a new user's
// trial had three: the race's answers and the pending list).
func TestMissingOperationsAreSkips(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("the exec example needs python3")
	}
	p, err := profile.Load(filepath.Join("..", "profile", "builtin", "reference-exec.json"))
	if err != nil {
		t.Fatal(err)
	}
	p.Surface.Args = append(p.Surface.Args, "--lacks", "answer,pending,skip,raw,permit,drop,resume,close")
	rep, err := conformance.RunSuite(context.Background(), conformance.Config{Profile: p, Askctl: askctlBin}, conformance.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Results {
		if r.Status == conformance.Fail || r.Status == conformance.Blocked {
			t.Errorf("%s: %s %s", r.Case, r.Status, r.Detail)
		}
		if r.Status == conformance.Skip && !strings.Contains(r.Detail, "not written yet") && !strings.Contains(r.Detail, "does not declare capability") {
			t.Errorf("%s: skipped for %q, want the missing operation named", r.Case, r.Detail)
		}
	}
}

// A case that names no $TIMEOUT runs a bridge whose timeout is long, so
// that slow steps on a busy machine meet no deadline the case does not
// check; a case that names one gets the declared timeout. A page's
// reconnect row lost its other session's question to the 10 s timeout
// once the CPUs were busy (UI-RECONNECT-REPLAY, 1 run in 3).
func TestTimeoutOnlyWhereTheCaseWaitsForIt(t *testing.T) {
	p, err := profile.Load(filepath.Join("..", "profile", "builtin", "reference-ws.json"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, script := range map[string]string{
		"waits":   "timeout-is " + profile.TimeoutVar(p.Capabilities.Timeout.D()) + " # then: await -timeout $TIMEOUT_WAIT ALIAS answered\n",
		"braced":  "timeout-is " + profile.TimeoutVar(p.Capabilities.Timeout.D()) + " # then: await -timeout ${TIMEOUT_WAIT} ALIAS answered\n",
		"unwaits": "timeout-is 600s\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name+".txtar"), []byte(script), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	params := testscript.Params{Dir: dir, Cmds: map[string]func(*testscript.TestScript, bool, []string){
		"timeout-is": func(ts *testscript.TestScript, _ bool, args []string) {
			if got := ts.Getenv("TIMEOUT"); got != args[0] {
				ts.Fatalf("the bridge's timeout is %s, want %s", got, args[0])
			}
		},
	}}
	if err := conformance.Setup(&params, conformance.Config{Profile: p, Askctl: askctlBin, Slow: 1}); err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, params)
}

// TestCrashRowsFailWhereNothingCrashes: a profile that declares crash
// points its bridge does not have (the arming variable is one askctl serve
// ignores) fails the row at crashed, naming the point, instead of passing
// or hanging; a point it does not declare leaves the row skipped.
func TestCrashRowsFailWhereNothingCrashes(t *testing.T) {
	p, err := profile.Load(filepath.Join("..", "profile", "builtin", "reference-ws.json"))
	if err != nil {
		t.Fatal(err)
	}
	p.Capabilities.Crash = &profile.Crash{Env: "ASKCTL_NOT_A_CRASH_SWITCH", Points: []string{profile.CrashAnswerCommitted}}
	guarded := func(point string) string {
		return fmt.Sprintf("requirement UI-PERSIST\n[crash:%[1]s] restart -crash-at %[1]s\n[crash:%[1]s] start s1 late-answer\n[crash:%[1]s] await s1 question\n[crash:%[1]s] answer -crash s1 'Which database should I use?=Postgres'\n[crash:%[1]s] crashed -timeout 2s\n", point)
	}
	results := runCaseFiles(t, p, map[string]string{
		"armed":      guarded(profile.CrashAnswerCommitted),
		"undeclared": guarded(profile.CrashSkipCommitted),
		"unguarded":  "requirement UI-PERSIST\nrestart -crash-at skip-committed\nstart s1 ask-single\n",
	})
	for _, r := range results {
		switch r.Case {
		case "armed":
			if r.Status != conformance.Fail || !strings.Contains(r.Detail, "never got to crash point answer-committed") || !strings.Contains(r.Detail, "the operation armed to crash it") {
				t.Errorf("a bridge that does not crash where armed: %s %q, want a FAIL naming the point and what the answer got", r.Status, r.Detail)
			}
		case "undeclared":
			if r.Status == conformance.Fail {
				t.Errorf("a row of a point the profile does not declare: %s %q, want it not run", r.Status, r.Detail)
			}
		case "unguarded":
			if r.Status != conformance.Skip || !strings.Contains(r.Detail, "skip-committed") {
				t.Errorf("a case that arms a point the profile does not declare: %s %q, want a SKIP naming it", r.Status, r.Detail)
			}
		}
	}
}

// TestUndeclaredCrashRowsAreNamed: UI-PERSIST's crash rows of points the
// profile does not declare are SKIPs naming each point, so the report says
// what was not checked, and the row of the point declared runs and passes.
func TestUndeclaredCrashRowsAreNamed(t *testing.T) {
	if testing.Short() {
		t.Skip("runs UI-PERSIST against the reference bridge")
	}
	t.Parallel()
	p, err := profile.Load(filepath.Join("..", "profile", "builtin", "reference-ws.json"))
	if err != nil {
		t.Fatal(err)
	}
	c := *p.Capabilities.Crash
	c.Points = []string{profile.CrashAnswerCommitted}
	p.Capabilities.Crash = &c
	rep, err := conformance.RunSuite(context.Background(), conformance.Config{Profile: p, Askctl: askctlBin},
		conformance.RunOptions{Match: func(n string) bool { return n == "UI-PERSIST" }})
	if err != nil {
		t.Fatal(err)
	}
	r := rep.Results[0]
	named := map[string]string{}
	for _, row := range r.Rows {
		named[row.Name] = row.Status + " " + row.Detail
	}
	want := map[string]string{
		"a crash with an answer stored, nothing of it written to the agent": conformance.Pass,
		"a crash with a skip stored, its deny not written":                  conformance.Skip + " the profile declares no crash point skip-committed",
		"a crash with a timeout stored, its deny not written":               conformance.Skip + " the profile declares no crash point expiry-committed",
		"a crash with a question read, not yet stored":                      conformance.Skip + " the profile declares no crash point ask-read",
	}
	if r.Status != conformance.Pass {
		t.Errorf("UI-PERSIST with one crash point declared: %s %s", r.Status, r.Detail)
	}
	for name, w := range want {
		if got, ok := named[name]; !ok || !strings.HasPrefix(got, w) {
			t.Errorf("row %q: %q, want it to begin %q", name, got, w)
		}
	}
}

// TestCrashThroughAWrapper: a bridge that start runs through a shell
// (sh -c, as npm start does) crashes where armed, and the shell exits 137
// for it: that is the crash, and the row passes; the agent resumed, the
// shell passes a plain restart's TERM on. (Restarted before the resumed
// agent ended its turn, the agent died with the bridge: a busy machine
// failed the case so.) A plain restart after an armed one starts the
// bridge disarmed.
func TestCrashThroughAWrapper(t *testing.T) {
	p, err := profile.Load(filepath.Join("..", "profile", "builtin", "reference-ws.json"))
	if err != nil {
		t.Fatal(err)
	}
	st := *p.Start
	// The shell passes a TERM on and waits for the bridge to end, as npm
	// start does, and exits with the bridge's status.
	st.Args = []string{"-c", `trap 'kill $p; wait $p; exit 143' TERM; ` + st.Command + " " + strings.Join(st.Args, " ") + ` & p=$!; wait $p; exit $?`}
	st.Command = "sh"
	p.Start = &st
	results := runCaseFiles(t, p, map[string]string{
		"wrapped": "requirement UI-PERSIST\nrestart -crash-at answer-committed\nstart s1 late-answer\nawait s1 question\nanswer -crash s1 'Which database should I use?=Postgres'\ncrashed\nawait -timeout 20s s1 resumed\nrestart\ncheck s1\n",
		// Armed, then restarted plainly: disarmed, an answer goes through.
		"disarmed": "requirement SDK-ANSWER-SINGLE\nrestart -crash-at answer-committed\nrestart\nstart s1 ask-single\nawait s1 question\nanswer s1\nawait s1 answered\ncheck s1\n",
	})
	for _, r := range results {
		if r.Status != conformance.Pass {
			t.Errorf("%s (through sh -c): %s %s", r.Case, r.Status, r.Detail)
		}
	}
}

// TestConnectAfterWithoutEventIDs: a surface whose events carry no ids
// (ws) has no connection opened after an id: the case is skipped, naming
// the operation; and repeat runs its command as many times as it says.
func TestConnectAfterWithoutEventIDs(t *testing.T) {
	p, err := profile.Load(filepath.Join("..", "profile", "builtin", "reference-ws.json"))
	if err != nil {
		t.Fatal(err)
	}
	const head = "requirement UI-RECONNECT-REPLAY\nstart s1 ask-single\nawait s1 question\n"
	results := runCaseFiles(t, p, map[string]string{
		"after":  head + "connect -after 0 s1 x\n",
		"repeat": head + "repeat 3 connect s1 x\nanswer s1\nawait s1 answered\n",
	})
	for _, r := range results {
		switch r.Case {
		case "after":
			if r.Status != conformance.Skip || !strings.Contains(r.Detail, "connect -after") {
				t.Errorf("connect -after over ws: %s %q, want a SKIP naming it", r.Status, r.Detail)
			}
		case "repeat":
			// The second connect of one name fails: it is open.
			if r.Status != conformance.Fail || !strings.Contains(r.Detail, "connection x is open") {
				t.Errorf("repeat 3 connect: %s %q, want the second to fail", r.Status, r.Detail)
			}
		}
	}
}

// runCaseFiles runs each case (name: its script) against p's bridge, and
// returns the results by case, one for each.
func runCaseFiles(t *testing.T, p *profile.Profile, cases map[string]string) map[string]conformance.Result {
	t.Helper()
	dir := t.TempDir()
	var files []string
	for name, body := range cases {
		f := filepath.Join(dir, name+".txtar")
		if err := os.WriteFile(f, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	rep, err := conformance.RunSuite(context.Background(), conformance.Config{Profile: p, Askctl: askctlBin}, conformance.RunOptions{Files: files})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]conformance.Result{}
	for _, r := range rep.Results {
		out[r.Case] = r
	}
	if len(out) != len(cases) {
		t.Fatalf("%d results, want %d: %+v", len(rep.Results), len(cases), rep.Results)
	}
	return out
}
