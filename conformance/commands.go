package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/askctl/askctl/harness"
	"github.com/askctl/askctl/internal/events"
	"github.com/askctl/askctl/protocol"
	"github.com/askctl/askctl/scenarios"
	"github.com/rogpeppe/go-internal/testscript"
	"github.com/tidwall/gjson"
)

// command is one custom testscript command, with its usage line.
type command struct {
	usage string
	run   func(ts *testscript.TestScript, neg bool, args []string)
}

// commands are the suite's custom commands, sorted by name. The usage
// lines are the reference in README.md.
func commands() map[string]command {
	return map[string]command{
		"answer":      {"[!] answer [-conn C] [-qid ID] [-code CODE] [-partial] ALIAS [QUESTION=ANSWER…]  answer the current question (default: as the scenario's user part); ! expects a rejection; -partial expects it held or refused", cmdAnswer},
		"await":       {"[!] await [-timeout D] [-for D] [-conn C] [-same] [-alive] ALIAS question|answered [N]|surface TYPE|turn [N]|exit [CODE]|asked [N]|resumed  wait until it holds; ! checks it does not happen for D (500ms)", cmdAwait},
		"check":       {"check ALIAS  the agent reported no failure: every answer as the scenario expects, one control_response per request, no protocol error", cmdCheck},
		"connect":     {"connect ALIAS CONN  open another surface connection to the session", cmdConnect},
		"delivered":   {"delivered [-conn C] ALIAS  the current question as shown equals what the agent asked: every question, header, option label and description, multiSelect, in order", cmdDelivered},
		"disconnect":  {"disconnect ALIAS CONN  close a surface connection", cmdDisconnect},
		"mcp-list":    {"mcp-list  connect to the bridge's MCP server as the profile's mcp.config says and check ask_user's input schema (question required; options of label and description; multiSelect)", cmdMCPList},
		"tool-result": {"[!] tool-result [-error] [-timeout D] ALIAS [TEXT|~REGEXP…]  the current question's ask_user call returned to the agent: an answer naming each TEXT (-error: an isError result); ! : names none of them", cmdToolResult},
		"latency":     {"latency ALIAS deliver|answer MAX  the current question's measured latency is at most MAX", cmdLatency},
		"pending":     {"pending [-conn C] ALIAS N  the surface lists N questions waiting, the current one among them", cmdPending},
		"race":        {"race ALIAS LABEL1 LABEL2  two answers to the current (single) question at once: exactly one is accepted", cmdRace},
		"raw":         {"raw [-conn C] ALIAS DATA  send DATA where an answer goes, in the surface's own protocol: it must be rejected with a message", cmdRaw},
		"requirement": {"requirement ID  name the requirement the case checks (first line of every case)", cmdRequirement},
		"response":    {"[!] response [-within D] ALIAS PATH [WANT]  gjson PATH on the permission result the agent received for the current question; WANT is JSON, text, or ~REGEXP", cmdResponse},
		"restart":     {"restart [-kill]  restart the bridge (-kill: SIGKILL, as a crash); connections must be reopened", cmdRestart},
		"skip":        {"[!] skip-question [-conn C] [-code CODE] ALIAS [REASON]  skip the current question", cmdSkip},
		"start":       {"start [-detached] ALIAS SCENARIO  start a session whose agent plays SCENARIO (built-in name, a steps .jsonl or a .txtar in $WORK); opens connection main unless -detached. A route mcp scenario runs the agent in print mode with the profile's mcp.config, and main watches every session for its question", cmdStart},
		"status":      {"status [-conn C] [-timeout D] ALIAS  the connection is told the session waits for the user, on the current question", cmdStatus},
	}
}

// commandFuncs adapts commands to testscript.
func commandFuncs() map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	out := map[string]func(*testscript.TestScript, bool, []string){}
	for name, c := range commands() {
		if name == "skip" {
			name = "skip-question" // testscript's own skip skips the case
		}
		out[name] = c.run
	}
	return out
}

// Usage lists the commands' usage lines, sorted.
func Usage() []string {
	var out []string
	for _, c := range commands() {
		out = append(out, c.usage)
	}
	sort.Strings(out)
	return out
}

const (
	keyEnv = "askctl-env"
	keyCfg = "askctl-config"
)

