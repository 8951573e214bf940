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
	"github.com/askctl/askctl/internal/clip"
	"github.com/askctl/askctl/profile"
	"github.com/askctl/askctl/protocol"
	"github.com/askctl/askctl/scenarios"
	"github.com/askctl/askctl/surface"
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
		"answer":       {"[!] answer [-conn C] [-qid ID] [-q TEXT] [-code CODE] [-partial [-hold]] [-crash] ALIAS [QUESTION=ANSWER…]  answer the current question (default: as the scenario's user part; -qid: that one; -q: the one shown that asks TEXT, of several pending at once); ! expects a rejection; -partial expects it held or refused (-hold: the lines after it check what becomes of a held part, so a refusal, which SDK-ANSWER-ALL allows, skips the row, naming it); -crash: the bridge is armed to crash as it takes it, so its reply, if any, is not checked", cmdAnswer},
		"await":        {"[!] await [-timeout D] [-for D] [-conn C] [-qid ID] [-q TEXT] [-same] [-alive] ALIAS question|answered [N]|allowed|surface TYPE [N]|decided TOOL [N]|turn [N]|exit [CODE]|asked [N]|resumed|repeated  wait until it holds (repeated: the connection was told one event twice, by its id; decided TOOL N: the bridge decided N of the agent's TOOL permission prompts; question: sets ALIAS_Q to its id, and ALIAS_Q1, ALIAS_Q2, … by the order questions came; question -q TEXT: the question shown that asks TEXT, of several pending at once, becomes the current one (ALIAS_Q); allowed: an answer, an allow, reached the agent; surface TYPE N: told N times; -qid: of that question, not the current one, with surface, answered and allowed); ! checks it does not happen for D (500ms)", cmdAwait},
		"check":        {"check ALIAS  once the agent has given its own verdict on every answer it got: it reported no failure (every answer as the scenario expects, one control_response per request, no protocol error)", cmdCheck},
		"crashed":      {"crashed [-timeout D]  wait (20s, or D; times --slow) until the bridge armed by restart -crash-at has ended itself there (killed), and start it again, disarmed; connections must be reopened", cmdCrashed},
		"connect":      {"connect [-after ID] ALIAS CONN  open another surface connection to the session (-after: as a client that heard event ID of some log before, SSE's Last-Event-ID: 0 asks for the whole log, an id ahead of the bridge's log is another log's; a surface without event ids skips the row, or the case)", cmdConnect},
		"delivered":    {"delivered [-conn C] ALIAS  the current question as shown equals what the agent asked: every question, header, option label and description, multiSelect, in order", cmdDelivered},
		"dimension":    {"dimension NAME|-  name the row the lines after it check, a verdict of its own: a failure or a skip names it, and the case goes on with what follows (under go test a failure ends the case) (the generated rows, conformance/dimensions.go, and a case's own); - : the lines after it belong to no row", cmdDimension},
		"disconnect":   {"disconnect ALIAS CONN  close a surface connection", cmdDisconnect},
		"drop":         {"drop ALIAS CONN  cut the connection's event stream as a network would, keeping the id of the last event it heard (a surface that resumes streams: SSE's Last-Event-ID; elsewhere the row is skipped)", cmdDrop},
		"invariants":   {"invariants [ALIAS…]  the rules that hold at every moment hold over everything seen so far, in these sessions (default: every session): one control_response per request, no allow after a withdrawal, whole non-blank answers keyed by text, a deny with a message, a timeout's deny within timeout + 1 s of the ask and not early, a connection told a question expired within 1 s of its deadline (or of its opening, if later), each connection told only its session's events, each once (the harness's Invariants); a rule another requirement owns makes the case BLOCKED by it", cmdInvariants},
		"mcp-list":     {"mcp-list  connect to the bridge's MCP server as the profile's mcp.config says and check ask_user's input schema (question required; options of label and description; multiSelect)", cmdMCPList},
		"tool-result":  {"[!] tool-result [-error] [-timeout D] ALIAS [TEXT|~REGEXP…]  the current question's ask_user call returned to the agent: an answer naming each TEXT (-error: an isError result); ! : names none of them", cmdToolResult},
		"latency":      {"latency ALIAS deliver|answer MAX  the current question's measured latency is at most MAX", cmdLatency},
		"offline":      {"offline ALIAS CONN  take the network away from the connection's client, the client left open (a browser tab on a laptop that went offline): its sockets fail as cut ones do, and it cannot reconnect until online (a surface with no client of its own skips the row)", cmdOffline},
		"online":       {"online ALIAS CONN  give the client its network back: it must reconnect by itself and hear the bridge's replay within 15s (times --slow) and the start limit, and then show what a fresh client would", cmdOnline},
		"pending":      {"pending [-conn C] [-within D] ALIAS N  the surface lists N questions waiting, the current one among them (-within: by D, times --slow: a surface's list may follow its events); no listing shows a question more than 1 s past its deadline (SDK-TIMEOUT: the ask and the declared timeout, or the connection's opening if later)", cmdPending},
		"permit":       {"permit [-conn C] ALIAS allow|deny [REASON]  wait for another tool's permission prompt on the surface (capability permissions) and allow or deny it", cmdPermit},
		"race":         {"race ALIAS LABEL1 LABEL2  two answers to the current (single) question at once: exactly one is accepted", cmdRace},
		"raw":          {"raw [-conn C] [-any] ALIAS DATA  send DATA where an answer goes, in the surface's own protocol: it must be rejected with a message (-any: taken or refused, the bridge's choice; what reaches the agent is checked after)", cmdRaw},
		"reclaim":      {"reclaim ALIAS CONN  connection CONN, taken over by a later one, takes its session back as its person does (a page's \"Answer here again\": the profile's browser map.reclaim); a connection with no such control closes and connects again under its name. It returns once the client heard the bridge's replay; from then CONN is held to what a connection opened now must hear", cmdReclaim},
		"repeat":       {"[!] repeat N COMMAND [ARG…]  run the suite's COMMAND N times (! : each negated), as a line each (a person who changes their mind again and again; a log longer than a bridge's page)", cmdRepeat},
		"requirement":  {"requirement ID  name the requirement the case checks (first line of every case)", cmdRequirement},
		"response":     {"[!] response [-within D] ALIAS PATH [WANT]  gjson PATH on the permission result the agent received for the current question; WANT is JSON, text, or ~REGEXP", cmdResponse},
		"resume":       {"resume ALIAS CONN  reconnect a dropped stream asking for what it missed after the last event it heard", cmdResume},
		"restart":      {"restart [-kill] [-crash-at POINT]  restart the bridge (-kill: SIGKILL, as a crash; -crash-at: armed to end itself at POINT, one of the profile's capabilities.crash.points, the first time it gets there: crashed waits for it; a point the profile does not declare skips the row, or the case, naming it); connections must be reopened", cmdRestart},
		"skip":         {"[!] skip-question [-conn C] [-qid ID] [-q TEXT] [-code CODE] [-crash] ALIAS [REASON]  skip the current question (-qid: that one; -q: the one shown that asks TEXT; -crash: as answer -crash)", cmdSkip},
		"row-skip":     {"row-skip WHY  skip the current row, saying why: a row whose condition leaves its lines out says so ([!cap:timeout] row-skip '…'; generated in the dimension rows)", cmdRowSkip},
		"sleep":        {"sleep DURATION  the person takes their time, DURATION as written (never scaled by --slow: it is set against the bridge's own clock, such as its timeout)", cmdSleep},
		"start":        {"start [-detached] ALIAS SCENARIO  start a session whose agent plays SCENARIO (built-in name, a steps .jsonl or a .txtar in $WORK; a resumed agent plays the .jsonl's BASE.resume.jsonl beside it); opens connection main unless -detached. A route mcp scenario runs the agent in print mode with the profile's mcp.config, and main watches every session for its question", cmdStart},
		"stop-session": {"stop-session ALIAS  stop the session as its person does from the surface (the reference API's DELETE /api/sessions/ID): the bridge ends its agent (a surface with no stop operation skips the row)", cmdStop},
		"supports":     {"supports ALIAS CONN OP  the connection has operation OP (resume: drop and resume; after: connect -after, asked of the surface before ALIAS starts; offline: offline and online); where it has not, the row (or the case) is skipped, naming it", cmdSupports},
		"status":       {"status [-conn C] [-timeout D] [-done] ALIAS  the connection is told the session waits for the user, on the current question (-done: that it waits no longer on it)", cmdStatus},
	}
}

