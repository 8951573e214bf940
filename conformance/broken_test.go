package conformance_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/askctl/askctl/conformance"
	"github.com/askctl/askctl/internal/testenv"
	"github.com/askctl/askctl/profile"
)

// defects maps each defect a broken bridge can have (bridge/defect_on.go)
// to the case named for it: the one that must catch it.
var defects = map[string]string{
	"skip-allow-empty":     "SDK-SKIP-DENY",
	"multi-comma":          "SDK-ANSWER-MULTI",
	"multi-one-label":      "SDK-ANSWER-MULTI",
	"keys-index":           "SDK-ANSWER-SINGLE",
	"no-timeout":           "SDK-TIMEOUT",
	"timeout-allow":        "SDK-TIMEOUT",
	"late-forwarded":       "SDK-LATE-ANSWER",
	"double-answer":        "SDK-FIRST-WINS",
	"lost-on-reconnect":    "UI-RECONNECT-REPLAY",
	"takeover-ignored":     "UI-TAKEOVER",
	"sessions-crossed":     "SDK-ISOLATION",
	"descriptions-dropped": "SDK-DELIVER",
	"cancel-ignored":       "SDK-CANCEL",
	"lost-on-restart":      "UI-PERSIST",
	"partial-sent":         "SDK-ANSWER-ALL",
	"mcp-timeout-empty":    "MCP-TIMEOUT",
	"mcp-skip-success":     "MCP-SKIP",
	"mcp-multi-first":      "MCP-MULTI",
	"mcp-never-returns":    "MCP-ANSWER",
	// Two requests of one session pending at once (one model response
	// calling two concurrency-safe tools): each is its own.
	"skip-other-pending":            "SDK-SKIP-DENY",
	"passthrough-withdraws-pending": "SDK-PASSTHROUGH",
	// The sixth held-out batch's: a 40 KB answer, past a WebSocket
	// library's default read limit, which the model's own words never are.
	"ws-read-limit-default": "SDK-ANSWER-OTHER",
	// A line of the agent's past a line reader's default bound: the
	// model's 200 KB message before its question.
	"agent-scanner-64k": "SDK-DELIVER",
	// ask_user called with the question alone, as its schema allows.
	"mcp-options-required": "MCP-ANSWER",
	// Every live status says nobody waits (the sixth held-out batch).
	"status-read-without-waiting": "UI-STATUS",
	// Requests routed by requires_user_interaction: ExitPlanMode's prompt
	// taken for a question (the seventh held-out batch).
	"route-by-interaction-flag": "SDK-PASSTHROUGH",
	// The eighth held-out batch's: a reply counted delivered on the
	// tool result the agent writes as its stdin closes (fakeclaude writes
	// it, as the CLI does, though nobody reads its stdout); a skip told to
	// ask_user as a withdrawal; answers of the wrong shape over /ws.
	"redeliver-any-tool-result": "UI-PERSIST",
	"mcp-skip-withdrawn":        "MCP-SKIP",
	"ws-empty-answers-skip":     "SDK-BAD-INPUT",
	// The ninth held-out batch's: a restart moves a deadline; ask_user's
	// question changed; a stopped session keeps its question (with a CLI
	// that does not withdraw it itself: defectCLI).
	"restart-deadline-renewed": "SDK-TIMEOUT",
	"mcp-question-trimmed":     "MCP-ANSWER",
	"stop-keeps-questions":     "SDK-AGENT-EXIT",
	// The tenth held-out batch's: a graceful restart (SIGTERM) whose
	// stopping agents withdraw what waits; a reply not found in what the
	// agent left after a crash as it was written, and told again; a
	// malformed answer refused as if its question had ended; ask_user's
	// schema with an option's label optional; the person's own words
	// quoted in ask_user's result.
	"stop-before-closing":           "UI-PERSIST",
	"redeliver-matched-on-block-id": "UI-PERSIST",
	"bad-answer-reported-resolved":  "SDK-BAD-INPUT",
	"mcp-option-label-optional":     "MCP-LIST",
	"mcp-free-text-quoted":          "MCP-ANSWER",
	// and one no case could meet then: an ask_user call the CLI ends
	// keeps its question (a scenario's mcp step takes cancel_after now).
	"mcp-cancelled-call-keeps-question": "SDK-CANCEL",
	// The eleventh held-out batch's: a body with more after its JSON
	// value; a ws skip that carries answers; an MCP agent's end that
	// withdraws every session's question; a late answer not stored as
	// due, lost in a crash before its resume (crash point
	// resume-committed).
	"trailing-json-accepted":          "SDK-BAD-INPUT",
	"ws-skip-with-answers-allowed":    "SDK-SKIP-DENY",
	"mcp-end-withdraws-every-session": "MCP-CONCURRENT",
	"late-answer-not-stored-due":      "UI-PERSIST",
}