// lazyEnv starts the bridge at the first command that needs it, so a case
// skipped for a capability costs nothing.
type lazyEnv struct {
	once sync.Once
	env  *harness.Env
	err  error
	cfg  *Config
	work string
}

func envOf(ts *testscript.TestScript) *harness.Env {
	l := ts.Value(keyEnv).(*lazyEnv)
	l.once.Do(func() {
		ctx, cancel := context.WithTimeout(baseCtx(ts), 30*time.Second)
		defer cancel()
		l.env, l.err = harness.NewEnv(ctx, l.cfg.Profile, harness.Options{Work: l.work, Askctl: l.cfg.Askctl, AgentTimeout: l.cfg.AgentTimeout, RealClaude: l.cfg.RealClaude, ClaimTimeout: l.cfg.ClaimTimeout})
	})
	if l.err != nil {
		fail(ts, "starting the bridge: %v", l.err)
	}
	return l.env
}

// baseCtx is the run's context: cancelled when askctl is interrupted.
func baseCtx(ts *testscript.TestScript) context.Context {
	if c := ts.Value(keyCfg).(*Config); c.ctx != nil {
		return c.ctx
	}
	return context.Background()
}

// fail ends the case with the requirement it checks and what was observed.
func fail(ts *testscript.TestScript, format string, args ...any) {
	id := ts.Getenv("REQUIREMENT")
	r := Requirements[id]
	ts.Fatalf("FAIL %s (%s): %s\nobserved: %s", id, r.Level, r.Text, fmt.Sprintf(format, args...))
}

// flags parses leading -name[=value] options; names in valued take a value.
func flags(ts *testscript.TestScript, args []string, valued, bools []string) (map[string]string, []string) {
	out := map[string]string{}
	for len(args) > 0 && strings.HasPrefix(args[0], "-") && len(args[0]) > 1 {
		name, val, hasVal := strings.Cut(args[0][1:], "=")
		args = args[1:]
		switch {
		case slices.Contains(valued, name):
			if !hasVal {
				if len(args) == 0 {
					ts.Fatalf("flag -%s needs a value", name)
				}
				val, args = args[0], args[1:]
			}
			out[name] = val
		case slices.Contains(bools, name) && !hasVal:
			out[name] = "true"
		default:
			ts.Fatalf("unknown flag -%s", name)
		}
	}
	return out, args
}

func duration(ts *testscript.TestScript, s, def string) time.Duration {
	if s == "" {
		s = def
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		ts.Fatalf("duration %q: want e.g. 2s", s)
	}
	return d
}

func connFlag(f map[string]string) string {
	if c := f["conn"]; c != "" {
		return c
	}
	return "main"
}

func current(ts *testscript.TestScript, e *harness.Env, alias string) (*harness.Session, string) {
	var s *harness.Session
	var qid string
	e.Do(func(st *harness.State) {
		s = st.Sessions[alias]
		if s != nil {
			qid = s.Current
		}
	})
	if s == nil {
		ts.Fatalf("no session %q: start it first", alias)
	}
	return s, qid
}

func summary(e *harness.Env, alias string) string {
	var out string
	e.Do(func(st *harness.State) {
		if s := st.Sessions[alias]; s != nil {
			out = s.Summary()
		}
	})
	return out
}

func cmdRequirement(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: requirement ID")
	}
	r, ok := Requirements[args[0]]
	if !ok {
		ts.Fatalf("unknown requirement %q", args[0])
	}
	ts.Setenv("REQUIREMENT", r.ID)
	ts.Logf("%s (%s): %s", r.ID, r.Level, r.Text)
}

func cmdStart(ts *testscript.TestScript, neg bool, args []string) {
	f, args := flags(ts, args, nil, []string{"detached"})
	if neg || len(args) != 2 {
		ts.Fatalf("usage: start [-detached] ALIAS SCENARIO")
	}
	sc := loadScenario(ts, args[1])
	e := envOf(ts)
	ctx, cancel := context.WithTimeout(baseCtx(ts), 30*time.Second)
	defer cancel()
	cfg := ts.Value(keyCfg).(*Config)
	var err error
	switch {
	case sc.Route == scenarios.RouteMCP && f["detached"] != "":
		ts.Fatalf("start -detached: a route mcp session is watched on every session from the start (its bridge session is known by its question)")
	case sc.Route == scenarios.RouteMCP && f["detached"] != "":
		ts.Fatalf("start -detached: a route mcp session is watched on every session from the start (its bridge session is known by its question)")
	case sc.Route == scenarios.RouteMCP:
		err = e.StartMCP(ctx, args[0], sc, cfg.AgentTimeout)
	case f["detached"] != "":
		err = e.StartDetached(ctx, args[0], sc, cfg.AgentTimeout)
	default:
		err = e.Start(ctx, args[0], sc, cfg.AgentTimeout)
	}
	if err != nil {
		fail(ts, "%v", err)
	}
}