// commandFuncs adapts commands to testscript.
func commandFuncs() map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	out := map[string]func(*testscript.TestScript, bool, []string){}
	for name, c := range commands() {
		if name == "skip" {
			name = "skip-question" // testscript's own skip skips the case
		}
		run := c.run
		out[name] = func(ts *testscript.TestScript, neg bool, args []string) {
			if row := ts.Getenv("DIMENSION"); row != "" && ts.Getenv("ROW_SKIPPED") == row && name != "dimension" && name != "invariants" {
				ts.Logf("(skipped with its row)")
				return
			}
			defer func() {
				if r := recover(); r != nil {
					if _, ok := r.(rowEnded); !ok {
						panic(r)
					}
				}
			}()
			run(ts, neg, args)
		}
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
		ctx, cancel := waitCtx(ts, 30*time.Second)
		defer cancel()
		l.env, l.err = harness.NewEnv(ctx, l.cfg.Profile, harness.Options{Work: l.work, SurfaceLog: true, Askctl: l.cfg.Askctl, Slow: l.cfg.Slow, AgentTimeout: l.cfg.AgentTimeout, RealClaude: l.cfg.RealClaude, ClaimTimeout: l.cfg.ClaimTimeout, CLIVersion: l.cfg.CLIVersion})
	})
	if l.err != nil {
		fail(ts, "%v", l.err)
	}
	return l.env
}

// agentStart is how long an agent process may take to start (to write its
// first line) beyond a wait on it (harness.AfterStart).
const agentStart = 30 * time.Second

// waitCtx is a wait of d, times the slow factor (Config.Slow), under the
// run's context.
func waitCtx(ts *testscript.TestScript, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(baseCtx(ts), ts.Value(keyCfg).(*Config).scaled(d))
}

// baseCtx is the run's context: cancelled when askctl is interrupted.
func baseCtx(ts *testscript.TestScript) context.Context {
	if c := ts.Value(keyCfg).(*Config); c.ctx != nil {
		return c.ctx
	}
	return context.Background()
}

// fail ends the case with the requirement it checks and what was observed.
// An argument that is a *harness.SetupError marks the case as one whose
// bridge could not be set up: what it checks was never reached.
func fail(ts *testscript.TestScript, format string, args ...any) {
	setup := false
	var un *surface.Unsupported
	for _, a := range args {
		var se *harness.SetupError
		if err, ok := a.(error); ok && errors.As(err, &se) {
			setup = true
			if c := ts.Value(keyCfg).(*Config); c.setupFailed != nil {
				c.setupFailed(se)
			}
		} else if ok {
			errors.As(err, &un)
		}
	}
	if un != nil && !setup {
		// An operation the surface lacks, whatever command met it: a SKIP
		// naming it, never a FAIL. (One the bridge's setup needs, such as
		// start, leaves the case NOT-RUN.)
		skipUnsupported(ts, un)
		panic(rowEnded{}) // in a row: the row ends; commandFuncs goes on
	}
	id := ts.Getenv("REQUIREMENT")
	r := Requirements[id]
	msg := fmt.Sprintf(format, args...)
	if d := ts.Getenv("DIMENSION"); d != "" {
		if !setup {
			endRow(ts, Fail, msg) // a row fails alone (outside go test)
		}
		msg = "[" + d + "] " + msg
	}
	ts.Fatalf("FAIL %s (%s): %s\nobserved: %s", id, r.Level, r.Text, msg)
}

// rowEnded ends a generated row's command: the case goes on with its next
// row (commandFuncs recovers it).
type rowEnded struct{}

// endRow ends the current generated row with a verdict, when rows are
// verdicts (Config.row, outside go test) and the run goes on: the rest of
// the row's lines do nothing, and the case goes on with its next row. It
// does not return when it ends the row; false: the caller ends the case.
func endRow(ts *testscript.TestScript, status, why string) bool {
	c := ts.Value(keyCfg).(*Config)
	row := ts.Getenv("DIMENSION")
	if row == "" || c.row == nil || baseCtx(ts).Err() != nil {
		return false
	}
	c.row(row, status, why)
	ts.Logf("row %q: %s: %s (the case goes on with its next row)", row, status, why)
	ts.Setenv("ROW_SKIPPED", row)
	panic(rowEnded{})
}

// failOwned is fail for a check that requirement owner owns: in a case of
// another requirement it is a precondition, so the case is BLOCKED by owner
// (whose own case fails for it) and goes on to check its own behaviour.
func failOwned(ts *testscript.TestScript, owner, format string, args ...any) {
	c := ts.Value(keyCfg).(*Config)
	if ts.Getenv("REQUIREMENT") == owner || c.blocked == nil {
		fail(ts, format, args...)
	}
	why := strings.SplitN(fmt.Sprintf(format, args...), "\n", 2)[0]
	c.blocked(owner, why)
	if row := ts.Getenv("DIMENSION"); row != "" && c.row != nil {
		c.row(row, Blocked, "BLOCKED by "+owner+": "+why)
	}
	ts.Logf("BLOCKED by %s: %s (the case goes on)", owner, why)
}

// blockedStop is failOwned for a precondition the case cannot go on
// without: the case ends BLOCKED by owner, whose own case fails for it.
// owners are the requirements for which it is the case's own failure.
func blockedStop(ts *testscript.TestScript, owners []string, format string, args ...any) {
	c := ts.Value(keyCfg).(*Config)
	if slices.Contains(owners, ts.Getenv("REQUIREMENT")) || c.blocked == nil || c.stopped == nil {
		fail(ts, format, args...)
	}
	why := strings.SplitN(fmt.Sprintf(format, args...), "\n", 2)[0]
	c.blocked(owners[0], why)
	endRow(ts, Blocked, "BLOCKED by "+owners[0]+": "+why) // a row ends alone
	c.stopped()
	ts.Fatalf("BLOCKED by %s: %s (the case cannot go on without it)", owners[0], why)
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

// current is alias's session handle and its current question ("" before
// any is awaited).
func current(ts *testscript.TestScript, e *harness.Env, alias string) (*harness.Session, string) {
	s := e.Session(alias)
	if !e.Has(alias) {
		ts.Fatalf("no session %q: start it first", alias)
	}
	return s, s.Current()
}

// mustCurrent is current with a question awaited.
func mustCurrent(ts *testscript.TestScript, e *harness.Env, cmd, alias string) (*harness.Session, string) {
	s, qid := current(ts, e, alias)
	if qid == "" {
		ts.Fatalf("%s: no current question (await question first)", cmd)
	}
	return s, qid
}

func summary(e *harness.Env, alias string) string { return e.Session(alias).Summary() }

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

func cmdDimension(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: dimension NAME|-")
	}
	if args[0] == "-" {
		ts.Setenv("DIMENSION", "") // the lines after it belong to no row
		return
	}
	ts.Setenv("DIMENSION", args[0])
	if c := ts.Value(keyCfg).(*Config); c.row != nil {
		c.row(args[0], "", "")
	}
}

