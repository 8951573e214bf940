package conformance

import (
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/askctl/askctl/profile"
	"github.com/askctl/askctl/scenarios"
	"github.com/rogpeppe/go-internal/txtar"
	"pgregory.net/rapid"
)

// TestModelRendersValidCases checks the model alone, with no bridge: every
// sequence it generates, for every set of capabilities, renders as a case
// whose lines are the suite's commands, whose requirement lines name
// requirements, and whose scenarios parse, as the runner would read them.
// A rendering mistake shows here in a second, not as a bridge's failure.
func TestModelRendersValidCases(t *testing.T) {
	known := map[string]bool{"skip-question": true, "skip": false, "env": true} // env: testscript's own
	for name := range commands() {
		if name != "skip" {
			known[name] = true
		}
	}
	capsets := map[string]xCaps{
		"none":       {},
		"ws":         {seconds: 2, reconnect: true, takeover: true, persist: true, mcp: true, allowTools: true},
		"http":       {seconds: 2, reconnect: true, resume: true, persist: true, mcp: true, allowTools: true},
		"crash":      {seconds: 2, reconnect: true, persist: true, mcp: true, allowTools: true, crashAt: []string{"answer-committed", "skip-committed"}},
		"deny tools": {seconds: 2, reconnect: true, denyTools: true},
		"no skip":    {seconds: 10, reconnect: true, lacks: map[string]bool{"skip": true}},
	}
	for name, caps := range capsets {
		t.Run(name, func(t *testing.T) {
			rapid.Check(t, func(rt *rapid.T) {
				m := &xModel{caps: caps}
				m.generate(rt)
				checkScript(rt, known, m.script())
			})
		})
	}
}

func checkScript(t *rapid.T, known map[string]bool, script []byte) {
	ar := txtar.Parse(script)
	files := map[string][]byte{}
	for _, f := range ar.Files {
		files[f.Name] = f.Data
	}
	for i, line := range strings.Split(string(ar.Comment), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		words := strings.Fields(strings.TrimPrefix(line, "! "))
		cmd := words[0]
		if !known[cmd] {
			t.Fatalf("line %d: %q: no command %s\n%s", i+1, line, cmd, script)
		}
		switch cmd {
		case "requirement":
			if _, ok := Requirements[words[1]]; !ok {
				t.Fatalf("line %d: %q: no requirement %s", i+1, line, words[1])
			}
		case "start":
			file := words[len(words)-1]
			data, ok := files[file]
			if !ok {
				t.Fatalf("line %d: %q: the archive has no %s", i+1, line, file)
			}
			// As the runner reads a steps file (loadScenario).
			head := `{"name":"x","route":"sdk"}`
			first, rest, _ := strings.Cut(string(data), "\n")
			if strings.Contains(first, `"origin"`) {
				head, data = first, []byte(rest)
			}
			arch := "-- scenario.json --\n" + head + "\n-- steps.jsonl --\n" + string(data)
			if resume, ok := files[strings.TrimSuffix(file, ".jsonl")+".resume.jsonl"]; ok {
				arch += "\n-- resume.jsonl --\n" + string(resume)
			}
			if _, err := scenarios.Parse(file, []byte(arch)); err != nil {
				t.Fatalf("line %d: %q: %v\n%s", i+1, line, err, data)
			}
		}
	}
}

// TestSeedsPlayTheirOwnSequence: workers that check seeds at once each
// generate the sequence of their own seed, the one a lone check of that
// seed generates (rapid reads its seed from a global flag). Without the
// lock checkSeed holds, a slip shows here now and then, and under -race
// (make race) every time.
func TestSeedsPlayTheirOwnSequence(t *testing.T) {
	rapidReady()
	caps := xCaps{seconds: 2, reconnect: true, takeover: true, persist: true, mcp: true, allowTools: true}
	script := func(seed uint64) string {
		var out string
		checkSeed(&exploreTB{}, seed, func(rt *rapid.T) {
			m := &xModel{caps: caps}
			m.generate(rt)
			out = string(m.script())
		})
		if out == "" {
			t.Errorf("seed %d generated nothing", seed)
		}
		return out
	}
	const seeds = 48
	alone := make([]string, seeds)
	for i := range alone {
		alone[i] = script(uint64(1000 + i))
	}
	together := make([]string, seeds)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < seeds; i += 8 {
				together[i] = script(uint64(1000 + i))
			}
		}()
	}
	wg.Wait()
	for i := range alone {
		if together[i] != alone[i] {
			t.Fatalf("seed %d played at once with others generated another sequence:\n%s\nalone:\n%s", 1000+i, together[i], alone[i])
		}
	}
	if alone[0] == alone[1] {
		t.Fatal("seeds 1000 and 1001 generated the same sequence")
	}
}

// TestBrowserStepsCostMore: the model's clock runs faster through a page,
// so that it leaves no question it means to answer to its timeout there.
func TestBrowserStepsCostMore(t *testing.T) {
	costs := map[string]float64{}
	for _, name := range []string{"reference-ws", "reference-browser"} {
		p, ok, err := profile.Builtin(name)
		if !ok || err != nil {
			t.Fatalf("profile %s: %v", name, err)
		}
		m := &xModel{caps: capsOf(Config{Profile: p})}
		costs[name] = m.stepCost()
		if m.holdCost() <= m.stepCost() {
			t.Errorf("%s: a hold costs %v, a step %v", name, m.holdCost(), m.stepCost())
		}
	}
	if costs["reference-ws"] != costStep || costs["reference-browser"] < 3*costStep {
		t.Errorf("a step costs %v over ws and %v through the page; want %v, and three times that or more", costs["reference-ws"], costs["reference-browser"], costStep)
	}
}