// loadScenario reads a built-in, or a file in $WORK: a .txtar scenario or a
// .jsonl of steps.
func loadScenario(ts *testscript.TestScript, name string) *scenarios.Scenario {
	path := ts.MkAbs(name)
	data, err := os.ReadFile(path)
	if err != nil {
		sc, berr := scenarios.Builtin(name)
		if berr != nil {
			ts.Fatalf("scenario %s: neither a file in $WORK (%v) nor a built-in", name, err)
		}
		return sc
	}
	if strings.HasSuffix(name, ".jsonl") {
		base := strings.TrimSuffix(filepath.Base(name), ".jsonl")
		data = []byte("Steps of a conformance case.\n-- scenario.json --\n{\"name\":\"" + base + "\",\"route\":\"sdk\"}\n-- steps.jsonl --\n" + string(data))
	}
	sc, err := scenarios.Parse(name, data)
	ts.Check(err)
	return sc
}

func cmdConnect(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: connect ALIAS CONN")
	}
	ctx, cancel := context.WithTimeout(baseCtx(ts), 15*time.Second)
	defer cancel()
	if err := envOf(ts).Open(ctx, args[0], args[1]); err != nil {
		fail(ts, "%v", err)
	}
}

func cmdDisconnect(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: disconnect ALIAS CONN")
	}
	ts.Check(envOf(ts).Disconnect(args[0], args[1]))
}

func cmdRestart(ts *testscript.TestScript, neg bool, args []string) {
	f, args := flags(ts, args, nil, []string{"kill"})
	if neg || len(args) != 0 {
		ts.Fatalf("usage: restart [-kill]")
	}
	ctx, cancel := context.WithTimeout(baseCtx(ts), 30*time.Second)
	defer cancel()
	if err := envOf(ts).Restart(ctx, f["kill"] != ""); err != nil {
		fail(ts, "restarting the bridge: %v", err)
	}
}

func cmdAwait(ts *testscript.TestScript, neg bool, args []string) {
	f, args := flags(ts, args, []string{"timeout", "for", "conn"}, []string{"same", "alive"})
	if len(args) < 2 {
		ts.Fatalf("usage: await [-timeout D] [-for D] [-conn C] [-same] ALIAS WHAT [ARG]")
	}
	e := envOf(ts)
	alias, what, rest := args[0], args[1], args[2:]
	s, qid := current(ts, e, alias)
	conn := connFlag(f)
	num := func(def int) int {
		if len(rest) == 0 {
			return def
		}
		n, err := strconv.Atoi(rest[0])
		if err != nil {
			ts.Fatalf("await %s: %q is not a number", what, rest[0])
		}
		return n
	}
	var got string
	var exp harness.Expectation
	switch what {
	case "question":
		exp = harness.NewQuestion(alias, conn, &got)
	case "answered":
		if qid == "" {
			ts.Fatalf("await answered: no current question (await question first)")
		}
		exp = harness.Responses(alias, qid, num(1))
		if s.MCP {
			exp = harness.ToolResulted(alias, qid)
		}
	case "surface":
		if len(rest) != 1 {
			ts.Fatalf("usage: await ALIAS surface TYPE")
		}
		c := f["conn"]
		exp = harness.SurfaceSaw(alias, c, rest[0], qid)
	case "turn":
		exp = harness.Turns(alias, num(1))
	case "exit":
		exp = harness.Exited(alias, num(-1))
	case "asked":
		exp = harness.Asked(alias, num(1))
	case "resumed":
		exp = resumed(alias)
	default:
		ts.Fatalf("await: unknown condition %q", what)
	}
	if f["alive"] != "" {
		if what != "surface" {
			ts.Fatalf("await -alive: only with surface TYPE")
		}
		exp = whileAlive(alias, f["conn"], rest[0], qid)
	}
	if neg {
		d := duration(ts, f["for"], "500ms")
		ctx, cancel := context.WithTimeout(baseCtx(ts), d+5*time.Second)
		defer cancel()
		if err := e.Hold(ctx, d, harness.Not(exp)); err != nil {
			fail(ts, "%v\n%s", err, summary(e, alias))
		}
		return
	}
	d := duration(ts, f["timeout"], "10s")
	ctx, cancel := context.WithTimeout(baseCtx(ts), d)
	defer cancel()
	if err := e.Await(ctx, exp); err != nil {
		fail(ts, "%v\n%s", err, summary(e, alias))
	}
	if what == "question" {
		if f["same"] != "" && got != qid {
			fail(ts, "connection %s shows question %s, want the same id as before, %s\n%s", conn, got, qid, summary(e, alias))
		}
		e.Do(func(*harness.State) { s.Consume(conn, got) })
		ts.Setenv(alias+"_Q", got)
		// The agent's own record of the request travels apart from the
		// surface's event: wait for it too, so what follows can pair them.
		n := 0
		e.Do(func(*harness.State) {
			for i, id := range s.Questions {
				if id == got {
					n = i + 1
				}
			}
		})
		if err := e.Await(ctx, harness.Asked(alias, n)); err != nil {
			fail(ts, "the surface shows question %s, but the agent did not ask %d question(s): %v\n%s", got, n, err, summary(e, alias))
		}
	}
}