// cmdRowSkip skips the current row, saying why (a capability the bridge
// does not declare): the generated rows say so where a condition leaves
// their lines out.
func cmdRowSkip(ts *testscript.TestScript, neg bool, args []string) {
	row := ts.Getenv("DIMENSION")
	if neg || len(args) != 1 || row == "" {
		ts.Fatalf("usage: row-skip WHY (in a dimension row)")
	}
	if c := ts.Value(keyCfg).(*Config); c.row != nil {
		c.row(row, Skip, args[0])
	}
	ts.Setenv("ROW_SKIPPED", row)
	ts.Logf("row %q skipped: %s", row, args[0])
}

func cmdInvariants(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("usage: invariants [ALIAS…]")
	}
	e := envOf(ts)
	checkInvariants(ts, e, args...)
}

// checkInvariants fails the case on a broken rule its requirement owns,
// and reports it BLOCKED by the owner of any other.
func checkInvariants(ts *testscript.TestScript, e *harness.Env, aliases ...string) {
	// A question shown is heard apart from the agent's request behind it:
	// wait (briefly, only while they differ) for the request of each one,
	// so that a second id is one the agent never asked; and a status apart
	// from the agent's response, so that a status that says nobody waits
	// is one heard while the agent still did.
	ctx, cancel := waitCtx(ts, 3*time.Second)
	_ = e.Await(ctx, harness.AllOf(harness.OneIDPerRequest(aliases...), harness.StatusesAgree(aliases...)))
	cancel()
	vs := e.Invariants(aliases...)
	own := ts.Getenv("REQUIREMENT")
	var mine []string
	for _, v := range vs {
		if v.Requirement == own {
			mine = append(mine, v.Text)
			continue
		}
		failOwned(ts, v.Requirement, "%s", v.Text)
	}
	if len(mine) > 0 {
		s := ""
		if len(aliases) == 1 {
			s = "\n" + summary(e, aliases[0])
		}
		fail(ts, "%s%s", strings.Join(mine, "\n  "), s)
	}
}

func cmdSleep(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: sleep DURATION")
	}
	d := duration(ts, args[0], "")
	select {
	case <-time.After(d):
	case <-baseCtx(ts).Done():
		ts.Fatalf("interrupted")
	}
}

func cmdStart(ts *testscript.TestScript, neg bool, args []string) {
	f, args := flags(ts, args, nil, []string{"detached"})
	if neg || len(args) != 2 {
		ts.Fatalf("usage: start [-detached] ALIAS SCENARIO")
	}
	sc := loadScenario(ts, args[1])
	e := envOf(ts)
	ctx, cancel := waitCtx(ts, 30*time.Second)
	defer cancel()
	cfg := ts.Value(keyCfg).(*Config)
	var err error
	switch {
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
		// A first line with "origin" is the scenario.json line (e.g. a
		// recorded session's, whose headers may run past 12 characters).
		base := strings.TrimSuffix(filepath.Base(name), ".jsonl")
		head := "{\"name\":\"" + base + "\",\"route\":\"sdk\"}"
		if first, rest, _ := strings.Cut(string(data), "\n"); gjson.Get(first, "origin").Exists() {
			head, data = first, []byte(rest)
		}
		data = []byte("Steps of a conformance case.\n-- scenario.json --\n" + head + "\n-- steps.jsonl --\n" + string(data))
		// What a resumed agent plays (the late-answer path): BASE.resume.jsonl beside it.
		if resume, err := os.ReadFile(strings.TrimSuffix(path, ".jsonl") + ".resume.jsonl"); err == nil {
			data = append(data, "\n-- resume.jsonl --\n"+string(resume)...)
		}
	}
	sc, err := scenarios.Parse(name, data)
	ts.Check(err)
	return sc
}

func cmdRepeat(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 2 {
		ts.Fatalf("usage: repeat N COMMAND [ARG…]")
	}
	n, err := strconv.Atoi(args[0])
	if err != nil || n < 1 || n > 10000 {
		ts.Fatalf("repeat %s: want a count from 1 to 10000", args[0])
	}
	name := args[1]
	if name == "skip" || name == "repeat" {
		ts.Fatalf("repeat: not %s (testscript's own skip ends the case; a repeat of repeat is one repeat)", name)
	}
	c, ok := commands()[name]
	if name == "skip-question" {
		c, ok = commands()["skip"]
	}
	if !ok {
		ts.Fatalf("repeat: %s is not one of the suite's commands", name)
	}
	for range n {
		c.run(ts, neg, args[2:])
	}
}

func cmdConnect(ts *testscript.TestScript, neg bool, args []string) {
	f, args := flags(ts, args, []string{"after"}, nil)
	if neg || len(args) != 2 {
		ts.Fatalf("usage: connect [-after ID] ALIAS CONN")
	}
	ctx, cancel := waitCtx(ts, 15*time.Second)
	defer cancel()
	e := envOf(ts)
	if a := f["after"]; a != "" {
		id, err := strconv.ParseInt(a, 10, 64)
		if err != nil || id < 0 {
			ts.Fatalf("connect -after %s: want an event id (0 or more)", a)
		}
		err = e.OpenAfter(ctx, args[0], args[1], id)
		rejected(ts, false, "", err, "opening a connection after event "+a, e, args[0]) // an unsupported opening is a SKIP
		return
	}
	if err := e.Open(ctx, args[0], args[1]); err != nil {
		fail(ts, "%v", err)
	}
}

func cmdDisconnect(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: disconnect ALIAS CONN")
	}
	if err := envOf(ts).Disconnect(args[0], args[1]); err != nil {
		fail(ts, "closing connection %s: %v", args[1], err)
	}
}

func cmdDrop(ts *testscript.TestScript, neg bool, args []string) {
	streamOp(ts, neg, args, "drop", "dropping", (*harness.Env).Drop)
}

// streamOp runs drop, resume, offline, online or reclaim (op; doing names
// it in a failure) on a connection.
func streamOp(ts *testscript.TestScript, neg bool, args []string, op, doing string, f func(*harness.Env, context.Context, string, string) error) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: %s ALIAS CONN", op)
	}
	ctx, cancel := waitCtx(ts, 15*time.Second)
	defer cancel()
	e := envOf(ts)
	of := "'s stream"
	switch op {
	case "offline", "online":
		of = "'s client"
	case "reclaim":
		of = ""
	}
	rejected(ts, false, "", f(e, ctx, args[0], args[1]), doing+" connection "+args[1]+of, e, args[0])
}

func cmdOffline(ts *testscript.TestScript, neg bool, args []string) {
	streamOp(ts, neg, args, "offline", "taking offline", (*harness.Env).Offline)
}

func cmdOnline(ts *testscript.TestScript, neg bool, args []string) {
	streamOp(ts, neg, args, "online", "bringing online", (*harness.Env).Online)
}

func cmdReclaim(ts *testscript.TestScript, neg bool, args []string) {
	streamOp(ts, neg, args, "reclaim", "taking the session back on", (*harness.Env).Reclaim)
}

func cmdStop(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: stop-session ALIAS")
	}
	ctx, cancel := waitCtx(ts, 15*time.Second)
	defer cancel()
	e := envOf(ts)
	rejected(ts, false, "", e.Stop(ctx, args[0]), "stopping session "+args[0], e, args[0])
}

func cmdSupports(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: supports ALIAS CONN OP")
	}
	e := envOf(ts)
	rejected(ts, false, "", e.Supports(args[0], args[1], args[2]), "operation "+args[2], e, args[0])
}

func cmdResume(ts *testscript.TestScript, neg bool, args []string) {
	streamOp(ts, neg, args, "resume", "resuming", (*harness.Env).Resume)
}