// defectCLI are the defects only an older claude release shows, with the
// release fakeclaude plays for them: the newer ones do the bridge's work.
var defectCLI = map[string]string{
	"stop-keeps-questions": "oldest", // before 2.1.328 a closed stdin leaves the request pending
}

// buildBroken builds askctl with the broken bridges (-tags askctl_broken),
// once for the tests that need it, beside askctlBin.
func buildBroken(t *testing.T) string {
	t.Helper()
	bin, err := brokenOnce()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

var brokenOnce = sync.OnceValues(func() (string, error) {
	bin := filepath.Join(filepath.Dir(askctlBin), "askctl-broken")
	if out, err := exec.Command("go", "build", "-tags", "askctl_broken", "-o", bin, "../cmd/askctl").CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the broken bridges: %v\n%s", err, out)
	}
	return bin, nil
})

// brokenSetup is what a test of the broken bridges needs: askctl built
// with them (not under -short) and the reference profile over kind.
func brokenSetup(t *testing.T, kind string) (bin string, base *profile.Profile) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds askctl with the broken bridges")
	}
	bin = buildBroken(t)
	base, err := profile.Load(filepath.Join("..", "profile", "builtin", "reference-"+kind+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return bin, base
}

// brokenProfile is base, its bridge started with defect d.
func brokenProfile(base *profile.Profile, d string) *profile.Profile {
	p := *base
	st := *base.Start
	st.Env = map[string]string{"ASKCTL_DEFECT": d}
	p.Start = &st
	if base.MCP != nil {
		// The MCP server runs beside the bridge, started by the CLI the
		// harness starts for an MCP session: its defects are in askctl
		// mcp (internal/mcpask).
		m := *base.MCP
		m.Env = map[string]string{"ASKCTL_DEFECT": d}
		for k, v := range base.MCP.Env {
			m.Env[k] = v
		}
		p.MCP = &m
	}
	p.Name = "broken bridge: " + d
	return &p
}

// TestBrokenBridges proves the suite can fail: askctl built with
// -tags askctl_broken serves bridges with one defect each, and the suite
// run against each must fail the case named for the defect. With
// ASKCTL_BROKEN_TABLE=FILE the whole suite runs against each, and the
// cases that fail too are written to FILE.
func TestBrokenBridges(t *testing.T) {
	if testing.Short() {
		t.Skip("builds askctl with the broken bridges and runs the suite once per defect")
	}
	t.Parallel()
	bin := buildBroken(t)
	profiles := map[string]*profile.Profile{}
	for _, kind := range []string{"ws", "http"} {
		p, err := profile.Load(filepath.Join("..", "profile", "builtin", "reference-"+kind+".json"))
		if err != nil {
			t.Fatal(err)
		}
		profiles[kind] = p
	}
	// Every defect over ws; the one whose hook differs per surface over
	// http too.
	names := make([]string, 0, len(defects))
	for d := range defects {
		names = append(names, d+"/ws")
	}
	names = append(names, "sessions-crossed/http")
	sort.Strings(names)
	var mu sync.Mutex
	table := map[string][]string{}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d, kind, _ := strings.Cut(name, "/")
			base := profiles[kind]
			p := brokenProfile(base, d)
			// The case named for the defect; the whole suite for the defect
			// whose BLOCKED attribution is checked, and for every defect
			// when ASKCTL_BROKEN_TABLE asks for the table of what each one
			// fails (make test runs in a minute less without it).
			var match func(string) bool
			if os.Getenv("ASKCTL_BROKEN_TABLE") == "" && d != "descriptions-dropped" {
				match = func(n string) bool { return n == defects[d] }
			}
			rep, err := conformance.RunSuite(context.Background(), conformance.Config{Profile: p, Askctl: bin, CLIVersion: defectCLI[d]}, conformance.RunOptions{Parallel: 3, Match: match})
			if err != nil {
				t.Fatal(err)
			}
			failing := rep.Failing()
			mu.Lock()
			table[name] = failing
			mu.Unlock()
			want := defects[d]
			if !slices.Contains(failing, want) {
				t.Errorf("defect %s: case %s passed; it must catch the defect (failing: %v)", d, want, failing)
			}
			for _, r := range rep.Results {
				if r.Case == want && r.Status == conformance.Fail {
					t.Logf("%s caught by %s: %s", d, want, r.Detail)
				}
			}
			if d == "descriptions-dropped" {
				// One defect, one FAIL: the cases that only need delivery
				// as a precondition are BLOCKED by SDK-DELIVER.
				blocked := 0
				for _, r := range rep.Results {
					if r.Status == conformance.Blocked {
						blocked++
						if !strings.HasPrefix(r.Detail, "BLOCKED by SDK-DELIVER") {
							t.Errorf("%s: %s", r.Case, r.Detail)
						}
					}
				}
				if !slices.Equal(failing, []string{"SDK-DELIVER"}) || blocked == 0 {
					t.Errorf("descriptions dropped: failing %v, %d blocked; want SDK-DELIVER alone failing, and the cases it blocks BLOCKED", failing, blocked)
				}
			}
		})
	}
	t.Cleanup(func() {
		var b strings.Builder
		for _, d := range names {
			b.WriteString(d + " → fails " + strings.Join(table[d], ", ") + "\n")
		}
		t.Logf("cases failing per defect:\n%s", b.String())
		if os.Getenv("ASKCTL_BROKEN_TABLE") != "" {
			_ = os.WriteFile(os.Getenv("ASKCTL_BROKEN_TABLE"), []byte(b.String()), 0o644)
		}
	})
}