// whileAlive is a surface event that must happen while the agent of
// alias's session still runs: because of something the agent did, not
// because it went away. The event's own time (the bridge's, when it gives
// one; else when it was heard) is compared with the agent's exit record.
func whileAlive(alias, conn, typ, qid string) harness.Expectation {
	return harness.Expectation{Description: fmt.Sprintf("session %s's surface is told %s for question %s while its agent still runs", alias, typ, qid), Check: func(st *harness.State) (harness.Verdict, string) {
		s := st.Sessions[alias]
		if s == nil {
			return harness.Unmeetable, "no session " + alias
		}
		var exitT time.Time
		for _, r := range s.Agent {
			if r.Event == "exit" {
				exitT = r.T
			}
		}
		for _, ev := range s.Surface {
			if (conn == "" || ev.Conn == conn) && ev.Type == typ && ev.QuestionID == qid {
				at := ev.At
				if at.IsZero() {
					at = ev.T
				}
				if exitT.IsZero() {
					// The exit record may be on its way: the agent must
					// still run a second after the surface was told.
					if time.Since(ev.T) < time.Second {
						return harness.Unmet, ""
					}
					return harness.Met, ""
				}
				if at.Before(exitT) {
					return harness.Met, ""
				}
				return harness.Unmeetable, fmt.Sprintf("it was told at %s, %v after the agent exited: the bridge reacted to the exit, not to the agent's cancel", at.Format("15:04:05.000"), at.Sub(exitT).Round(time.Microsecond))
			}
		}
		return harness.Unmet, ""
	}}
}

// resumed is met when an agent started with --resume for alias's session
// has ended a turn.
func resumed(alias string) harness.Expectation {
	return harness.Expectation{Description: fmt.Sprintf("the agent of session %s is resumed (--resume) and ends a turn", alias), Check: func(st *harness.State) (harness.Verdict, string) {
		s := st.Sessions[alias]
		if s == nil {
			return harness.Unmeetable, "no session " + alias
		}
		inResumed := false
		for _, r := range s.Agent {
			if r.Event == events.EventHello {
				inResumed = gjson.GetBytes(r.Msg, "resume").String() != ""
			}
			if inResumed && r.IsWire() && gjson.GetBytes(r.Msg, "type").String() == protocol.TypeResult {
				return harness.Met, ""
			}
		}
		return harness.Unmet, ""
	}}
}

// askStep is the scenario's ask step behind question qid: the n-th
// question the surfaces showed is the scenario's n-th ask step. Nil when
// none is.
func askStep(e *harness.Env, s *harness.Session, qid string) *scenarios.Step {
	idx := -1
	e.Do(func(*harness.State) { idx = slices.Index(s.Questions, qid) })
	n := 0
	for i := range s.Scenario.Steps {
		if st := &s.Scenario.Steps[i]; st.Kind == scenarios.KindAsk || st.Kind == scenarios.KindMCP {
			if n == idx {
				return st
			}
			n++
		}
	}
	return nil
}