func cmdRestart(ts *testscript.TestScript, neg bool, args []string) {
	f, args := flags(ts, args, []string{"crash-at"}, []string{"kill"})
	if neg || len(args) != 0 {
		ts.Fatalf("usage: restart [-kill] [-crash-at POINT]")
	}
	ctx, cancel := waitCtx(ts, 30*time.Second)
	defer cancel()
	if p := f["crash-at"]; p != "" {
		if !slices.Contains(profile.CrashPointNames(), p) {
			ts.Fatalf("restart -crash-at %s: no such point (the points: %s)", p, strings.Join(profile.CrashPointNames(), ", "))
		}
		err := envOf(ts).RestartCrashingAt(ctx, p, f["kill"] != "")
		var un *surface.Unsupported
		switch {
		case errors.As(err, &un):
			skipReached(ts, un.Message) // a point the profile does not declare
		case err != nil:
			fail(ts, "%v", err)
		}
		ts.Setenv("CRASH_OP", "")
		return
	}
	if err := envOf(ts).Restart(ctx, f["kill"] != ""); err != nil {
		fail(ts, "%v", err)
	}
}

// cmdCrashed waits for the bridge armed by restart -crash-at to end itself
// there, and starts it again.
func cmdCrashed(ts *testscript.TestScript, neg bool, args []string) {
	f, args := flags(ts, args, []string{"timeout"}, nil)
	if neg || len(args) != 0 {
		ts.Fatalf("usage: crashed [-timeout D]")
	}
	ctx, cancel := waitCtx(ts, duration(ts, f["timeout"], "20s"))
	defer cancel()
	if err := envOf(ts).Crashed(ctx); err != nil {
		if op := ts.Getenv("CRASH_OP"); op != "" {
			first, rest, _ := strings.Cut(err.Error(), "\n")
			fail(ts, "%s (the operation armed to crash it: %s)\n%s", first, op, rest)
		}
		fail(ts, "%v", err)
	}
}

// answersText is answers as a report's line says them: each question's
// values quoted, control characters escaped (a newline in free text would
// end the line before its verdict), and each cut short, saying how long it
// was.
func answersText(answers map[string][]string) string {
	qs := make([]string, 0, len(answers))
	for q := range answers {
		qs = append(qs, q)
	}
	sort.Strings(qs)
	var parts []string
	for _, q := range qs {
		var vals []string
		for _, v := range answers[q] {
			t := clip.Quote(v, 80)
			if len(v) > 80 {
				t += fmt.Sprintf(" (%d bytes)", len(v))
			}
			vals = append(vals, t)
		}
		parts = append(parts, clip.Quote(q, 80)+": "+strings.Join(vals, ", "))
	}
	return "{" + strings.Join(parts, "; ") + "}"
}

// untilCrash is ctx, ended too when the bridge process exits: an
// operation the bridge was armed to crash on gets no reply once the bridge
// is dead, and a surface that waits for one to its limit (a page that says
// "Sending…") would spend seconds the model's clock does not count, past a
// pending question's timeout. It ends with ctx.
func untilCrash(ctx context.Context, e *harness.Env) context.Context {
	exited := e.Bridge().Exited()
	if exited == nil {
		return ctx
	}
	ctx, cancel := context.WithCancelCause(ctx)
	go func() {
		select {
		case <-exited:
			cancel(errors.New("the bridge exited"))
		case <-ctx.Done():
		}
	}()
	return ctx
}

// crashing is the end of an operation the bridge was armed to crash on
// (answer -crash, skip-question -crash): the bridge may die before it
// replies, so no reply is checked; crashed checks that it died.
func crashing(ts *testscript.TestScript, what string, err error) {
	said := "the bridge replied before it crashed"
	if err != nil {
		said = fmt.Sprintf("no reply, as the bridge was armed to crash: %v", err)
	}
	ts.Logf("%s: %s", what, said)
	ts.Setenv("CRASH_OP", what+": "+said) // crashed says it, should the bridge not crash
}

func cmdAwait(ts *testscript.TestScript, neg bool, args []string) {
	f, args := flags(ts, args, []string{"timeout", "for", "conn", "qid", "q"}, []string{"same", "alive"})
	if len(args) < 2 {
		ts.Fatalf("usage: await [-timeout D] [-for D] [-conn C] [-qid ID] [-same] ALIAS WHAT [ARG]")
	}
	e := envOf(ts)
	alias, what, rest := args[0], args[1], args[2:]
	s, qid := current(ts, e, alias)
	if f["qid"] != "" {
		if what != "surface" && what != "answered" && what != "allowed" {
			ts.Fatalf("await -qid: only with surface TYPE, answered or allowed")
		}
		qid = f["qid"]
	}
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
	var exp harness.Expectation
	switch what {
	case "question":
		exp = harness.NewQuestion(alias, conn)
	case "answered":
		if qid == "" {
			ts.Fatalf("await answered: no current question (await question first)")
		}
		exp = harness.Responses(alias, qid, num(1))
		if s.IsMCP() {
			exp = harness.ToolResulted(alias, qid)
		}
	case "allowed":
		if qid == "" {
			ts.Fatalf("await allowed: no current question (await question first)")
		}
		exp = harness.Allowed(alias, qid)
	case "surface":
		if len(rest) != 1 && len(rest) != 2 {
			ts.Fatalf("usage: await ALIAS surface TYPE [N]")
		}
		typ := rest[0]
		rest = rest[1:]
		exp = harness.SurfaceSawTimes(alias, f["conn"], typ, qid, num(1))
		if f["alive"] != "" {
			exp = harness.SurfaceSawWhileAlive(alias, f["conn"], typ, qid)
		}
	case "turn":
		exp = harness.Turns(alias, num(1))
	case "exit":
		exp = harness.Exited(alias, num(-1))
	case "asked":
		exp = harness.Asked(alias, num(1))
	case "decided":
		if len(rest) != 1 && len(rest) != 2 {
			ts.Fatalf("usage: await ALIAS decided TOOL [N]")
		}
		tool := rest[0]
		rest = rest[1:]
		exp = harness.Decided(alias, tool, num(1))
	case "resumed":
		exp = harness.Resumed(alias)
	case "repeated":
		exp = harness.Repeated(alias, conn)
	default:
		ts.Fatalf("await: unknown condition %q", what)
	}
	if f["alive"] != "" && what != "surface" {
		ts.Fatalf("await -alive: only with surface TYPE")
	}
	if neg && f["q"] != "" {
		ts.Fatalf("await -q: only with question, and not negated")
	}
	if neg {
		d := duration(ts, f["for"], "500ms")
		ctx, cancel := waitCtx(ts, d+5*time.Second)
		defer cancel()
		if err := e.Hold(ctx, d, harness.Not(exp)); err != nil {
			if what == "answered" {
				timedOutMeanwhile(ts, s, qid)
			}
			fail(ts, "%v\n%s", err, summary(e, alias))
		}
		return
	}
	// The wait runs from when the session's agent is up: one still
	// starting (the real CLI on a busy machine, a resumed one waiting for
	// the one before it to end) has up to agentStart more.
	d := duration(ts, f["timeout"], "10s")
	ctx, cancel := waitCtx(ts, d+agentStart)
	defer cancel()
	ctx = harness.AfterStart(ctx, ts.Value(keyCfg).(*Config).scaled(d))
	if what == "question" && f["q"] != "" {
		// One of several shown at once becomes the current question; the
		// numbering of ALIAS_Qn is the awaits'.
		got, err := s.SelectQuestion(ctx, conn, f["q"])
		if err != nil {
			fail(ts, "%v\n%s", err, summary(e, alias))
		}
		ts.Setenv(alias+"_Q", got)
		return
	}
	if f["q"] != "" {
		ts.Fatalf("await -q: only with question, and not negated")
	}
	if what == "question" {
		got, err := s.AwaitQuestion(ctx, conn, f["same"] != "")
		if err != nil {
			if _, behind := s.AnsweredUnshown(); behind {
				// The bridge answered the agent itself and showed the person
				// nothing: SDK-DELIVER's failure, which no other case can
				// look past.
				blockedStop(ts, []string{"SDK-DELIVER", "SDK-DELIVER-LATENCY"}, "%v\n%s", err, summary(e, alias))
			}
			if q, ok := s.NotReplayed(conn); ok && s.Reclaimed(conn) {
				// Pending as this connection took its session back, and not
				// shown there again: the take-back's failure.
				blockedStop(ts, []string{"UI-TAKEOVER", "UI-RECONNECT-REPLAY"}, "question %s was pending as connection %s took the session back, and it was not shown there again, answerable: %v\n%s", q, conn, err, summary(e, alias))
			} else if ok {
				// Pending when this connection was open, and never told to
				// it: UI-RECONNECT-REPLAY's failure, on the way to this
				// case's own check.
				blockedStop(ts, []string{"UI-RECONNECT-REPLAY"}, "question %s was pending when connection %s opened, and the bridge did not replay it to it: %v\n%s", q, conn, err, summary(e, alias))
			}
			if f["same"] != "" {
				endedOnTime(ts, s, conn, qid)
			}
			fail(ts, "%v\n%s", err, summary(e, alias))
		}
		if got != ts.Getenv(alias+"_Q") {
			n, _ := strconv.Atoi(ts.Getenv(alias + "_QN"))
			n++
			ts.Setenv(alias+"_QN", strconv.Itoa(n))
			ts.Setenv(fmt.Sprintf("%s_Q%d", alias, n), got)
		}
		ts.Setenv(alias+"_Q", got)
		return
	}
	if err := e.Await(ctx, exp); err != nil {
		fail(ts, "%v\n%s", err, summary(e, alias))
	}
}