// fakeAgentOnly are the defects only the fake agent's rows reach, each
// with why the real CLI, driven by the fake model API, does not.
var fakeAgentOnly = map[string]string{
	"route-by-interaction-flag": "its row is ExitPlanMode's prompt, which the real CLI sends only in plan mode; TestBrokenBridges catches it with the fake agent",
	"redeliver-any-tool-result": "the real CLI, as the harness runs it, keeps its session files in a home of its own, which the bridge " +
		"does not read, so it resumes every crashed session (as UI-PERSIST's ask-read row says); TestBrokenBridges catches it with the fake agent",
	"redeliver-matched-on-block-id": "its row is a crash as the answer is written to the agent, which the bridge tells from a loss by " +
		"what the agent left in its session file: the real CLI, as the harness runs it, keeps it in a home of its own (UI-PERSIST's row " +
		"says so); TestBrokenBridges catches it with the fake agent",
	"stop-keeps-questions": "the real CLI installed is the newest, which withdraws its request as its stdin closes (since 2.1.328); " +
		"TestBrokenBridges catches it with the fake agent playing the oldest release",
}

// TestBrokenBridgesRealAgent: with the real CLI as the agent too, the case
// named for each defect fails (only that case runs: the real CLI is slow to
// start), but for the fake agent's own (fakeAgentOnly).
func TestBrokenBridgesRealAgent(t *testing.T) {
	bin, base := brokenSetup(t, "ws")
	claude := testenv.RealClaude(t)
	for d, want := range defects {
		t.Run(d, func(t *testing.T) {
			if why, ok := fakeAgentOnly[d]; ok {
				t.Skip(why)
			}
			t.Parallel()
			p := brokenProfile(base, d)
			rep, err := conformance.RunSuite(context.Background(), conformance.Config{Profile: p, Askctl: bin, RealClaude: claude},
				conformance.RunOptions{Parallel: 1, Match: func(name string) bool { return name == want }})
			if err != nil {
				t.Fatal(err)
			}
			if r := rep.Results[0]; r.Status != conformance.Fail {
				t.Errorf("defect %s with the real CLI: %s %s; it must fail", d, want, r.Status)
			} else {
				t.Logf("%s caught by %s: %s", d, want, r.Detail)
			}
		})
	}
}