// userAnswers is the scenario's user part for question qid, as labels.
func userAnswers(ts *testscript.TestScript, e *harness.Env, s *harness.Session, qid string) map[string][]string {
	st := askStep(e, s, qid)
	switch {
	case st == nil:
		ts.Fatalf("question %s: no ask step of scenario %s matches it", qid, s.Scenario.Name)
	case st.User == nil:
		ts.Fatalf("step %d of scenario %s has no user part: give the answers", st.N, s.Scenario.Name)
	}
	out := map[string][]string{}
	for q, a := range st.User.Answers {
		out[q] = a.Labels
	}
	return out
}

func rejected(ts *testscript.TestScript, neg bool, code string, err error, what string, e *harness.Env, alias string) {
	var rj *harness.Rejected
	switch {
	case neg && err == nil:
		fail(ts, "%s was accepted; it must be rejected\n%s", what, summary(e, alias))
	case neg && !errors.As(err, &rj):
		fail(ts, "%s: %v (want a rejection from the bridge)", what, err)
	case neg && strings.TrimSpace(rj.Message) == "":
		fail(ts, "%s was rejected with no message (code %q): an error must say what is wrong", what, rj.Code)
	case neg && code != "" && rj.Code != code:
		fail(ts, "%s was rejected with code %q (%s), want %q", what, rj.Code, rj.Message, code)
	case neg:
		ts.Logf("rejected as it should be: %v", err)
	case err != nil:
		fail(ts, "%s: %v\n%s", what, err, summary(e, alias))
	}
}

func cmdAnswer(ts *testscript.TestScript, neg bool, args []string) {
	f, args := flags(ts, args, []string{"conn", "qid", "code"}, []string{"partial"})
	if len(args) < 1 {
		ts.Fatalf("usage: answer [-conn C] [-qid ID] [-code CODE] [-partial] ALIAS [QUESTION=ANSWER…]")
	}
	e := envOf(ts)
	alias := args[0]
	s, qid := current(ts, e, alias)
	if f["qid"] != "" {
		qid = f["qid"]
	}
	if qid == "" {
		ts.Fatalf("answer: no current question (await question first)")
	}
	var answers map[string][]string
	if len(args) == 1 {
		answers = userAnswers(ts, e, s, qid)
	} else {
		answers = map[string][]string{}
		for _, kv := range args[1:] {
			q, a, ok := strings.Cut(kv, "=")
			if !ok {
				ts.Fatalf("answer: %q: want QUESTION=ANSWER", kv)
			}
			answers[q] = append(answers[q], a)
		}
	}
	ctx, cancel := context.WithTimeout(baseCtx(ts), 15*time.Second)
	defer cancel()
	ack, err := e.Answer(ctx, alias, connFlag(f), qid, answers)
	err = closedAfterTakeover(e, alias, connFlag(f), err)
	what := fmt.Sprintf("the answer %v to %s", answers, qid)
	if f["partial"] != "" {
		// Part of a request's answers: the bridge may hold them or refuse
		// them, but must not take them as the whole answer.
		var rj *harness.Rejected
		switch {
		case err == nil && ack.Status == "held":
			ts.Logf("held, waiting for %v", ack.Missing)
		case errors.As(err, &rj):
			ts.Logf("refused: %v", err)
		case err == nil:
			fail(ts, "%s answers only part of the request, and the bridge took it as %q (want it held or refused)\n%s", what, ack.Status, summary(e, alias))
		default:
			fail(ts, "%s: %v", what, err)
		}
		return
	}
	rejected(ts, neg, f["code"], err, what, e, alias)
	if err == nil {
		ts.Logf("answer %s: %s %v", qid, ack.Status, ack.Missing)
		ts.Setenv("ACK", ack.Status)
	}
}