// tooLate: an answer or skip the case meant to be taken, refused because
// the question had timed out, when it was sent three quarters of the
// declared timeout or more after the agent asked. The bridge may be right
// (a deadline that ends at 3/4 of it is not early, SDK-TIMEOUT), and the
// case is the late one: it could not keep its schedule (a stalled machine).
// Neither a pass nor a failure: a SKIP that says so.
func tooLate(ts *testscript.TestScript, neg bool, err error, s *harness.Session, qid, what string) {
	var rj *surface.Rejected
	if neg || !errors.As(err, &rj) {
		return
	}
	timeout := ts.Value(keyCfg).(*Config).Profile.Capabilities.Timeout.D()
	at, ok := s.AskedAt(qid)
	if timeout <= 0 || !ok {
		return
	}
	if late := time.Since(at); late >= timeout*3/4 && harness.TimedOut(rj.Message) {
		why := fmt.Sprintf("too late to judge: %s was sent %v after the agent asked, and the declared timeout is %v, so the bridge timing it out may be right (%v); the case could not keep its schedule: on a busy machine, --slow gives the suite's own waits more time", what, late.Round(time.Millisecond), timeout, err)
		skipLate(ts, why)
	}
}

// endedOnTime: a question awaited again (a replay, after a reconnect or
// a restart) on a connection that opened after the question's deadline
// (the ask and the declared timeout), where the bridge said it ended it
// then: the agent got the timeout's deny no earlier than three quarters
// of the timeout after the ask, or the connection was told, from then on,
// that the session no longer waits on it. The bridge timing the question
// out is right (SDK-TIMEOUT; a bridge down past the deadline ends the
// question as it comes back), and the case could not keep its schedule:
// through a slow surface on a busy machine, two restarts and the tabs
// opened between them can outlast the timeout. A SKIP that says so, its
// row alone. It returns otherwise: a connection opened before the
// deadline must be shown the question, and a question not replayed to it
// is UI-RECONNECT-REPLAY's failure, checked first.
func endedOnTime(ts *testscript.TestScript, s *harness.Session, conn, qid string) {
	timeout := ts.Value(keyCfg).(*Config).Profile.Capabilities.Timeout.D()
	at, ok := s.AskedAt(qid)
	opened, open := s.OpenedAt(conn)
	if timeout <= 0 || !ok || !open || qid == "" || opened.Before(at.Add(timeout)) {
		return
	}
	from := at.Add(timeout * 3 / 4)
	said := ""
	if r, ok, _ := s.Response(); ok && !r.T.Before(from) {
		if g := protocol.ReadGranted(r.Result); g.Behavior == protocol.BehaviorDeny && harness.TimedOut(g.Message) {
			said = fmt.Sprintf("the agent got its timeout's deny %v after the ask", r.T.Sub(at).Round(time.Millisecond))
		}
	}
	if said == "" && s.ToldOverSince(conn, qid, from) {
		said = "the bridge told the connection it no longer waits on it"
	}
	if said == "" {
		return
	}
	why := fmt.Sprintf("too late to judge: question %s was awaited again on connection %s, which opened %v after the agent asked, past the declared timeout %v, and %s, so the bridge timing the question out is right; the case could not keep its schedule: on a busy machine, --slow gives the bridge's timeout and the suite's waits more time", qid, conn, opened.Sub(at).Round(time.Millisecond), timeout, said)
	skipLate(ts, why)
}

// skipLate ends a case the schedule of which a busy machine broke: a
// SKIP saying why, its row alone in a row (endRow), else the case.
func skipLate(ts *testscript.TestScript, why string) {
	endRow(ts, Skip, why)
	if row := ts.Getenv("DIMENSION"); row != "" && baseCtx(ts).Err() == nil {
		// No row reporter (go test): the row alone is skipped all the
		// same, as one a surface cannot reach is, and the case goes on.
		ts.Setenv("ROW_SKIPPED", row)
		ts.Logf("row %q skipped: %s", row, why)
		panic(rowEnded{})
	}
	if c := ts.Value(keyCfg).(*Config); c.unsupported != nil {
		c.unsupported(why)
	}
	ts.Fatalf("SKIP: %s", why)
}

// clearErrorRequired are the requirements that want a refusal the person
// sees: an answer that is too late, or malformed, dropped without a word
// (ignored) breaks them. Elsewhere (a blank answer a chat drops) ignored is
// as good as refused.
var clearErrorRequired = map[string]bool{"SDK-LATE-ANSWER": true, "SDK-BAD-INPUT": true}

// timedOutMeanwhile: a question the case watched stay unanswered got the
// bridge's timeout deny, three quarters of the declared timeout or more
// after the ask. That is SDK-TIMEOUT's rule kept, not another requirement's
// breach: the case could not keep its schedule (a stalled machine), and is
// a SKIP that says so (its row alone, in a row). It returns otherwise.
func timedOutMeanwhile(ts *testscript.TestScript, s *harness.Session, qid string) {
	timeout := ts.Value(keyCfg).(*Config).Profile.Capabilities.Timeout.D()
	r, ok, _ := s.Response()
	at, asked := s.AskedAt(qid)
	if timeout <= 0 || !ok || !asked {
		return
	}
	g := protocol.ReadGranted(r.Result)
	took := r.T.Sub(at)
	if g.Behavior != protocol.BehaviorDeny || !harness.TimedOut(g.Message) || took < timeout*3/4 {
		return
	}
	why := fmt.Sprintf("too late to judge: question %s timed out (the agent got the deny %q %v after the ask; the declared timeout is %v) while the case watched that nothing answered it; the case could not keep its schedule: on a busy machine, --slow gives the bridge's timeout and the suite's waits more time", qid, clip.String(g.Message, 120), took.Round(time.Millisecond), timeout)
	skipLate(ts, why)
}

// skipUnsupported: the surface has no such operation, so what the case
// checks cannot be reached through it. Neither a pass nor a failure: the
// run reports a SKIP naming the operation (go test, which has no such
// outcome here, a failure). In a generated row, the row alone is skipped:
// the lines left in it do nothing (commandFuncs), and the case goes on.
// It returns only in a row, where its caller may go on to do nothing.
func skipUnsupported(ts *testscript.TestScript, un *surface.Unsupported) {
	skipReached(ts, un.Error())
}