// TestFailFast: with FailFast, no case starts once one has failed; the
// cases before it ran, the rest are NOT-RUN and say which failure stopped
// the run.
func TestFailFast(t *testing.T) {
	t.Parallel()
	bin, base := brokenSetup(t, "ws")
	// One case at a time, in name order: SDK-ANSWER-SINGLE passes,
	// SDK-NO-EMPTY fails on a skip sent as an empty allow, and neither
	// SDK-SKIP-DENY nor SDK-TIMEOUT after it may start.
	match := func(n string) bool {
		return n == "SDK-ANSWER-SINGLE" || n == "SDK-NO-EMPTY" || n == "SDK-SKIP-DENY" || n == "SDK-TIMEOUT"
	}
	rep, err := conformance.RunSuite(context.Background(), conformance.Config{Profile: brokenProfile(base, "skip-allow-empty"), Askctl: bin},
		conformance.RunOptions{Parallel: 1, Match: match, FailFast: true})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range rep.Results {
		got[r.Case] = r.Status
		if r.Status == conformance.NotRun && !strings.Contains(r.Detail, "first failure, SDK-NO-EMPTY") {
			t.Errorf("%s not run: %q, want the failure that stopped the run named", r.Case, r.Detail)
		}
	}
	want := map[string]string{"SDK-ANSWER-SINGLE": conformance.Pass, "SDK-NO-EMPTY": conformance.Fail, "SDK-SKIP-DENY": conformance.NotRun, "SDK-TIMEOUT": conformance.NotRun}
	if !maps.Equal(got, want) {
		t.Errorf("fail fast: %v, want %v", got, want)
	}
	if !rep.Failed() {
		t.Error("a run stopped by a failure is not reported failed")
	}
}

// TestOneDefectOneFail: the whole suite against a bridge with one defect
// fails exactly the requirements the defect breaks; a case that needs the
// broken behaviour on its way is BLOCKED by its owner, never FAILed.
func TestOneDefectOneFail(t *testing.T) {
	t.Parallel()
	bin, base := brokenSetup(t, "ws")
	for _, tc := range []struct {
		defect  string
		failing []string
		owner   string   // the requirement every BLOCKED case names
		blocked []string // at least these are BLOCKED
	}{
		// A skip sent as an empty allow: SDK-LATE-ANSWER skips on its way
		// to the late answers it checks.
		{"skip-allow-empty", []string{"SDK-NO-EMPTY", "SDK-SKIP-DENY"}, "SDK-SKIP-DENY", []string{"SDK-LATE-ANSWER"}},
		// multiSelect labels joined with "," : a multiSelect answer is
		// SDK-ANSWER-MULTI's wherever a case meets one; free text with a
		// ", " in it, changed, is also SDK-ANSWER-OTHER's own.
		{"multi-comma", []string{"SDK-ANSWER-MULTI", "SDK-ANSWER-OTHER"}, "SDK-ANSWER-MULTI", []string{"SDK-ANSWER-ALL", "SDK-DELIVER", "SDK-ISOLATION"}},
		// Answers keyed q_0, q_1: every case that answers meets it.
		{"keys-index", []string{"SDK-ANSWER-SINGLE"}, "SDK-ANSWER-SINGLE", []string{"SDK-ANSWER-MULTI", "SDK-DELIVER", "SDK-ISOLATION", "UI-TAKEOVER"}},
		// Part of a request taken as the whole: the rows that hold a part
		// end there, BLOCKED.
		{"partial-sent", []string{"SDK-ANSWER-ALL"}, "SDK-ANSWER-ALL", []string{"SDK-SKIP-DENY", "SDK-TIMEOUT"}},
		// A bridge that answers every question itself and shows none.
		{"self-answer", []string{"SDK-DELIVER", "SDK-DELIVER-LATENCY"}, "SDK-DELIVER", []string{"SDK-ANSWER-SINGLE", "SDK-SKIP-DENY", "SDK-TIMEOUT", "UI-RECONNECT-REPLAY"}},
	} {
		t.Run(tc.defect, func(t *testing.T) {
			t.Parallel()
			rep, err := conformance.RunSuite(context.Background(), conformance.Config{Profile: brokenProfile(base, tc.defect), Askctl: bin}, conformance.RunOptions{Parallel: 3})
			if err != nil {
				t.Fatal(err)
			}
			if got := rep.Failing(); !slices.Equal(got, tc.failing) {
				t.Errorf("failing %v, want %v", got, tc.failing)
			}
			var blocked []string
			for _, r := range rep.Results {
				switch r.Status {
				case conformance.Blocked:
					blocked = append(blocked, r.Case)
					if !strings.HasPrefix(r.Detail, "BLOCKED by "+tc.owner+": ") {
						t.Errorf("%s: %s, want BLOCKED by %s", r.Case, r.Detail, tc.owner)
					}
				case conformance.Fail:
					t.Logf("%s FAIL: %s", r.Case, r.Detail)
				}
			}
			for _, c := range tc.blocked {
				if !slices.Contains(blocked, c) {
					t.Errorf("%s not BLOCKED (blocked: %v)", c, blocked)
				}
			}
		})
	}
}