// closedAfterTakeover treats a connection the bridge closed after telling
// it of a takeover as a refusal (code session_taken): closing the old
// connection is a fine way to refuse its answers.
func closedAfterTakeover(e *harness.Env, alias, conn string, err error) error {
	var rj *harness.Rejected
	if err == nil || errors.As(err, &rj) {
		return err
	}
	taken := false
	e.Do(func(st *harness.State) {
		if s := st.Sessions[alias]; s != nil {
			for _, ev := range s.Surface {
				if ev.Conn == conn && ev.Type == harness.SurfTaken {
					taken = true
				}
			}
		}
	})
	if taken {
		return &harness.Rejected{Code: "session_taken", Message: "the bridge closed this connection after another took the session over (" + err.Error() + ")"}
	}
	return err
}

func cmdSkip(ts *testscript.TestScript, neg bool, args []string) {
	f, args := flags(ts, args, []string{"conn", "code"}, nil)
	if len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: skip-question [-conn C] [-code CODE] ALIAS [REASON]")
	}
	e := envOf(ts)
	s, qid := current(ts, e, args[0])
	if qid == "" {
		ts.Fatalf("skip-question: no current question (await question first)")
	}
	reason := "User skipped this question"
	if len(args) == 2 {
		reason = args[1]
	} else if st := askStep(e, s, qid); st != nil && st.User != nil && st.User.Skip != nil {
		reason = *st.User.Skip
	}
	ctx, cancel := context.WithTimeout(baseCtx(ts), 15*time.Second)
	defer cancel()
	err := closedAfterTakeover(e, args[0], connFlag(f), e.Skip(ctx, args[0], connFlag(f), qid, reason))
	rejected(ts, neg, f["code"], err, "skipping "+qid, e, args[0])
}

func cmdRaw(ts *testscript.TestScript, neg bool, args []string) {
	f, args := flags(ts, args, []string{"conn"}, nil)
	if neg || len(args) != 2 {
		ts.Fatalf("usage: raw [-conn C] ALIAS DATA")
	}
	e := envOf(ts)
	_, qid := current(ts, e, args[0])
	ctx, cancel := context.WithTimeout(baseCtx(ts), 15*time.Second)
	defer cancel()
	err := e.SendRaw(ctx, args[0], connFlag(f), qid, []byte(args[1]))
	rejected(ts, true, "", err, fmt.Sprintf("the malformed answer %q", args[1]), e, args[0])
}

func cmdRace(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: race ALIAS LABEL1 LABEL2")
	}
	e := envOf(ts)
	alias := args[0]
	s, qid := current(ts, e, alias)
	var text string
	e.Do(func(*harness.State) {
		for _, ev := range s.Surface {
			if ev.QuestionID == qid && len(ev.Questions) > 0 {
				text = ev.Questions[0].Question
			}
		}
	})
	if text == "" {
		ts.Fatalf("race: question %s was not shown", qid)
	}
	ctx, cancel := context.WithTimeout(baseCtx(ts), 15*time.Second)
	defer cancel()
	// The two answers go on two connections where the surface has a view
	// of every session besides the session's own (ws, control-ws), so the
	// bridge gets them at once; over http they are two requests at once.
	conns := []string{"main", "main"}
	if k := e.Surface.Kind(); k == "ws" || k == "control-ws" {
		if err := e.OpenAll(ctx, alias, "race"); err != nil {
			fail(ts, "opening a second connection for the race: %v", err)
		}
		defer e.Disconnect(alias, "race")
		var seen string
		if err := e.Await(ctx, harness.NewQuestion(alias, "race", &seen)); err != nil {
			fail(ts, "the second connection does not show the question: %v", err)
		}
		conns[1] = "race"
	}
	errs := make([]error, 2)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, label := range args[1:] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, errs[i] = e.Answer(ctx, alias, conns[i], qid, map[string][]string{text: {label}})
		}()
	}
	close(start)
	wg.Wait()
	var rj *harness.Rejected
	wins := 0
	for _, err := range errs {
		switch {
		case err == nil:
			wins++
		case !errors.As(err, &rj):
			fail(ts, "an answer in the race failed without a rejection: %v", err)
		}
	}
	if wins != 1 {
		fail(ts, "%d of 2 racing answers were accepted (errors: %v, %v); exactly one must win\n%s", wins, errs[0], errs[1], summary(e, alias))
	}
	ts.Logf("race: one accepted, one rejected (%v %v)", errs[0], errs[1])
}