// skipReached is skipUnsupported for any reason what the row (or the case)
// checks cannot be reached: why says what.
func skipReached(ts *testscript.TestScript, why string) {
	c := ts.Value(keyCfg).(*Config)
	if row := ts.Getenv("DIMENSION"); row != "" {
		ts.Setenv("ROW_SKIPPED", row)
		if c.rowSkipped != nil {
			c.rowSkipped(row, why)
		}
		if c.row != nil {
			c.row(row, Skip, why)
		}
		ts.Logf("row %q skipped: %s", row, why)
		return
	}
	if c.unsupported != nil {
		c.unsupported(why)
	}
	ts.Fatalf("SKIP: %s", why)
}

func rejected(ts *testscript.TestScript, neg bool, code string, err error, what string, e *harness.Env, alias string) {
	var rj *surface.Rejected
	var un *surface.Unsupported
	switch {
	case errors.As(err, &un):
		skipUnsupported(ts, un)
	case neg && errors.Is(err, surface.ErrIgnored) && code == "" && clearErrorRequired[ts.Getenv("REQUIREMENT")]:
		fail(ts, "%s was taken and dropped without a word (the surface says ignored): the person must get a clear error\n%s", what, summary(e, alias))
	case neg && errors.Is(err, surface.ErrIgnored) && code == "":
		// Taken and dropped (an empty chat message): it is not an answer,
		// which is what the case checks next (nothing reaches the agent).
		ts.Logf("ignored by the surface, as it may be: %v", err)
	case !neg && errors.Is(err, surface.ErrIgnored):
		fail(ts, "%s was ignored by the surface; it must be taken\n%s", what, summary(e, alias))
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

// judge is the verdict on the bridge's reply err to an answer or skip
// (what) of question qid over connection conn: too late to judge (a SKIP),
// refused as taken over where the case made no takeover (another rule's),
// or as rejected says.
func judge(ts *testscript.TestScript, neg bool, code string, err error, s *harness.Session, qid, what string, e *harness.Env, alias, conn string) {
	tooLate(ts, neg, err, s, qid, what)
	takenOver(ts, neg, err, what, e, alias, conn)
	rejected(ts, neg, code, err, what, e, alias)
}

// notAboutParts are the refusals that say what became of a question (it
// ended, it is not known, the connection is not the session's), not that
// a part of its answers is refused.
var notAboutParts = map[string]bool{"resolved": true, "expired": true, "not_found": true, "session_taken": true}

// takenOver: an answer or skip the case expected taken, refused as from a
// connection taken over (session_taken), where the case made no takeover
// of conn (it opened no later connection of the session), is not the
// case's own requirement's failure: the bridge holds the wrong connection
// taken. Another session's connection taking it over is SDK-ISOLATION's;
// else (the wrong one marked, a page taken over that took the session
// back) it is UI-TAKEOVER's. Each fails in its own case, and the case is
// BLOCKED by the first. A takeover the case made goes on to rejected.
func takenOver(ts *testscript.TestScript, neg bool, err error, what string, e *harness.Env, alias, conn string) {
	var rj *surface.Rejected
	if neg || !errors.As(err, &rj) || rj.Code != "session_taken" {
		return
	}
	switch e.Takeover(alias, conn) {
	case harness.TakenForeign:
		blockedStop(ts, []string{"SDK-ISOLATION", "UI-TAKEOVER"}, "%s was refused as from a connection taken over (%v), and what took it over was another session's connection\n%s", what, err, summary(e, alias))
	case harness.TakenBack:
		blockedStop(ts, []string{"UI-TAKEOVER", "SDK-ISOLATION"}, "%s was refused as from a connection taken over (%v), though that connection took the session back after the last one of its session opened (reclaim): the bridge, or its client, still holds it taken over\n%s", what, err, summary(e, alias))
	case harness.TakenUnmade:
		blockedStop(ts, []string{"UI-TAKEOVER", "SDK-ISOLATION"}, "%s was refused as from a connection taken over (%v), though no later connection of its session was opened\n%s", what, err, summary(e, alias))
	}
}

func cmdAnswer(ts *testscript.TestScript, neg bool, args []string) {
	f, args := flags(ts, args, []string{"conn", "qid", "q", "code"}, []string{"partial", "hold", "crash"})
	if neg && f["crash"] != "" {
		ts.Fatalf("answer -crash: not with ! (no reply is checked)")
	}
	if f["hold"] != "" && (f["partial"] == "" || neg) {
		ts.Fatalf("answer -hold: only with -partial, and not with !")
	}
	if len(args) < 1 {
		ts.Fatalf("usage: answer [-conn C] [-qid ID] [-q TEXT] [-code CODE] [-partial [-hold]] [-crash] ALIAS [QUESTION=ANSWER…]")
	}
	e := envOf(ts)
	alias := args[0]
	s, qid := current(ts, e, alias)
	qid = chosenQuestion(ts, s, f, qid)
	if qid == "" {
		ts.Fatalf("answer: no current question (await question first)")
	}
	var answers map[string][]string
	if len(args) == 1 {
		var err error
		if answers, err = s.ScenarioAnswers(qid); err != nil {
			ts.Fatalf("answer: %v", err)
		}
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
	ctx, cancel := waitCtx(ts, 15*time.Second)
	defer cancel()
	what := fmt.Sprintf("the answer %s to %s", answersText(answers), qid)
	if f["crash"] != "" {
		_, err := s.AnswerCrashing(untilCrash(ctx, e), connFlag(f), qid, answers)
		crashing(ts, what, err)
		return
	}
	ack, err := s.Answer(ctx, connFlag(f), qid, answers)
	if f["partial"] != "" {
		// Part of a request's answers: the bridge may hold them or refuse
		// them, but must not take them as the whole answer.
		var rj *surface.Rejected
		var un *surface.Unsupported
		switch {
		case errors.As(err, &un):
			rejected(ts, false, "", err, what, e, alias) // a SKIP naming the operation
		case err == nil && ack.Status == "held":
			ts.Logf("held, waiting for %v", ack.Missing)
		case errors.As(err, &rj) && f["hold"] != "" && notAboutParts[rj.Code]:
			// Refused for what became of the question, not for being a
			// part: the row's failure, as for any answer.
			judge(ts, false, "", err, s, qid, what, e, alias, connFlag(f))
		case errors.As(err, &rj) && f["hold"] != "":
			// The bridge refuses parts, as it may: what the row checks of
			// a held part cannot be reached, as an operation the surface
			// lacks cannot.
			skipReached(ts, fmt.Sprintf("the bridge refused %s (%v), as SDK-ANSWER-ALL allows it to: what follows checks a held part", what, err))
		case errors.As(err, &rj):
			ts.Logf("refused: %v", err)
		case err == nil:
			blockedStop(ts, []string{"SDK-ANSWER-ALL"}, "%s answers only part of the request, and the bridge took it as %q (want it held or refused)\n%s", what, ack.Status, summary(e, alias))
		default:
			fail(ts, "%s: %v", what, err)
		}
		return
	}
	judge(ts, neg, f["code"], err, s, qid, what, e, alias, connFlag(f))
	if err == nil {
		ts.Logf("answer %s: %s %v", qid, ack.Status, ack.Missing)
		ts.Setenv("ACK", ack.Status)
	}
}

func cmdSkip(ts *testscript.TestScript, neg bool, args []string) {
	f, args := flags(ts, args, []string{"conn", "code", "qid", "q"}, []string{"crash"})
	if neg && f["crash"] != "" {
		ts.Fatalf("skip-question -crash: not with ! (no reply is checked)")
	}
	if len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: skip-question [-conn C] [-qid ID] [-q TEXT] [-code CODE] [-crash] ALIAS [REASON]")
	}
	e := envOf(ts)
	s, qid := mustCurrent(ts, e, "skip-question", args[0])
	qid = chosenQuestion(ts, s, f, qid)
	reason := s.SkipReason(qid, "User skipped this question")
	if len(args) == 2 {
		reason = args[1]
	}
	ctx, cancel := waitCtx(ts, 15*time.Second)
	defer cancel()
	if f["crash"] != "" {
		ctx = untilCrash(ctx, e)
	}
	err := s.Skip(ctx, connFlag(f), qid, reason)
	if f["crash"] != "" {
		crashing(ts, "skipping "+qid, err)
		return
	}
	judge(ts, neg, f["code"], err, s, qid, "skipping "+qid, e, args[0], connFlag(f))
}

// chosenQuestion is the question a command's -qid or -q (the question
// shown that asks TEXT: one of several pending at once) names, else cur.
func chosenQuestion(ts *testscript.TestScript, s *harness.Session, f map[string]string, cur string) string {
	switch {
	case f["qid"] != "":
		return f["qid"]
	case f["q"] != "":
		qid, err := s.QuestionAsking(f["q"])
		if err != nil {
			ts.Fatalf("-q: %v", err)
		}
		return qid
	}
	return cur
}

func cmdPermit(ts *testscript.TestScript, neg bool, args []string) {
	f, args := flags(ts, args, []string{"conn"}, nil)
	if neg || len(args) < 2 || len(args) > 3 || (args[1] != "allow" && args[1] != "deny") {
		ts.Fatalf("usage: permit [-conn C] ALIAS allow|deny [REASON]")
	}
	e := envOf(ts)
	s := e.Session(args[0])
	reason := ""
	if len(args) == 3 {
		reason = args[2]
	}
	ctx, cancel := waitCtx(ts, 15*time.Second)
	defer cancel()
	id, err := s.Permit(ctx, connFlag(f), args[1] == "allow", reason)
	rejected(ts, false, "", err, "the permission prompt "+id, e, args[0])
	if err == nil {
		ts.Logf("permit %s: %s", id, args[1])
	}
}

func cmdRaw(ts *testscript.TestScript, neg bool, args []string) {
	f, args := flags(ts, args, []string{"conn"}, []string{"any"})
	if neg || len(args) != 2 {
		ts.Fatalf("usage: raw [-conn C] [-any] ALIAS DATA")
	}
	e := envOf(ts)
	s, _ := current(ts, e, args[0])
	ctx, cancel := waitCtx(ts, 15*time.Second)
	defer cancel()
	what := fmt.Sprintf("the malformed answer %q", args[1])
	err := s.SendRaw(ctx, connFlag(f), []byte(args[1]))
	if f["any"] != "" {
		// Taken or refused, as the bridge decides: what reaches the agent
		// is checked next.
		var un *surface.Unsupported
		var rj *surface.Rejected
		switch {
		case errors.As(err, &un):
			skipUnsupported(ts, un)
		case err != nil && !errors.As(err, &rj) && !errors.Is(err, surface.ErrIgnored):
			fail(ts, "%s: %v (want the bridge to take it or refuse it)\n%s", what, err, summary(e, args[0]))
		}
		ts.Logf("the bridge's reply: %v", err)
		return
	}
	rejected(ts, true, "", err, what, e, args[0])
	// Its error says what is wrong with the answer, not that the question,
	// which waits on, was answered or is not there: a surface that
	// believes that stops offering it. (expired and session_taken may be
	// true of it: other rules judge them.)
	if rj := (*surface.Rejected)(nil); errors.As(err, &rj) && (rj.Code == "resolved" || rj.Code == "not_found") {
		fail(ts, "%s was refused with code %q (%s), which says what became of the question; the question still waits: the error must say what is wrong with the answer\n%s", what, rj.Code, rj.Message, summary(e, args[0]))
	}
}

func cmdRace(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: race ALIAS LABEL1 LABEL2")
	}
	e := envOf(ts)
	alias := args[0]
	s, qid := current(ts, e, alias)
	shown, ok := s.Shown()
	if !ok {
		ts.Fatalf("race: question %s was not shown", qid)
	}
	text := shown[0].Question
	ctx, cancel := waitCtx(ts, 15*time.Second)
	defer cancel()
	// The two answers go on two connections where the surface has a view
	// of every session besides the session's own (a surface.Overseer), so
	// the bridge gets them at once; otherwise (http) they are two requests
	// at once.
	conns := []string{"main", "main"}
	if _, ok := e.Surface().(surface.Overseer); ok {
		if err := e.OpenAll(ctx, alias, "race"); err != nil {
			fail(ts, "opening a second connection for the race: %v", err)
		}
		defer e.Disconnect(alias, "race")
		if err := e.Await(ctx, harness.NewQuestion(alias, "race")); err != nil {
			if q, ok := s.NotReplayed("race"); ok {
				blockedStop(ts, []string{"UI-RECONNECT-REPLAY"}, "question %s was pending when a second connection opened for the race, and the bridge did not replay it to it: %v\n%s", q, err, summary(e, alias))
			}
			fail(ts, "the second connection does not show the question: %v", err)
		}
		if q, ok := s.NotReplayed("race"); ok && q == qid {
			// It showed a later question, never this one.
			blockedStop(ts, []string{"UI-RECONNECT-REPLAY"}, "question %s was pending when a second connection opened for the race, and the bridge did not replay it to it\n%s", q, summary(e, alias))
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
			_, errs[i] = s.Answer(ctx, conns[i], qid, map[string][]string{text: {label}})
		}()
	}
	close(start)
	wg.Wait()
	var rj *surface.Rejected
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

// cmdCheck reads the agent's failures once it has given its own verdict on
// every answer it received: a check before that would race with it.
func cmdCheck(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: check ALIAS")
	}
	e := envOf(ts)
	s, _ := current(ts, e, args[0])
	ctx, cancel := waitCtx(ts, 15*time.Second)
	defer cancel()
	all, err := s.Problems(ctx)
	if err != nil {
		fail(ts, "the agent of session %s gave no verdict on the answers it received: %v\n%s", args[0], err, summary(e, args[0]))
	}
	checkInvariants(ts, e, args[0])
	// What reached the agent for a question the person skipped is the
	// skip's, which SDK-SKIP-DENY owns (and SDK-NO-EMPTY, an empty allow):
	// in another case it is a precondition that broke, and the case is
	// BLOCKED by it.
	var problems []string
	for _, p := range all {
		if req := ts.Getenv("REQUIREMENT"); p.Skipped && req != "SDK-SKIP-DENY" && req != "SDK-NO-EMPTY" {
			failOwned(ts, "SDK-SKIP-DENY", "the agent of session %s, on a question the person skipped: %s", args[0], p.Text)
			continue
		}
		if len(p.Owners) > 0 && !slices.Contains(p.Owners, ts.Getenv("REQUIREMENT")) {
			// An answer keyed, completed, joined or changed wrong, or
			// another tool's prompt decided wrong: its rule's.
			what := "an answer otherwise than the person gave it"
			if p.Owners[0] == "SDK-PASSTHROUGH" {
				what = "another tool's permission prompt decided otherwise than the bridge's policy says, or its input changed"
			}
			failOwned(ts, p.Owners[0], "the agent of session %s got %s: %s", args[0], what, p.Text)
			continue
		}
		problems = append(problems, p.Text)
	}
	if len(problems) > 0 {
		fail(ts, "the agent of session %s reported:\n  %s\n%s", args[0], strings.Join(problems, "\n  "), summary(e, args[0]))
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
	r, ok, err := s.Response()
	ts.Check(err)
	if !ok {
		fail(ts, "the agent received no control_response for question %s\n%s", qid, summary(e, alias))
	}
	if w := f["within"]; w != "" {
		req, _ := s.Request()
		if delay, max := r.T.Sub(req.T), duration(ts, w, ""); delay > max {
			fail(ts, "the control_response came %v after the request, more than %v", delay.Round(time.Millisecond), max)
		}
	}
	res := gjson.ParseBytes(r.Result)
	got := res.Get(path)
	if len(args) == 2 {
		if got.Exists() == neg {
			fail(ts, "%s in the permission result: exists=%v, want %v; the result: %s", path, got.Exists(), !neg, res.Raw)
		}
		return
	}
	want := args[2]
	switch {
	case strings.HasPrefix(want, "~"):
		re, err := regexp.Compile(want[1:])
		ts.Check(err)
		ok = got.Exists() && re.MatchString(got.String())
	case json.Valid([]byte(want)) && (strings.ContainsAny(want[:1], `{["0123456789-`) || want == "true" || want == "false" || want == "null"):
		ok = got.Exists() && protocol.SameJSON([]byte(got.Raw), []byte(want))
	default:
		ok = got.Exists() && got.String() == want
	}
	if ok == neg {
		verb := "want"
		if neg {
			verb = "want anything but"
		}
		msg := fmt.Sprintf("%s in the permission result the agent received is %s, %s %s; the result: %s", path, orMissing(got), verb, want, res.Raw)
		if owners := s.AnswerOwners(); len(owners) > 0 && !slices.Contains(owners, ts.Getenv("REQUIREMENT")) {
			failOwned(ts, owners[0], "%s", msg) // an answer keyed, completed, joined or changed wrong: its rule's
			return
		}
		fail(ts, "%s", msg)
	}
}

func orMissing(r gjson.Result) string {
	if !r.Exists() {
		return "missing"
	}
	return r.Raw
}

func cmdDelivered(ts *testscript.TestScript, neg bool, args []string) {
	f, args := flags(ts, args, []string{"conn"}, nil)
	if neg || len(args) != 1 {
		ts.Fatalf("usage: delivered [-conn C] ALIAS")
	}
	e := envOf(ts)
	s, _ := current(ts, e, args[0])
	if err := s.Delivered(connFlag(f)); err != nil {
		failOwned(ts, "SDK-DELIVER", "%v\n%s", err, summary(e, args[0]))
	}
}

func cmdPending(ts *testscript.TestScript, neg bool, args []string) {
	f, args := flags(ts, args, []string{"conn", "within"}, nil)
	if neg || len(args) != 2 {
		ts.Fatalf("usage: pending [-conn C] [-within D] ALIAS N")
	}
	n, err := strconv.Atoi(args[1])
	ts.Check(err)
	e := envOf(ts)
	s, qid := current(ts, e, args[0])
	ctx, cancel := waitCtx(ts, 15*time.Second)
	defer cancel()
	// -within: a list that follows the events a surface hears may lag the
	// agent by as long (times --slow); it must come right by then.
	var settle time.Time
	if f["within"] != "" {
		settle = time.Now().Add(ts.Value(keyCfg).(*Config).scaled(duration(ts, f["within"], "")))
	}
	var ps []surface.Pending
	var ids []string
	found := false
	late := map[string]bool{} // the questions listed too late, told once
	for {
		asked := time.Now() // a listing is as old as the request for it
		if ps, err = s.Pending(ctx, connFlag(f)); err != nil {
			fail(ts, "listing pending questions: %v", err)
		}
		listedLate(ts, e, s, connFlag(f), ps, asked, late)
		ids, found = nil, false
		for _, p := range ps {
			ids = append(ids, p.QuestionID)
			found = found || p.QuestionID == qid
		}
		if (len(ps) == n && (n == 0 || qid == "" || found)) || !time.Now().Before(settle) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(ps) != n || (n > 0 && qid != "" && !found) {
		why := ""
		if n > 0 && !found {
			why = expiredMeanwhile(ts, e, s, args[0], qid)
		}
		fail(ts, "the surface lists %d pending question(s) %v, want %d including %s%s\n%s", len(ps), ids, n, qid, why, summary(e, args[0]))
	}
}

// listedLate fails SDK-TIMEOUT where a listing asked for at t shows a question
// pending more than 1 s past its deadline (its ask and the declared
// timeout), or past the connection's opening if later (a bridge down at
// the deadline ends the question as it comes back, before a connection
// opens). Deadlines run from the ask: a restart, a reconnect or a part
// held does not move them. Not for a connection whose stream was cut
// (what it lists may be as old as that), nor an MCP session's question,
// whose ask server keeps the time. Each question once (told: the ones
// told already).
func listedLate(ts *testscript.TestScript, e *harness.Env, s *harness.Session, conn string, ps []surface.Pending, t time.Time, told map[string]bool) {
	timeout := ts.Value(keyCfg).(*Config).Profile.Capabilities.Timeout.D()
	if timeout <= 0 || s.IsMCP() {
		return
	}
	for _, p := range ps {
		at, live, due, ok := s.Due(conn, p.QuestionID, timeout)
		if !ok || told[p.QuestionID] {
			continue
		}
		if late := t.Sub(due); late > time.Second {
			told[p.QuestionID] = true
			failOwned(ts, "SDK-TIMEOUT", "connection %s lists question %s as pending %v after the ask, the declared timeout being %v (the connection live since %v after the ask): %v past its deadline; the deadline runs from the ask, and a restart or a reconnect does not move it\n%s",
				conn, p.QuestionID, t.Sub(at).Round(time.Millisecond), timeout, live.Sub(at).Round(time.Millisecond), late.Round(time.Millisecond), summary(e, s.Alias()))
		}
	}
}

// expiredMeanwhile: a question the case expected still pending that the
// surface was told had expired. Told so three quarters of the declared
// timeout or more after the agent asked, the bridge kept SDK-TIMEOUT's
// rule and the case could not keep its schedule (a stalled machine): a
// SKIP that says so. Told so sooner, the words the failure adds: the
// question ended early, which is the failure's to show.
func expiredMeanwhile(ts *testscript.TestScript, e *harness.Env, s *harness.Session, alias, qid string) string {
	var told time.Time
	e.Read(func(st *harness.State) {
		if ss := st.Session(alias); ss != nil {
			for _, ev := range ss.Events() {
				if ev.QuestionID == qid && ev.Type == surface.EventExpired && told.IsZero() {
					told = ev.T
				}
			}
		}
	})
	timeout := ts.Value(keyCfg).(*Config).Profile.Capabilities.Timeout.D()
	at, asked := s.AskedAt(qid)
	if told.IsZero() || timeout <= 0 || !asked {
		return ""
	}
	took := told.Sub(at).Round(time.Millisecond)
	if took < timeout*3/4 {
		return fmt.Sprintf(" (the surface was told it expired %v after the agent asked; the declared timeout is %v)", took, timeout)
	}
	skipLate(ts, fmt.Sprintf("too late to judge: question %s was expected pending, and the surface was told it expired %v after the agent asked, past three quarters of the declared timeout %v, so the bridge timing it out may be right; the case could not keep its schedule: on a busy machine, --slow gives the bridge's timeout and the suite's waits more time", qid, took, timeout))
	return ""
}

func cmdStatus(ts *testscript.TestScript, neg bool, args []string) {
	f, args := flags(ts, args, []string{"conn", "timeout"}, []string{"done"})
	if neg || len(args) != 1 {
		ts.Fatalf("usage: status [-conn C] [-timeout D] [-done] ALIAS")
	}
	e := envOf(ts)
	alias := args[0]
	_, qid := current(ts, e, alias)
	conn := connFlag(f)
	exp := harness.WaitingFor(alias, conn, qid)
	if f["done"] != "" {
		exp = harness.NotWaitingFor(alias, conn, qid)
	}
	ctx, cancel := waitCtx(ts, duration(ts, f["timeout"], "5s"))
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