// TestRowsAreVerdicts: each generated row has its own verdict; a row that
// fails ends alone and the rows after it run; a row a capability leaves out
// is a SKIP naming it; JUnit lists each row.
func TestRowsAreVerdicts(t *testing.T) {
	t.Parallel()
	bin, base := brokenSetup(t, "ws")
	// A held part that restarts the deadline breaks the third of
	// SDK-TIMEOUT's five rows; the fourth and fifth run all the same.
	rep, err := conformance.RunSuite(context.Background(), conformance.Config{Profile: brokenProfile(base, "deadline-reset-held"), Askctl: bin},
		conformance.RunOptions{Match: func(n string) bool { return n == "SDK-TIMEOUT" }})
	if err != nil {
		t.Fatal(err)
	}
	r := rep.Results[0]
	var got []string
	for _, row := range r.Rows {
		got = append(got, row.Status)
	}
	if len(got) == 5 && got[4] == conformance.Skip {
		got[4] = conformance.Pass // the restart row: too late to judge, where a busy machine restarts the bridge past the deadline
	}
	if want := []string{"PASS", "PASS", "FAIL", "PASS", "PASS"}; !slices.Equal(got, want) || r.Status != conformance.Fail || !strings.Contains(r.Rows[2].Detail, "after the request") {
		t.Errorf("SDK-TIMEOUT against deadline-reset-held: %s, rows %v (%+v), want FAIL with rows %v", r.Status, got, r.Rows, want)
	}
	var junit strings.Builder
	if err := conformance.WriteJUnit(&junit, rep); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(junit.String(), `<testcase name="SDK-TIMEOUT/`+r.Rows[2].Name+`"`) || strings.Count(junit.String(), "<failure") != 2 {
		t.Errorf("JUnit does not list the failed row as a failure of its own:\n%s", junit.String())
	}

	// A bridge that declares no timeout: SDK-LATE-ANSWER's timeout row is
	// a SKIP that names the capability; its other rows pass.
	p := *base
	st := *base.Start
	st.Args = append([]string(nil), st.Args...)
	for i, a := range st.Args {
		if a == "${TIMEOUT}" {
			st.Args[i] = "1m" // it has one, and does not say
		}
	}
	p.Start, p.Capabilities.Timeout = &st, 0
	rep, err = conformance.RunSuite(context.Background(), conformance.Config{Profile: &p, Askctl: askctlBin},
		conformance.RunOptions{Match: func(n string) bool { return n == "SDK-LATE-ANSWER" }})
	if err != nil {
		t.Fatal(err)
	}
	r = rep.Results[0]
	skipped := 0
	for _, row := range r.Rows {
		switch {
		case row.Status == conformance.Skip && row.Detail == "the bridge does not declare capability timeout":
			skipped++
		case row.Status != conformance.Pass:
			t.Errorf("row %q: %s %s", row.Name, row.Status, row.Detail)
		}
	}
	if r.Status != conformance.Pass || skipped != 1 || len(r.Rows) < 2 {
		t.Errorf("SDK-LATE-ANSWER with no timeout: %s, rows %+v; want PASS with the timeout row skipped for its capability", r.Status, r.Rows)
	}
}