func cmdCheck(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: check ALIAS")
	}
	e := envOf(ts)
	alias := args[0]
	var problems []string
	e.Do(func(st *harness.State) {
		s := st.Sessions[alias]
		if s == nil {
			problems = append(problems, "no session "+alias)
			return
		}
		// The latest agent process's failures (a resumed session's first
		// agent died with the bridge).
		last := 0
		for i, r := range s.Agent {
			if r.Event == events.EventHello {
				last = i
			}
		}
		latest := *s
		latest.Agent = s.Agent[last:]
		problems = append(problems, latest.Failures()...)
		for _, req := range s.AgentRequests() {
			if n := len(s.Responses(req.ID)); n > 1 {
				problems = append(problems, fmt.Sprintf("the agent received %d control_responses for request %s; exactly one is allowed", n, req.ID))
			}
		}
	})
	if len(problems) > 0 {
		fail(ts, "the agent of session %s reported:\n  %s\n%s", alias, strings.Join(problems, "\n  "), summary(e, alias))
	}
}

func cmdResponse(ts *testscript.TestScript, neg bool, args []string) {
	f, args := flags(ts, args, []string{"within"}, nil)
	if len(args) < 2 || len(args) > 3 {
		ts.Fatalf("usage: response [-within D] ALIAS PATH [WANT]")
	}
	e := envOf(ts)
	alias, path := args[0], args[1]
	s, qid := current(ts, e, alias)
	var msg []byte
	var delay time.Duration
	e.Do(func(*harness.State) {
		req, ok := s.RequestOf(qid)
		if !ok {
			return
		}
		if rs := s.Responses(req.ID); len(rs) > 0 {
			msg, delay = rs[0].Msg, rs[0].T.Sub(req.T)
		}
	})
	if msg == nil {
		fail(ts, "the agent received no control_response for question %s\n%s", qid, summary(e, alias))
	}
	if w := f["within"]; w != "" {
		if max := duration(ts, w, ""); delay > max {
			fail(ts, "the control_response came %v after the request, more than %v", delay.Round(time.Millisecond), max)
		}
	}
	res := gjson.GetBytes(msg, "response.response")
	got := res.Get(path)
	if len(args) == 2 {
		if got.Exists() == neg {
			fail(ts, "%s in the permission result: exists=%v, want %v; the result: %s", path, got.Exists(), !neg, res.Raw)
		}
		return
	}
	want := args[2]
	var ok bool
	switch {
	case strings.HasPrefix(want, "~"):
		re, err := regexp.Compile(want[1:])
		ts.Check(err)
		ok = got.Exists() && re.MatchString(got.String())
	case json.Valid([]byte(want)) && (strings.ContainsAny(want[:1], `{["0123456789-`) || want == "true" || want == "false" || want == "null"):
		ok = got.Exists() && jsonEqual(got.Raw, want)
	default:
		ok = got.Exists() && got.String() == want
	}
	if ok == neg {
		verb := "want"
		if neg {
			verb = "want anything but"
		}
		fail(ts, "%s in the permission result the agent received is %s, %s %s; the result: %s", path, orMissing(got), verb, want, res.Raw)
	}
}

func orMissing(r gjson.Result) string {
	if !r.Exists() {
		return "missing"
	}
	return r.Raw
}

func jsonEqual(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}