// TestCrashStepsAreGenerated: a bridge with crash points gets sequences
// that crash it at each (the step is reachable, and taken in place of a
// restart), and one without gets none. Seeds one at a time, as the
// explorer plays them (rapid runs one check a seed once it is set up).
func TestCrashStepsAreGenerated(t *testing.T) {
	rapidReady()
	gen := func(caps xCaps) map[string]int {
		ops := map[string]int{}
		for seed := range uint64(300) {
			checkSeed(&exploreTB{}, 5000+seed, func(rt *rapid.T) {
				m := &xModel{caps: caps}
				m.generate(rt)
				for k, v := range m.ops {
					ops[k] += v
				}
				if m.ops["crash"] > 0 && m.ops["restart"] > 0 {
					t.Errorf("seed %d both crashed and restarted the bridge:\n%s", 5000+seed, m.script())
				}
			})
		}
		return ops
	}
	ops := gen(xCaps{seconds: 2, reconnect: true, persist: true, crashAt: []string{profile.CrashAnswerCommitted, profile.CrashSkipCommitted}})
	for _, p := range []string{profile.CrashAnswerCommitted, profile.CrashSkipCommitted} {
		if ops["crash at "+p] == 0 {
			t.Errorf("no sequence crashed the bridge at %s: %v", p, ops)
		}
	}
	if ops = gen(xCaps{seconds: 2, reconnect: true, persist: true}); ops["crash"] > 0 {
		t.Errorf("a bridge with no crash points was crashed: %v", ops)
	}
}

// TestFailureIDIsStable: two runs of one failing sequence fail with ids,
// times and numbers of their own; rapid sees them as one failure (it
// replays a failure and shrinks it only when the two agree). Another
// requirement is another failure; a section BLOCKED by the requirement is
// the same one (a shorter sequence may meet it in another's section).
func TestFailureIDIsStable(t *testing.T) {
	run := func(status, detail, log string) Result {
		return Result{Status: status, Detail: detail, Log: log}
	}
	a := run(Fail, "the answer map[Which database?:[Postgres]] to q_ydfq2y7z was accepted; it must be rejected", "> answer\nFAIL UI-TAKEOVER (MUST): …")
	b := run(Fail, "the answer map[Which database?:[Postgres]] to q_exdm2e2m was accepted; it must be rejected", "> answer\nFAIL UI-TAKEOVER (MUST): …")
	other := run(Fail, a.Detail, "FAIL UI-STATUS (MUST): …")
	blocked := run(Blocked, "BLOCKED by UI-TAKEOVER: the tab was not told", "")
	if failureID(a) != failureID(b) {
		t.Errorf("one failure, two ids: %q, %q", failureID(a), failureID(b))
	}
	if failureID(a) == failureID(other) || failureID(a) != failureID(blocked) {
		t.Errorf("ids: %q, another requirement's %q, blocked by the same %q", failureID(a), failureID(other), failureID(blocked))
	}
	// Where no requirement is named, the detail is the failure, less what
	// differs from run to run.
	c := run(Fail, "wait: 1.5s past q_abc12 at 12:00:01", "")
	d := run(Fail, "wait: 2.25s past q_zz9 at 12:00:07", "")
	if failureID(c) != failureID(d) || failureID(c) == failureID(run(Fail, "the agent exited", "")) || failureID(c) == failureID(run(Blocked, c.Detail, "")) {
		t.Errorf("ids of unnamed failures: %q, %q", failureID(c), failureID(d))
	}
}

// TestCommandsShadowNoBuiltin: testscript's own commands win over a
// suite's command of the same name (a "stop" ran as testscript's stop:
// the case ended there, passing), so no command of the suite takes the
// name of one of them.
func TestCommandsShadowNoBuiltin(t *testing.T) {
	builtins := []string{"cd", "chmod", "cmp", "cmpenv", "cp", "env", "exec", "exists", "grep", "kill", "mkdir", "mv", "rm",
		"skip", "stderr", "stdin", "stdout", "ttyin", "ttyout", "stop", "symlink", "unix2dos", "unquote", "wait"}
	for name := range commandFuncs() {
		if slices.Contains(builtins, name) {
			t.Errorf("command %q is testscript's own: it would never run", name)
		}
	}
}

// TestModelKeepsItsClock: no sequence has the person end a question past
// its budget, on the model's clock, counted from when the agent really
// asked it (an MCP agent's next ask: as the CLI ended the call before
// it), whatever steps came between, the end's included.
func TestModelKeepsItsClock(t *testing.T) {
	rapidReady()
	caps := xCaps{seconds: 2, reconnect: true, takeover: true, persist: true, mcp: true, allowTools: true,
		crashAt: []string{profile.CrashAnswerCommitted, profile.CrashSkipCommitted}}
	overdue, sequences, mcpCancels := 0, 0, 0
	for seed := range uint64(3000) {
		checkSeed(&exploreTB{}, 7000+seed, func(rt *rapid.T) {
			m := &xModel{caps: caps}
			m.generate(rt)
			sequences++
			overdue += m.overdue
			for _, s := range m.sessions {
				if s.mcp && slices.ContainsFunc(s.reqs, func(r *xReq) bool { return r.outcome == "cancel" }) {
					mcpCancels++
				}
			}
			if m.overdue > 0 && overdue == m.overdue {
				t.Logf("seed %d: %d overdue:\n%s", 7000+seed, m.overdue, m.script())
			}
		})
	}
	if overdue > 0 {
		t.Errorf("%d questions ended past their budget in %d sequences", overdue, sequences)
	}
	if mcpCancels == 0 {
		t.Errorf("no sequence had an MCP agent whose call the CLI ends (%d sequences)", sequences)
	}
}