// TestExecDropResume: an exec adapter that can drop and resume its event
// stream runs the resume rows (the reference one over SSE's Last-Event-ID):
// they pass on the reference bridge and fail on one that starts a resumed
// stream over.
func TestExecDropResume(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("the exec example needs python3")
	}
	t.Parallel()
	bin, base := brokenSetup(t, "exec")
	rows := func(p *profile.Profile, askctl string) []conformance.RowResult {
		rep, err := conformance.RunSuite(context.Background(), conformance.Config{Profile: p, Askctl: askctl},
			conformance.RunOptions{Match: func(n string) bool { return n == "UI-RECONNECT-REPLAY" }})
		if err != nil {
			t.Fatal(err)
		}
		return rep.Results[0].Rows
	}
	// The exec example has no event ids to open after: the rows that open
	// a stream after one are skipped, naming connect -after.
	// Nor a client of its own to take offline: the page's rows are
	// skipped, naming offline.
	afterSkip := func(r conformance.RowResult) bool {
		return r.Status == conformance.Skip && (strings.Contains(r.Detail, "connect -after") || strings.Contains(r.Detail, "no offline operation"))
	}
	resumed := 0
	for _, r := range rows(base, askctlBin) {
		if r.Status != conformance.Pass && !afterSkip(r) {
			t.Errorf("reference bridge over exec: row %q %s %s", r.Name, r.Status, r.Detail)
		}
		if strings.Contains(r.Name, "resumed") {
			resumed++
		}
	}
	if resumed != 2 {
		t.Errorf("%d resume rows ran, want 2", resumed)
	}
	for _, r := range rows(brokenProfile(base, "resume-ignores-last-id"), bin) {
		if want := map[bool]string{true: conformance.Fail, false: conformance.Pass}[strings.Contains(r.Name, "resumed")]; r.Status != want && !afterSkip(r) {
			t.Errorf("a resumed stream started over, over exec: row %q %s, want %s (%s)", r.Name, r.Status, want, r.Detail)
		}
	}
}

// TestNotReplayedIsReconnectReplays: a bridge that replays nothing to a
// connection that opens fails UI-RECONNECT-REPLAY; the cases that open a
// connection on their way to their own check, while a question waits, are
// BLOCKED by it, not failed for it (they failed each before).
func TestNotReplayedIsReconnectReplays(t *testing.T) {
	t.Parallel()
	bin, base := brokenSetup(t, "ws")
	cases := []string{"UI-RECONNECT-REPLAY", "UI-TAKEOVER", "UI-STATUS", "SDK-FIRST-WINS"}
	rep, err := conformance.RunSuite(context.Background(), conformance.Config{Profile: brokenProfile(base, "lost-on-reconnect"), Askctl: bin},
		conformance.RunOptions{Parallel: 3, Match: func(n string) bool { return slices.Contains(cases, n) }})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Results {
		want := conformance.Blocked
		if r.Case == "UI-RECONNECT-REPLAY" {
			want = conformance.Fail
		}
		if r.Status != want || want == conformance.Blocked && !strings.HasPrefix(r.Detail, "BLOCKED by UI-RECONNECT-REPLAY: ") {
			t.Errorf("%s: %s %s, want %s", r.Case, r.Status, r.Detail, want)
		}
	}
}