func cmdDelivered(ts *testscript.TestScript, neg bool, args []string) {
	f, args := flags(ts, args, []string{"conn"}, nil)
	if neg || len(args) != 1 {
		ts.Fatalf("usage: delivered [-conn C] ALIAS")
	}
	e := envOf(ts)
	alias := args[0]
	s, qid := current(ts, e, alias)
	conn := connFlag(f)
	var shown []protocol.Question
	var input []byte
	e.Do(func(*harness.State) {
		for _, ev := range s.Surface {
			if ev.Conn == conn && ev.Type == harness.SurfQuestion && ev.QuestionID == qid {
				shown = ev.Questions
				break
			}
		}
		if req, ok := s.RequestOf(qid); ok {
			input = req.Input
		}
	})
	if input == nil {
		fail(ts, "no agent request matches question %s\n%s", qid, summary(e, alias))
	}
	asked := gjson.GetBytes(input, "questions").Array()
	mcpCall := false
	if len(asked) == 0 && gjson.GetBytes(input, "question").Exists() {
		// An ask_user call: one question, and no header to compare.
		asked, mcpCall = []gjson.Result{gjson.ParseBytes(input)}, true
	}
	if len(shown) != len(asked) {
		fail(ts, "the surface shows %d question(s), the agent asked %d", len(shown), len(asked))
	}
	for i, a := range asked {
		q := shown[i]
		check := func(field, got, want string) {
			if got != want {
				fail(ts, "question %d: %s is %q on the surface, the agent asked %q", i+1, field, got, want)
			}
		}
		check("question", q.Question, a.Get("question").String())
		if !mcpCall {
			check("header", q.Header, a.Get("header").String())
		}
		check("multiSelect", strconv.FormatBool(q.MultiSelect), strconv.FormatBool(a.Get("multiSelect").Bool()))
		opts := a.Get("options").Array()
		if len(q.Options) != len(opts) {
			fail(ts, "question %d: %d option(s) on the surface, the agent asked with %d", i+1, len(q.Options), len(opts))
		}
		for j, o := range opts {
			check(fmt.Sprintf("option %d label", j+1), q.Options[j].Label, o.Get("label").String())
			check(fmt.Sprintf("option %d description", j+1), q.Options[j].Description, o.Get("description").String())
		}
	}
}

func cmdPending(ts *testscript.TestScript, neg bool, args []string) {
	f, args := flags(ts, args, []string{"conn"}, nil)
	if neg || len(args) != 2 {
		ts.Fatalf("usage: pending [-conn C] ALIAS N")
	}
	n, err := strconv.Atoi(args[1])
	ts.Check(err)
	e := envOf(ts)
	_, qid := current(ts, e, args[0])
	ctx, cancel := context.WithTimeout(baseCtx(ts), 15*time.Second)
	defer cancel()
	ps, err := e.Pending(ctx, args[0], connFlag(f))
	if err != nil {
		fail(ts, "listing pending questions: %v", err)
	}
	var ids []string
	found := false
	for _, p := range ps {
		ids = append(ids, p.QuestionID)
		found = found || p.QuestionID == qid
	}
	if len(ps) != n || (n > 0 && qid != "" && !found) {
		fail(ts, "the surface lists %d pending question(s) %v, want %d including %s\n%s", len(ps), ids, n, qid, summary(e, args[0]))
	}
}

func cmdStatus(ts *testscript.TestScript, neg bool, args []string) {
	f, args := flags(ts, args, []string{"conn", "timeout"}, nil)
	if neg || len(args) != 1 {
		ts.Fatalf("usage: status [-conn C] [-timeout D] ALIAS")
	}
	e := envOf(ts)
	alias := args[0]
	_, qid := current(ts, e, alias)
	conn := connFlag(f)
	exp := harness.Expectation{Description: fmt.Sprintf("connection %s of session %s is told the session waits for the user on question %s", conn, alias, qid),
		Check: func(st *harness.State) (harness.Verdict, string) {
			for _, ev := range st.Sessions[alias].Surface {
				if ev.Conn == conn && ev.Type == harness.SurfStatus && ev.Waiting != nil && *ev.Waiting && ev.PendingID == qid {
					return harness.Met, ""
				}
			}
			return harness.Unmet, ""
		}}
	ctx, cancel := context.WithTimeout(baseCtx(ts), duration(ts, f["timeout"], "5s"))
	defer cancel()
	if err := e.Await(ctx, exp); err != nil {
		fail(ts, "%v\n%s", err, summary(e, alias))
	}
}

func cmdLatency(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 || (args[1] != "deliver" && args[1] != "answer") {
		ts.Fatalf("usage: latency ALIAS deliver|answer MAX")
	}
	e := envOf(ts)
	max := duration(ts, args[2], "")
	_, qid := current(ts, e, args[0])
	for _, l := range e.Latencies() {
		if l.Session != args[0] || l.Question != qid {
			continue
		}
		d := l.Deliver
		if args[1] == "answer" {
			d = l.Answer
		}
		if d <= 0 {
			fail(ts, "no %s latency was measured for question %s", args[1], qid)
		}
		ts.Logf("%s latency of %s: %v", args[1], qid, d)
		if d > max {
			fail(ts, "%s latency %v, more than %v", args[1], d.Round(time.Millisecond), max)
		}
		return
	}
	fail(ts, "question %s was not measured\n%s", qid, summary(e, args[0]))
}