// TestPartsRefusedSkipsHeldRows: a bridge that refuses part of a request's
// answers, as SDK-ANSWER-ALL allows, instead of holding it, passes the
// cases whose rows answer in parts; the rows that check what becomes of a
// held part (answer -partial -hold) are skipped, saying it refused, and
// none fails. Over http the resume rows and the 520-held row are among them.
func TestPartsRefusedSkipsHeldRows(t *testing.T) {
	t.Parallel()
	bin, base := brokenSetup(t, "http")
	cases := map[string]bool{"SDK-ANSWER-ALL": true, "UI-RECONNECT-REPLAY": true, "SDK-SKIP-DENY": true, "SDK-LATE-ANSWER": true}
	rep, err := conformance.RunSuite(context.Background(), conformance.Config{Profile: brokenProfile(base, "parts-refused"), Askctl: bin},
		conformance.RunOptions{Match: func(n string) bool { return cases[n] }})
	if err != nil {
		t.Fatal(err)
	}
	refused := map[string]bool{}
	for _, r := range rep.Results {
		if r.Status != conformance.Pass {
			t.Errorf("%s: %s %s", r.Case, r.Status, r.Detail)
		}
		for _, row := range r.Rows {
			switch {
			case row.Status == conformance.Skip && strings.Contains(row.Detail, "as SDK-ANSWER-ALL allows"):
				refused[row.Name] = true
			case row.Status == conformance.Skip && strings.Contains(row.Detail, "no offline operation"):
				// a page's rows: the http adapter has no page
			case row.Status == conformance.Skip && strings.Contains(row.Detail, "only the ws answer message"):
				// a ws message's row
			case row.Status != conformance.Pass:
				t.Errorf("%s row %q: %s %s", r.Case, row.Name, row.Status, row.Detail)
			}
		}
	}
	for _, want := range []string{"reconnect with part of the request answered and held", "an event stream resumed mid-stream with Last-Event-ID",
		"an event stream resumed while another session answered", "a stream opened after event 0 of a log longer than a page"} {
		if !refused[want] {
			t.Errorf("row %q: not skipped for the refusal (skipped so: %v)", want, refused)
		}
	}
}

// TestToolVerdictOwnedByPassthrough: another tool's permission prompt
// decided otherwise than the policy says is SDK-PASSTHROUGH's, whichever
// case's check meets it: a case of another requirement is BLOCKED by it
// (the explorer blamed SDK-ANSWER-MULTI, the requirement of the section
// whose check read the agent's verdict).
func TestToolVerdictOwnedByPassthrough(t *testing.T) {
	t.Parallel()
	bin, base := brokenSetup(t, "ws")
	dir := t.TempDir()
	file := filepath.Join(dir, "tool-then-ask.txtar")
	script := `requirement SDK-ANSWER-SINGLE
start s1 s1.jsonl
await s1 question
answer s1
await s1 answered
check s1
-- s1.jsonl --
{"prompt":"Help me set things up."}
{"expect":{"behavior":"allow"},"tool":{"input":{"command":"touch askctl-x.txt","description":"Create a file"},"name":"Bash","output":"","request":{"blocked_path":"${CWD}/askctl-x.txt","description":"Create a file"}},"user":{"allow":true}}
{"ask":{"questions":[{"question":"Which database should I use?","header":"Database","options":[{"label":"Postgres","description":"A server"},{"label":"SQLite","description":"A file"}],"multiSelect":false}]},"user":{"answers":{"Which database should I use?":"SQLite"}}}
{"text":"Done."}
`
	if err := os.WriteFile(file, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := conformance.RunSuite(context.Background(), conformance.Config{Profile: brokenProfile(base, "passthrough-blocked-path"), Askctl: bin},
		conformance.RunOptions{Files: []string{file}})
	if err != nil {
		t.Fatal(err)
	}
	if r := rep.Results[0]; r.Status != conformance.Blocked || !strings.Contains(r.Detail, "SDK-PASSTHROUGH") {
		t.Errorf("a Bash prompt denied against the allow policy, met by SDK-ANSWER-SINGLE's check: %s %q, want BLOCKED by SDK-PASSTHROUGH", r.Status, r.Detail)
	}
}

// pageDefects are the broken pages (bridge/defect_on.go: one line of the
// page's script each), with the case that must fail through the page.
var pageDefects = map[string]string{
	"page-multiselect-field-case": "SDK-ANSWER-MULTI", // drawn as radios
	"page-taken-page-reconnects":  "UI-TAKEOVER",      // a page taken over takes the session back
	"page-timeout-event-name":     "SDK-TIMEOUT",      // the timeout's event not heard
	"page-other-text-trimmed":     "SDK-ANSWER-OTHER", // own words sent trimmed
	// The sixth batch's: the person's way to an answer varies (browser.js)
	"page-skip-button-sends":         "SDK-SKIP-DENY",    // Skip sends what was picked
	"page-multi-uncheck-drops-later": "SDK-ANSWER-MULTI", // unticking drops the later picks
	"page-other-typed-not-picked":    "SDK-ANSWER-OTHER", // own words typed, Other ticked unpicked
	// The seventh batch's: own words on a request's second question, and
	// a page that never reconnects by itself (offline and online)
	"page-other-text-wrong-index":    "SDK-ANSWER-OTHER",
	"page-socket-forgotten-on-close": "UI-RECONNECT-REPLAY",
	// The eighth batch's: the person presses Send before answering every
	// question, and the card must stay answerable, and end when it times
	// out
	"page-error-state-locks-card": "SDK-ANSWER-ALL",
	"page-timeout-pending-only":   "SDK-TIMEOUT",
	// The tenth batch's: a page that takes its session back keeps its
	// cards taken over (reclaim)
	"page-replay-keeps-ended-card": "UI-TAKEOVER",
}

// TestBrokenPages: the cases catch the broken pages, run through the
// page in Chromium as a person would use it (the fifth held-out batch's
// four in the page's script).
func TestBrokenPages(t *testing.T) {
	testenv.Chromium(t)
	bin, base := brokenSetup(t, "browser")
	for _, d := range slices.Sorted(maps.Keys(pageDefects)) {
		t.Run(d, func(t *testing.T) {
			want := pageDefects[d]
			rep, err := conformance.RunSuite(context.Background(), conformance.Config{Profile: brokenProfile(base, d), Askctl: bin},
				conformance.RunOptions{Match: func(n string) bool { return n == want }})
			if err != nil {
				t.Fatal(err)
			}
			if r := rep.Results[0]; r.Status != conformance.Fail {
				t.Errorf("%s through the broken page: %s %s; want FAIL", want, r.Status, r.Detail)
			} else {
				t.Logf("%s: %s", want, strings.SplitN(r.Detail, "\n", 2)[0])
			}
		})
	}
}

// TestTakenOverOwned: an answer refused as from a connection taken over,
// where the case made no takeover, is the failure of the rule that
// broke, in its own case: another session's connection took the session
// (takeover-key-per-dialect: SDK-ISOLATION fails), or the new connection
// was marked taken (takeover-marks-new-conn: UI-TAKEOVER fails). No defect
// leaves every case BLOCKED by another.
func TestTakenOverOwned(t *testing.T) {
	t.Parallel()
	bin, base := brokenSetup(t, "ws")
	for d, want := range map[string]string{"takeover-key-per-dialect": "SDK-ISOLATION", "takeover-marks-new-conn": "UI-TAKEOVER"} {
		rep, err := conformance.RunSuite(context.Background(), conformance.Config{Profile: brokenProfile(base, d), Askctl: bin},
			conformance.RunOptions{Match: func(n string) bool { return n == "SDK-ISOLATION" || n == "UI-TAKEOVER" || n == "SDK-SKIP-DENY" }})
		if err != nil {
			t.Fatal(err)
		}
		if failing := rep.Failing(); !slices.Contains(failing, want) {
			for _, r := range rep.Results {
				t.Logf("%s: %s %s", r.Case, r.Status, strings.SplitN(r.Detail, "\n", 2)[0])
			}
			t.Errorf("%s: failing %v, want %s among them", d, failing, want)
		}
	}
}
