package conformance

import (
	"fmt"
	"maps"
	"regexp"

	"slices"
	"sort"
	"strings"

	"github.com/askctl/askctl/claudecli"
	"github.com/askctl/askctl/harness"
	"github.com/askctl/askctl/profile"
	"github.com/askctl/askctl/surface"

	"pgregory.net/rapid"
)

// The model: the requirements as a state machine, for the explorer
// (explore.go). It is pure: it generates a sequence of steps (sessions
// whose agents ask requests of every shape, connections that drop, come
// back and take over, a person who answers, holds part, skips with and
// without a reason, answers late, answers from another session; agents
// that withdraw a question or exit; questions left to time out) and
// renders each step as lines of the suite's own case language, with what
// the model says must follow (the answer the agent gets, byte for byte;
// the question replayed; the surface told). After every step the script
// checks the invariants (harness.Env.Invariants). The script is the test:
// running it is the check, and a failing one, shrunk, is a case any bridge
// author can replay with askctl conformance --case FILE.

// xModel is the state of one generated sequence.
type xModel struct {
	caps     xCaps
	sessions []*xSession
	lines    []string
	files    map[string]string
	steps    int
	ops      map[string]int // the steps taken, by operation
	// overdue counts the questions the person ended past their budget
	// (and two steps: onTime): a defect of the model's clock
	// (TestModelKeepsItsClock).
	overdue   int
	reqOfLine string  // the requirement the lines written now check
	pairs     int     // requests asked beside another, so far (their ids: ALIAS_Pn)
	now       float64 // the model's clock, in seconds of waiting
	restarted bool    // the bridge was restarted (restart, -kill or not)
	// known are requirements the bridge is known to fail (the run's
	// expected failures): their own checks are left out, so that the
	// exploration looks past them.
	known map[string]string
}

// checks reports whether the lines that only requirement id checks are
// written.
func (m *xModel) checks(id string) bool { _, known := m.known[id]; return !known }

// xCaps are what the profile lets the model do.
type xCaps struct {
	reconnect, takeover, resume, allowTools, denyTools bool
	// offline: a connection's client can lose the network and come back
	// by itself (a page): drop and resume take it offline and online.
	offline bool
	// persist: the bridge keeps its questions across a restart, so the
	// model may restart it (once a sequence).
	persist bool
	// crashAt are the points the bridge can be armed to crash at as it
	// stores or writes what the person did (capabilities.crash:
	// answer-committed, answer-written, skip-committed), so the model may
	// crash it there instead of a restart.
	crashAt []string
	// mcp: the bridge serves an MCP ask_user tool; some sessions ask
	// through it (one question a call).
	mcp bool
	// seconds is the declared timeout in seconds (0: none).
	seconds float64
	// pace is how many times slower than a socket's a step is through
	// the surface (0 or 1: as a socket's): a page in a browser takes
	// about half a second a step on a busy machine.
	pace float64
	// lacks are the operations the surface said it has not (a chat with
	// no skip button), learnt as sequences run: none is generated again.
	lacks map[string]bool
}

func (c xCaps) paceOr1() float64 { return max(1, c.pace) }

// can reports whether the surface has operation op, as far as is known.
func (c xCaps) can(op string) bool { return !c.lacks[op] }

// canPart: a surface may lack answering part of a request ("partial
// answer" on a page).
func (c xCaps) canPart() bool {
	for op := range c.lacks {
		if strings.Contains(op, "part") {
			return false
		}
	}
	return true
}

// Time. A question the person is to answer must be answered before the
// bridge's timeout ends it, so the model keeps a clock: each step costs
// what it waits at most (a check that nothing happens waits 300 ms), and
// no step is taken that would leave a question the person is to answer
// waiting past half the timeout. The other half is the margin for a busy
// machine. A step through a surface that is slow to drive (a page in a
// browser) costs more: xCaps.pace.
const (
	costStep = 0.1
	costHold = 0.4
)

// stepCost and holdCost are what a step, and a step that waits to see
// nothing happen, cost through this surface.
func (m *xModel) stepCost() float64 { return costStep * m.caps.paceOr1() }
func (m *xModel) holdCost() float64 { return costHold * m.caps.paceOr1() }

// budget is how long a question the person is to answer may wait.
func (m *xModel) budget() float64 {
	if m.caps.seconds <= 0 {
		return 1e9
	}
	return m.caps.seconds / 2
}

// cancelAfter is when an agent that withdraws its question, or exits,
// does so: within the timeout, so it is the agent that ends it.
func (m *xModel) cancelAfter() float64 {
	if m.caps.seconds <= 0 {
		return 1.0
	}
	return m.caps.seconds / 2
}

// mcpToolTimeout is the CLI's MCP tool timeout in a session whose agent
// has an ask_user call end so (cancel_after): it ends every call of the
// session with no result by then. It comes before the bridge's own
// timeout, and after the person's budget for the other calls, half a
// second from each.
func (m *xModel) mcpToolTimeout() float64 {
	least := claudecli.MinMCPToolTimeout.Seconds()
	if m.caps.seconds <= 0 {
		return 2 * least
	}
	return max(0.75*m.caps.seconds, least)
}

// mcpCancels is whether the CLI may end an ask_user call before the
// bridge's timeout does, half a second before it at least.
func (m *xModel) mcpCancels() bool {
	return m.caps.seconds <= 0 || m.caps.seconds >= m.mcpToolTimeout()+0.5
}

// withdrawsAt is when s's agent withdraws its current request (outcome
// cancel or exit), on the model's clock.
func (m *xModel) withdrawsAt(s *xSession) float64 {
	r := s.req()
	if s.mcp {
		return r.since + m.mcpToolTimeout()
	}
	return r.since + m.cancelAfter()
}

// budgetOf is how long a question of s the person is to answer may wait:
// in a session with a CLI tool timeout, less than it.
func (m *xModel) budgetOf(s *xSession) float64 {
	if s.mcp && s.cut() {
		return min(m.budget(), m.mcpToolTimeout()-0.5)
	}
	return m.budget()
}

// onTime counts r, ended by the person now, as overdue when it waited
// past its budget and two steps (the one that brought it within reach, a
// connect, and the one that ends it, are not held to it); an orphan keeps
// the deadline of its ask before the restart, and is not held to one.
func (m *xModel) onTime(s *xSession, r *xReq) {
	if !r.orphan && m.now-r.since > m.budgetOf(s)+2*m.stepCost()+1e-9 {
		m.overdue++
	}
}

// spend takes a step of cost seconds, or skips it when it would leave a
// question the person is to answer (but for except) past its budget: one
// asked, or one an MCP agent asks as the CLI ends the call before it.
func (m *xModel) spend(t *rapid.T, cost float64, except *xReq) {
	for _, s := range m.sessions {
		r := s.req()
		if r == nil || r.done {
			continue
		}
		since := r.since
		for i := s.cur; s.mcp && r.outcome == "cancel" && i+1 < len(s.reqs); i++ {
			// The CLI ends the call at its tool timeout, and the agent
			// asks the next at once.
			r, since = s.reqs[i+1], since+m.mcpToolTimeout()
		}
		// An orphaned question keeps its deadline across the restart.
		if r == except || (r.outcome != "answer" && r.outcome != "skip") {
			continue
		}
		if m.now+cost-since > m.budgetOf(s) {
			t.Skip("a question would wait past its budget")
		}
	}
	m.now += cost
}

type xSession struct {
	alias   string
	reqs    []*xReq
	cur     int    // the request being asked; len(reqs) once the agent is done
	conn    string // the open connection, "" when none
	dropped bool   // conn's stream is cut (drop), to be resumed
	reads   int    // Reads asked beside a question so far
	// resumed: conn's stream was resumed (drop, resume): what comes after
	// must reach it, each end of a question it was shown among it.
	resumed bool
	conns   int // connections opened so far
	shown   int // questions awaited (ALIAS_Q1…)
	exited  bool
	// killed: its agent died with the bridge (a restart, -kill or not); its verdict
	// is no longer checked, but a resumed agent's is.
	killed bool
	// mcp: its agent asks through the bridge's MCP ask_user tool (route
	// mcp, print mode): one question a call, answered, skipped or timed
	// out, and its main connection watches every session. The steps of
	// connections, sessions and restarts are not taken with it.
	mcp bool
}

// xReq is one AskUserQuestion request the session's agent asks, and how
// its person (or its agent, or time) ends it.
type xReq struct {
	qs      []question
	answers map[string]any // the person's answers (outcome answer): label, []string, or free text
	outcome string         // answer, skip, timeout, cancel, exit
	reason  string         // a skip's reason ("" gives none)
	tool    string         // another tool's prompt before the ask: "allow", "deny" or ""
	held    map[string]bool
	since   float64 // when the agent asked it, on the model's clock
	shown   int     // its number among the session's questions awaited (ALIAS_Qn), 0 before
	done    bool    // ended: the agent got its response, or withdrew it
	// orphan: pending when the bridge was killed, so its agent is gone; it
	// is listed again after the restart, still on the clock (it keeps its
	// deadline), and an answer resumes the session (the late-answer path).
	orphan bool
	seen   bool // the open connection showed it (since it opened)
	// pair is another AskUserQuestion call of the same model response
	// (the CLI runs both at once, so both are pending together), ended by
	// the person as the two show; pairFirst puts its call first in the
	// response. toolBeside puts tool (a Read) in the response too, its
	// prompt then coming while the question waits.
	pair       *xReq
	pairFirst  bool
	toolBeside bool
	// plan makes tool, before the ask, an ExitPlanMode call, whose prompt
	// the CLI marks requires_user_interaction as it does a question's,
	// rather than a Bash command's (an ask of an even number of questions).
	plan bool
	// qvar names the variable of its question id where the order shown
	// does not tell it (a pair's): "" for ALIAS_Qn.
	qvar string
	// bare, on the MCP route, leaves out what ask_user's schema makes
	// optional: "" sends every field, "descriptions" options with labels
	// only and no multiSelect when false, "options" the question alone,
	// answered in the person's own words.
	bare string
}

// endedReqs are the requests of s that ended once shown, those asked
// beside another in one model response among them.
func (s *xSession) endedReqs() []*xReq {
	var out []*xReq
	for _, r := range s.reqs {
		for _, q := range []*xReq{r, r.pair} {
			if q != nil && q.done && q.shown > 0 {
				out = append(out, q)
			}
		}
	}
	return out
}

func (s *xSession) req() *xReq {
	if s.cur < len(s.reqs) {
		return s.reqs[s.cur]
	}
	return nil
}

func (m *xModel) emit(format string, args ...any) {
	m.lines = append(m.lines, fmt.Sprintf(format, args...))
}

// requirement names the requirement the next lines check (a failure
// names it), writing the line only when it changes.
func (m *xModel) requirement(id string) {
	if m.reqOfLine != id {
		m.emit("requirement %s", id)
		m.reqOfLine = id
	}
}

// --- generators -----------------------------------------------------------

var (
	// A question's text is the agent's, byte for byte, white space at its
	// edges too: it keys the answers (one ends in two spaces, as a
	// model's text may).
	xTexts = []string{
		"Which database should I use?", "How should I format the output?", "¿Qué formato prefieres?",
		"Welche Sprache soll ich nutzen?", "どのデータベースを使いますか？", "Which one? (pick 1.2 or *)",
		"Deploy now — or wait?  ", "Which colours, 🎨?", "Include \"quoted\" <tags>?", "Which sections?",
	}
	xHeaders = []string{"Database", "Format", "Formato", "Sprache", "データ", "Pick", "Deploy", "🎨 Colours", "Tags", "Sections"}
	xLabels  = []string{"Postgres", "SQLite", "Summary", "Detailed", "Ja", "Nein", "日本語", "Red, bright", "Blue, dark", "Green", "Now", "Later", "1.2", "Ünïcödé"}
	xFree    = []string{
		"Use MySQL, actually", "  two  spaces and edges  ", "Línea con acentos — y guion", "絵文字 🚀 and text",
		"a, b, c", "tab\there", "Other: none of these", "line one\nline two",
		`Say "yes" & <mean> it`, "it's <b>bold</b> & fine",
	}
	// A skip's reason reaches the agent byte for byte, but a page may trim
	// what the person typed around it (the requirement asks for a
	// non-empty reason, not its edges), so no reason starts or ends in
	// white space; free text ("Other") must keep its edges.
	xReasons = []string{"Not now, thanks", "Ask me later — I’m busy", "No: ¡cambia el plan!", "skip 🙅", "two  spaces\tand a tab"}
	// A reason of white space alone is none: the agent must still be told
	// a reason (a deny's message is never blank), the bridge's own.
	xSkipReasons = append(slices.Clip(xReasons), "   ", " \t ")
)

// blank: a skip's reason that gives none (none, or white space alone).
func blank(reason string) bool { return strings.TrimSpace(reason) == "" }

func (m *xModel) genQuestion(t *rapid.T, used map[string]bool) question {
	var free []int
	for i, s := range xTexts {
		if !used[s] {
			free = append(free, i)
		}
	}
	i := rapid.SampledFrom(free).Draw(t, "question")
	used[xTexts[i]] = true
	n := rapid.IntRange(2, 4).Draw(t, "options")
	perm := rapid.Permutation(xLabels).Draw(t, "labels")
	qq := question{Question: xTexts[i], Header: xHeaders[i], MultiSelect: rapid.Bool().Draw(t, "multiSelect")}
	for _, l := range perm[:n] {
		qq.Options = append(qq.Options, option{Label: l, Description: "Means " + l})
	}
	return qq
}

// genAnswer is what the person gives for qq: a label, labels in the order
// picked, or free text.
func genAnswer(t *rapid.T, qq question) any {
	if len(qq.Options) == 0 { // a question alone: the person's own words
		return rapid.SampledFrom(xFree).Draw(t, "text")
	}
	if rapid.IntRange(0, 4).Draw(t, "free") == 4 { // (rapid shrinks to 0: to a label)
		return rapid.SampledFrom(xFree).Draw(t, "text")
	}
	labels := make([]string, len(qq.Options))
	for i, o := range qq.Options {
		labels[i] = o.Label
	}
	if !qq.MultiSelect {
		return rapid.SampledFrom(labels).Draw(t, "label")
	}
	perm := rapid.Permutation(labels).Draw(t, "picked")
	picked := slices.Clone(perm[:rapid.IntRange(1, len(perm)).Draw(t, "npicked")])
	if rapid.IntRange(0, 3).Draw(t, "otherToo") == 3 { // labels and an Other text (shrunk to none)
		picked = append(picked, rapid.SampledFrom(xFree).Draw(t, "otherText"))
	}
	return picked
}

func (m *xModel) genReq(t *rapid.T, last, mcp, cut bool) *xReq {
	r := &xReq{held: map[string]bool{}}
	used := map[string]bool{}
	n := 1 // an ask_user call asks one question
	if !mcp {
		n = rapid.IntRange(1, 4).Draw(t, "questions")
	}
	for range n {
		r.qs = append(r.qs, m.genQuestion(t, used))
	}
	if mcp {
		// The schema's optional fields left out (shrunk to every field).
		switch rapid.IntRange(0, 5).Draw(t, "bare") {
		case 4:
			r.bare = "descriptions"
			for i := range r.qs[0].Options {
				r.qs[0].Options[i].Description = ""
			}
		case 5:
			r.bare = "options"
			r.qs[0].Options, r.qs[0].MultiSelect = nil, false
		}
	}
	outcomes := []string{"answer", "answer", "answer"}
	if m.caps.can("skip") {
		outcomes = append(outcomes, "skip")
	}
	if last { // the agent asks nothing after a withdrawal, an exit or (to keep the clock) a timeout
		if !mcp {
			outcomes = append(outcomes, "cancel", "exit")
		}
		if m.caps.seconds > 0 && !cut { // (the CLI's tool timeout, when set, comes first)
			outcomes = append(outcomes, "timeout")
		}
	}
	if mcp && m.mcpCancels() {
		// The CLI ends the ask_user call (its tool timeout):
		// notifications/cancelled, which withdraws the question as a
		// control_cancel_request does. The turn goes on: the agent may ask
		// again, alive, so the withdrawal is the call's, not its exit's.
		outcomes = append(outcomes, "cancel")
	}
	r.outcome = rapid.SampledFrom(outcomes).Draw(t, "outcome")
	switch r.outcome {
	case "answer":
		r.answers = map[string]any{}
		for _, qq := range r.qs {
			r.answers[qq.Question] = genAnswer(t, qq)
		}
	case "skip":
		if rapid.Bool().Draw(t, "reasoned") {
			r.reason = rapid.SampledFrom(xSkipReasons).Draw(t, "reason")
		}
	}
	var tools []string
	if m.caps.allowTools {
		tools = append(tools, "allow")
	}
	if m.caps.denyTools {
		tools = append(tools, "deny")
	}
	if len(tools) > 0 && !mcp && rapid.IntRange(0, 3).Draw(t, "tool") == 3 { // (shrunk to none)
		r.tool = rapid.SampledFrom(tools).Draw(t, "policy")
		// A Read runs at once with the question, a Bash before it.
		r.toolBeside = rapid.Bool().Draw(t, "toolBeside")
		// The prompt before an ask of an even number of questions is
		// ExitPlanMode's, of an odd number a Bash command's: no draw of its
		// own, so that every sequence drawn before stays as it was (seed 1
		// still finds what it found), and it shrinks with the questions.
		r.plan = !r.toolBeside && len(r.qs)%2 == 0
	}
	// Not beside a request the agent withdraws or exits on: that ends the
	// other call of the response too, at a moment of the agent's.
	if !mcp && r.tool == "" && (r.outcome == "answer" || r.outcome == "skip") && rapid.IntRange(0, 3).Draw(t, "pair") == 3 { // (shrunk to none)
		// Another question in the same model response: pending together.
		p := &xReq{held: map[string]bool{}, outcome: "answer"}
		for range rapid.IntRange(1, 2).Draw(t, "pairQuestions") {
			p.qs = append(p.qs, m.genQuestion(t, used))
		}
		if m.caps.can("skip") && rapid.Bool().Draw(t, "pairSkip") {
			p.outcome = "skip"
			if rapid.Bool().Draw(t, "pairReasoned") {
				p.reason = rapid.SampledFrom(xSkipReasons).Draw(t, "pairReason")
			}
		} else {
			p.answers = map[string]any{}
			for _, qq := range p.qs {
				p.answers[qq.Question] = genAnswer(t, qq)
			}
		}
		r.pair, r.pairFirst = p, rapid.Bool().Draw(t, "pairFirst")
	}
	return r
}

// askStep is r's AskUserQuestion call as a scenario step: what the agent
// expects of it.
func (r *xReq) askStep(cancelAfter float64) map[string]any {
	step := map[string]any{"ask": map[string]any{"questions": r.qs}}
	switch r.outcome {
	case "answer":
		step["user"] = map[string]any{"answers": r.answers}
	case "skip":
		expect := map[string]any{"behavior": "deny"}
		if !blank(r.reason) {
			// The person's reason reaches the agent byte for byte.
			expect["match"] = map[string]any{"message": r.reason}
		}
		step["expect"] = expect
	case "timeout":
		step["expect"] = map[string]any{"behavior": "deny"}
	case "cancel":
		step["user"] = map[string]any{"silent": true}
		step["cancel_after"] = fmt.Sprintf("%dms", int(cancelAfter*1000))
	case "exit":
		step["user"] = map[string]any{"silent": true}
		step["exit_after"] = fmt.Sprintf("%dms", int(cancelAfter*1000))
		step["exit_code"] = 1
	}
	return step
}

// steps is the scenario the session's agent plays.
func (s *xSession) scenario(cancelAfter, toolTimeout float64) string {
	if s.mcp {
		return s.mcpScenario(toolTimeout)
	}
	var b strings.Builder
	b.WriteString(`{"prompt":"Help me set things up."}` + "\n")
	for i, r := range s.reqs {
		file := fmt.Sprintf("askctl-%s-%d.txt", s.alias, i)
		switch {
		case r.tool != "" && !r.toolBeside && r.plan:
			b.WriteString(planStep(r.tool == "allow") + "\n")
		case r.tool != "" && !r.toolBeside:
			b.WriteString(toolStep(file, r.tool == "allow") + "\n")
		}
		// The calls of one model response: the question, and the other
		// question or the Read that runs at once with it.
		calls := []string{mustJSON(r.askStep(cancelAfter))}
		if p := r.pair; p != nil {
			calls = append(calls, mustJSON(p.askStep(cancelAfter)))
			if r.pairFirst {
				calls[0], calls[1] = calls[1], calls[0]
			}
		}
		for k, c := range calls {
			if k > 0 {
				c = beside(c)
			}
			b.WriteString(c + "\n")
		}
		if r.tool != "" && r.toolBeside {
			b.WriteString(besideAfter(readStep(file, r.tool == "allow"), readAfter) + "\n")
		}
		if r.outcome == "cancel" || r.outcome == "exit" {
			break // a withdrawal ends the turn; an exit, the agent
		}
		b.WriteString(mustJSON(map[string]any{"text": fmt.Sprintf("Noted %d.", i+1)}) + "\n")
	}
	return b.String()
}

// mcpScenario is what an agent that asks through ask_user plays: each
// request one call.
func (s *xSession) mcpScenario(toolTimeout float64) string {
	var b strings.Builder
	b.WriteString(mustJSON(map[string]any{"name": s.alias, "route": "mcp", "origin": "synthetic"}) + "\n")
	b.WriteString(`{"prompt":"Ask me what you need."}` + "\n")
	for i, r := range s.reqs {
		qq := r.qs[0]
		input := map[string]any{"question": qq.Question}
		var opts []map[string]any
		for _, o := range qq.Options {
			opt := map[string]any{"label": o.Label}
			if r.bare == "" {
				opt["description"] = o.Description
			}
			opts = append(opts, opt)
		}
		if r.bare != "options" {
			input["options"] = opts
		}
		if r.bare == "" || qq.MultiSelect {
			input["multiSelect"] = qq.MultiSelect
		}
		step := map[string]any{"mcp": map[string]any{"server": "askctl", "tool": "ask_user", "input": input}}
		switch r.outcome {
		case "answer":
			step["user"] = map[string]any{"answers": r.answers}
		case "skip":
			step["user"] = map[string]any{"skip": r.reason}
		case "timeout":
			step["user"] = map[string]any{"silent": true}
		case "cancel":
			step["user"] = map[string]any{"silent": true}
			step["cancel_after"] = fmt.Sprintf("%dms", int(toolTimeout*1000))
		}
		b.WriteString(mustJSON(step) + "\n")
		b.WriteString(mustJSON(map[string]any{"text": fmt.Sprintf("Noted %d.", i+1)}) + "\n")
	}
	return b.String()
}

// --- actions --------------------------------------------------------------

// actions are the model's steps for rapid's state machine: each checks its
// precondition (rapid.T.Skip when it does not hold) and writes its lines.
func (m *xModel) actions() map[string]func(*rapid.T) {
	acts := map[string]func(*rapid.T){
		"start":        m.start,
		"answer":       m.answer,
		"answerPart":   m.answerPart,
		"skip":         m.skip,
		"expire":       m.expire,
		"withdraw":     m.withdraw,
		"late":         m.late,
		"otherSession": m.otherSession,
		"disconnect":   m.disconnect,
		"connect":      m.connect,
		"takeover":     m.takeover,
		"drop":         m.drop,
		"resume":       m.resume,
		"pending":      m.pending,
		"think":        m.think,
		"restart":      m.restart,
		"crash":        m.crash,
	}
	names := slices.Sorted(maps.Keys(acts))
	// One step: the operations in an order drawn at random, the first
	// whose precondition holds taken. rapid's own choice among actions
	// (Repeat's) draws a biased index, so the operations late in the
	// alphabet (skip, start, takeover, think, withdraw) came seldom, and
	// where only they could be taken it gave up ("can't find a valid
	// action", which ended an exploration). A permutation is drawn
	// without bias, and shrinks to the alphabet's order.
	step := func(t *rapid.T) {
		for _, name := range rapid.Permutation(names).Draw(t, "order") {
			if tryStep(t, acts[name]) {
				m.ops[name]++
				return
			}
		}
		t.Skip("no step can be taken")
	}
	return map[string]func(*rapid.T){"": func(*rapid.T) {}, "step": step}
}

// tryStep takes act, and reports whether it was taken: an operation whose
// precondition does not hold skips (rapid.T.Skip panics), before it has
// changed the model, as rapid's own Repeat expects of an action.
func tryStep(t *rapid.T, act func(*rapid.T)) (taken bool) {
	defer func() {
		if r := recover(); r != nil {
			if fmt.Sprintf("%T", r) != "rapid.invalidData" { // rapid's Skip
				panic(r)
			}
			taken = false
		}
	}()
	act(t)
	return true
}

// pick draws a session for which ok holds, or skips the action.
func (m *xModel) pick(t *rapid.T, ok func(*xSession) bool) *xSession {
	var c []*xSession
	for _, s := range m.sessions {
		if ok(s) {
			c = append(c, s)
		}
	}
	if len(c) == 0 {
		t.Skip("no session for it")
	}
	return c[rapid.IntRange(0, len(c)-1).Draw(t, "session")]
}

// live: the session's connection is open and its stream flows.
func (s *xSession) live() bool { return s.conn != "" && !s.dropped }

// awaitable: its current request is pending and the live connection
// shows it (seen: it was awaited there, so it is ALIAS's current question).
// cut reports whether a request of s (drawn so far) is one its agent ends:
// in an MCP session, the CLI's tool timeout then ends every call.
func (s *xSession) cut() bool {
	return slices.ContainsFunc(s.reqs, func(r *xReq) bool { return r.outcome == "cancel" })
}

func (s *xSession) awaitable() bool {
	r := s.req()
	return r != nil && !r.done && r.seen && s.live()
}

func (m *xModel) done() { m.steps++; m.emit("invariants") }

func (m *xModel) start(t *rapid.T) {
	if len(m.sessions) >= 3 {
		t.Skip("three sessions at most")
	}
	s := &xSession{alias: fmt.Sprintf("s%d", len(m.sessions)+1), conn: "main", conns: 1}
	s.mcp = m.caps.mcp && rapid.IntRange(0, 3).Draw(t, "mcp") == 3 // (shrunk to the SDK route)
	n := rapid.IntRange(1, 3).Draw(t, "requests")
	for i := range n {
		s.reqs = append(s.reqs, m.genReq(t, i == n-1, s.mcp, s.cut()))
	}
	m.spend(t, 0.3, nil)
	if s.mcp {
		m.ops["start (mcp)"]++
	}
	m.sessions = append(m.sessions, s)
	s.reqs[0].since = m.now
	m.files[s.alias+".jsonl"] = s.scenario(m.cancelAfter(), m.mcpToolTimeout())
	m.emit("")
	if s.mcp {
		m.requirement("MCP-ANSWER")
	} else {
		m.requirement("SDK-DELIVER")
	}
	m.emit("start %s %s.jsonl", s.alias, s.alias)
	m.asked(s)
	m.done()
}

// asked writes what follows the agent asking its current request: the
// live connection shows it, as asked.
func (m *xModel) asked(s *xSession) {
	r := s.req()
	if r == nil || !s.live() {
		return
	}
	deliver := "SDK-DELIVER"
	if s.mcp {
		deliver = "MCP-ANSWER" // it shows the question on the surface
	}
	if r.pair != nil {
		m.askedPair(s, r)
		return
	}
	if r.tool != "" && !r.toolBeside {
		// Another tool's prompt comes first: decided wrongly, the agent
		// gives up before it asks.
		m.requirement("SDK-PASSTHROUGH")
	} else {
		m.requirement(deliver)
	}
	m.emit("await -conn %s %s question", s.conn, s.alias)
	if r.tool != "" && !r.toolBeside {
		m.emit("check %s", s.alias) // the agent's verdict on the tool's decision
	}
	m.requirement(deliver)
	s.shown++
	r.shown, r.seen = s.shown, true
	if m.checks(deliver) {
		m.emit("delivered -conn %s %s", s.conn, s.alias)
	}
	if r.tool != "" && r.toolBeside {
		// The Read's prompt came while the question waits: decided by the
		// policy, and the question untouched.
		m.ops["tool beside"]++
		m.requirement("SDK-PASSTHROUGH")
		s.reads++
		m.emit("await %s decided Read %d", s.alias, s.reads)
		m.emit("check %s", s.alias) // the agent's verdict on the tool's decision
		if (r.outcome == "answer" || r.outcome == "skip") && m.caps.can("pending") {
			// (The one before may be listed until its end is heard.)
			m.emit("pending -within 2s -conn %s %s 1", s.conn, s.alias)
		}
	}
}

// askedPair writes what follows the agent asking two questions in one
// model response: both show, each as asked; the person ends the other one
// (its pair) first, and r stays the current question, pending.
func (m *xModel) askedPair(s *xSession, r *xReq) {
	p := r.pair
	m.ops["pair"]++
	m.requirement("SDK-DELIVER")
	for range 2 {
		m.emit("await -conn %s %s question", s.conn, s.alias)
		if m.checks("SDK-DELIVER") {
			m.emit("delivered -conn %s %s", s.conn, s.alias)
		}
	}
	s.shown += 2
	m.pairs++
	m.requirement("SDK-SEQUENTIAL")
	m.emit("await -conn %s -q %s %s question", s.conn, quote(p.qs[0].Question), s.alias)
	p.qvar = fmt.Sprintf("%s_P%d", s.alias, 2*m.pairs-1)
	m.emit("env %s=$%s_Q", p.qvar, s.alias)
	ends := "SDK-SKIP-DENY"
	if p.outcome == "skip" {
		m.requirement(ends)
		m.emit("skip-question -conn %s %s %s", s.conn, s.alias, quote(p.reason))
		m.emit("await %s answered", s.alias)
		m.emit("response %s behavior deny", s.alias)
	} else {
		ends = answerReq(p)
		m.requirement(ends)
		m.emit("answer -conn %s %s", s.conn, s.alias)
		m.emit("await %s answered", s.alias)
	}
	m.emit("check %s", s.alias)
	p.done, p.shown, p.seen = true, s.shown, true
	m.requirement("SDK-SEQUENTIAL")
	m.emit("await -conn %s -q %s %s question", s.conn, quote(r.qs[0].Question), s.alias)
	r.qvar = fmt.Sprintf("%s_P%d", s.alias, 2*m.pairs)
	m.emit("env %s=$%s_Q", r.qvar, s.alias)
	r.shown, r.seen = s.shown, true
	if (r.outcome == "answer" || r.outcome == "skip") && m.caps.can("pending") {
		// Ending the one ended that one, and not the other (listed until
		// its end is heard).
		m.requirement(ends)
		m.emit("pending -within 2s -conn %s %s 1", s.conn, s.alias)
	}
}

// qid is the script's variable of r's question id.
func qid(s *xSession, r *xReq) string {
	if r.qvar != "" {
		return "$" + r.qvar
	}
	return fmt.Sprintf("$%s_Q%d", s.alias, r.shown)
}

// ended is the request over; the agent asks its next one, if any.
func (m *xModel) ended(s *xSession) {
	s.req().done = true
	m.emit("check %s", s.alias)
	s.cur++
	if r := s.req(); r != nil {
		r.since = m.now
	}
	m.asked(s)
}

// answerReq is the requirement an answer's check is about: the most
// specific shape in the request (labels joined in the person's order, free
// text verbatim), else the whole set of several questions, else one label.
// A rule another requirement owns is named by the invariants.
func answerReq(r *xReq) string {
	free, multi := false, false
	for _, qq := range r.qs {
		vals, ok := r.answers[qq.Question].([]string)
		if !ok {
			vals = []string{r.answers[qq.Question].(string)}
		}
		multi = multi || len(vals) > 1
		for _, a := range vals {
			if !slices.ContainsFunc(qq.Options, func(o option) bool { return o.Label == a }) {
				free = true
			}
		}
	}
	switch {
	case free:
		return "SDK-ANSWER-OTHER"
	case multi:
		return "SDK-ANSWER-MULTI"
	case len(r.qs) > 1:
		return "SDK-ANSWER-ALL"
	}
	return "SDK-ANSWER-SINGLE"
}

func (m *xModel) answer(t *rapid.T) {
	s := m.pick(t, func(s *xSession) bool { return s.awaitable() && s.req().outcome == "answer" })
	m.spend(t, m.stepCost(), s.req())
	m.answered(s)
}

// answered writes the person answering s's question, and what follows.
func (m *xModel) answered(s *xSession) {
	r := s.req()
	m.onTime(s, r)
	m.emit("")
	if r.orphan {
		// The late-answer path: the session is resumed with the answer.
		m.ops["answer after restart"]++
		m.requirement("UI-PERSIST")
		m.emit("answer -conn %s %s", s.conn, s.alias)
		m.emit("await -timeout 20s %s resumed", s.alias)
		m.emit("pending -within 2s -conn %s %s 0", s.conn, s.alias)
		m.emit("check %s", s.alias)
		r.done, s.killed = true, false
		s.cur = len(s.reqs)
		m.done()
		return
	}
	if s.mcp {
		m.mcpAnswered(s)
		return
	}
	m.requirement(answerReq(r))
	if rest := r.rest(); rest != "" {
		// Parts are held: the person answers the rest, and the agent gets
		// the whole, held parts and all.
		m.requirement("SDK-ANSWER-ALL")
		m.emit("answer -conn %s %s %s", s.conn, s.alias, rest)
	} else {
		m.emit("answer -conn %s %s", s.conn, s.alias)
	}
	m.emit("await %s answered", s.alias)
	m.toldEnd(s, surface.EventAnswered)
	m.ended(s)
	m.done()
}

// toldEnd checks that a resumed stream hears of its question's end: what
// comes after a resume reaches it, the first event after the last it
// heard among it.
func (m *xModel) toldEnd(s *xSession, typ string) {
	if !s.resumed || s.dropped || s.conn == "" {
		return
	}
	m.requirement("UI-RECONNECT-REPLAY")
	m.emit("await -conn %s %s surface %s", s.conn, s.alias, typ)
}

// rest is the answers to the questions of r not held yet, as arguments of
// answer, or "" when none is held or the rest cannot be written on one
// line (the whole answer is sent then).
func (r *xReq) rest() string {
	if len(r.held) == 0 || r.outcome != "answer" {
		return ""
	}
	var args []string
	for _, qq := range r.qs {
		if r.held[qq.Question] {
			continue
		}
		vals, ok := r.answers[qq.Question].([]string)
		if !ok {
			vals = []string{r.answers[qq.Question].(string)}
		}
		if strings.Contains(strings.Join(vals, ""), "\n") || strings.Contains(qq.Question, "=") {
			return ""
		}
		for _, v := range vals {
			args = append(args, quote(qq.Question+"="+v))
		}
	}
	return strings.Join(args, " ")
}

// What an ask_user result that is no answer says: the user declined (a
// skip), or did not respond (a timeout).
const (
	mcpDeclined   = "~(?i)(declin|skip|refus)"
	mcpNoResponse = "~(?i)(did not respond|no answer|timed? ?out)"
	// Neither says another end: a skip is no withdrawal and no silence, a
	// timeout no refusal and no withdrawal.
	mcpNotDeclined   = "~(?i)(withdr|cancel|did not respond|no answer|timed? ?out)"
	mcpNotNoResponse = "~(?i)(declin|withdr|cancel)"
)

// mcpRefused: the ask_user call of s returned an isError result that says
// what happened (says) and not what did not (not).
func (m *xModel) mcpRefused(s *xSession, says, not string) {
	m.emit("tool-result -error %s %s", s.alias, quote(says))
	m.emit("! tool-result -error %s %s", s.alias, quote(not))
	m.ended(s)
	m.done()
}

// mcpAnswered: the ask_user call returns the answer as text, naming each
// label picked (in the person's order) or the free text, and none of the
// labels not picked.
func (m *xModel) mcpAnswered(s *xSession) {
	r := s.req()
	qq := r.qs[0]
	vals, ok := r.answers[qq.Question].([]string)
	if !ok {
		vals = []string{r.answers[qq.Question].(string)}
	}
	if len(vals) > 1 {
		m.requirement("MCP-MULTI")
	} else {
		m.requirement("MCP-ANSWER")
	}
	m.emit("answer -conn %s %s", s.conn, s.alias)
	m.emit("await %s answered", s.alias)
	// Each label, and the person's own words byte for byte, white space
	// and all (a newline or a tab as a pattern: a line of a case holds
	// neither).
	var want []string
	for _, v := range vals {
		if strings.TrimSpace(v) != "" {
			want = append(want, quoteText(v))
		}
	}
	m.emit("tool-result %s %s", s.alias, strings.Join(want, " "))
	var not []string
	for _, o := range qq.Options {
		named := strings.Contains(qq.Question, o.Label) || strings.Contains(qq.Header, o.Label)
		for _, v := range vals {
			named = named || strings.Contains(v, o.Label) || strings.Contains(o.Label, v)
		}
		if !named {
			not = append(not, quote(o.Label))
		}
	}
	if len(not) > 0 {
		m.emit("! tool-result %s %s", s.alias, strings.Join(not, " "))
	}
	m.ended(s)
	m.done()
}

// answerPart answers part of a request of several questions: the bridge
// holds it (or refuses it) and nothing reaches the agent.
func (m *xModel) answerPart(t *rapid.T) {
	if !m.caps.canPart() {
		t.Skip("the surface does not answer part of a request")
	}
	s := m.pick(t, func(s *xSession) bool {
		r := s.req()
		if !s.awaitable() || len(r.qs) < 2 || r.outcome == "cancel" || r.outcome == "exit" {
			return false
		}

		return len(s.req().held) < len(s.req().qs)-1
	})
	r := s.req()
	args, part := r.part()
	if len(args) == 0 {
		t.Skip("nothing to answer in part on one line")
	}
	late := 0.0
	if r.outcome == "timeout" {
		// No hold after it: the timeout may come any moment, and the
		// invariants catch a part sent as the whole answer.
		late = m.lateInWait(r)
		m.spend(t, late+m.stepCost(), nil)
	} else {
		m.spend(t, m.holdCost(), nil)
	}
	m.hold(s, args, part, late)
}

// lateInWait is how long a part of r, a request left to time out, waits
// before it is given: a part given early in the wait comes at 70 % of it,
// so that a deadline it moves ends past timeout + 1 s, which the
// invariants catch. The wait is the whole 70 %: what the steps before it
// took is an upper bound, not a measure.
func (m *xModel) lateInWait(r *xReq) float64 {
	if m.caps.seconds > 0 && m.now-r.since <= 0.25*m.caps.seconds {
		return 0.7 * m.caps.seconds
	}
	return 0
}

// part is the person's answer to one question of r not held yet, as
// arguments of answer, and that question; none when no question left is
// writable on one line.
func (r *xReq) part() (args []string, part string) {
	for _, qq := range r.qs {
		a := r.answers[qq.Question]
		if r.outcome != "answer" {
			a = qq.Options[0].Label // the person began to answer, then skipped or left
		}
		vals, ok := a.([]string)
		if !ok {
			vals = []string{a.(string)}
		}
		if r.held[qq.Question] || strings.Contains(strings.Join(vals, ""), "\n") || strings.Contains(qq.Question, "=") {
			continue // held already, or not writable on one line
		}
		for _, v := range vals {
			args = append(args, quote(qq.Question+"="+v))
		}
		return args, qq.Question
	}
	return nil, ""
}

// hold writes the person answering part of s's request (after late
// seconds), which the bridge holds or refuses.
func (m *xModel) hold(s *xSession, args []string, part string, late float64) {
	r := s.req()
	r.held[part] = true
	m.emit("")
	if late > 0 {
		m.requirement("SDK-TIMEOUT")
		m.emit("sleep %dms", int(late*1000))
	}
	m.requirement("SDK-ANSWER-ALL")
	m.emit("answer -partial -conn %s %s %s", s.conn, s.alias, strings.Join(args, " "))
	if r.outcome != "timeout" {
		m.emit("! await -for 300ms %s answered", s.alias)
	}
	m.done()
}

func (m *xModel) skip(t *rapid.T) {
	s := m.pick(t, func(s *xSession) bool { return s.awaitable() && s.req().outcome == "skip" })
	m.spend(t, m.stepCost(), s.req())
	m.skipped(s)
}

// skipped writes the person skipping s's question, and what follows.
func (m *xModel) skipped(s *xSession) {
	r := s.req()
	m.onTime(s, r)
	m.emit("")
	if r.orphan {
		// Nobody is left to tell: the question ends, and is listed no more.
		m.ops["skip after restart"]++
		m.requirement("UI-PERSIST")
		m.emit("skip-question -conn %s %s %s", s.conn, s.alias, quote(r.reason))
		m.emit("pending -within 2s -conn %s %s 0", s.conn, s.alias)
		r.done = true
		s.cur = len(s.reqs)
		m.done()
		return
	}
	if s.mcp {
		m.requirement("MCP-SKIP")
		m.emit("skip-question -conn %s %s %s", s.conn, s.alias, quote(r.reason))
		m.emit("await %s answered", s.alias)
		m.mcpRefused(s, mcpDeclined, mcpNotDeclined) // someone did respond, and the question was not withdrawn
		return
	}
	m.requirement("SDK-SKIP-DENY")
	m.emit("skip-question -conn %s %s %s", s.conn, s.alias, quote(r.reason))
	m.emit("await %s answered", s.alias)
	m.emit("response %s behavior deny", s.alias)
	m.toldEnd(s, surface.EventSkipped)
	m.ended(s)
	m.done()
}

// expire waits out the declared timeout of a question nobody answers.
func (m *xModel) expire(t *rapid.T) {
	s := m.pick(t, func(s *xSession) bool {
		r := s.req()
		return r != nil && !r.done && r.shown > 0 && r.outcome == "timeout"
	})
	r := s.req()
	if m.caps.persist && m.waitingOut() == s {
		// (no draw of its own: a sequence drawn before is the same up to here)
		m.restartInWait(t, s)
		return
	}
	m.spend(t, max(0, r.since+m.caps.seconds+1-m.now)+m.stepCost(), r)
	m.expired(s)
}

// expired writes the checks of s's question timing out.
func (m *xModel) expired(s *xSession) {
	m.emit("")
	if s.mcp {
		m.requirement("MCP-TIMEOUT")
		m.emit("await -timeout $TIMEOUT_WAIT %s answered", s.alias)
		m.mcpRefused(s, mcpNoResponse, mcpNotNoResponse) // nobody declined, and nothing withdrew it
		return
	}
	m.requirement("SDK-TIMEOUT")
	m.emit("await -timeout $TIMEOUT_WAIT %s answered", s.alias)
	m.emit("response %s behavior deny", s.alias)
	m.emit("response %s message %s", s.alias, quote("~"+harness.TimedOutPattern))
	if s.live() && s.req().seen {
		m.emit("await -conn %s %s surface expired", s.conn, s.alias)
	}
	m.ended(s)
	m.done()
}

// withdraw waits for the agent to withdraw its question or exit, and
// checks the surface is told.
func (m *xModel) withdraw(t *rapid.T) {
	s := m.pick(t, func(s *xSession) bool {
		r := s.req()
		return r != nil && !r.done && r.shown > 0 && (r.outcome == "cancel" || r.outcome == "exit") && s.live() && r.seen
	})
	m.spend(t, max(0, m.withdrawsAt(s)+0.5-m.now)+m.stepCost(), s.req())
	m.withdrawn(s)
}

// withdrawn writes the checks of s's agent withdrawing its question, or
// exiting, while the live connection shows it.
func (m *xModel) withdrawn(s *xSession) {
	r := s.req()
	m.emit("")
	if r.outcome == "cancel" {
		m.requirement("SDK-CANCEL") // (an ask_user call ended by the CLI too)
		if s.mcp {
			// The CLI ends the call and goes on: asking again, it runs on
			// (the withdrawal must come before its turn ends); with
			// nothing more to ask it ends its turn at once, and the
			// bridge, told as the MCP server's call ends, may tell the
			// surface a moment after.
			alive := ""
			if s.cur+1 < len(s.reqs) {
				alive = "-alive "
			}
			m.emit("await -conn %s %s%s surface withdrawn", s.conn, alive, s.alias)
			at := m.withdrawsAt(s)
			m.ended(s)
			if next := s.req(); next != nil {
				next.since = at // asked as the call before it ended, not as the model saw it end
			}
			m.done()
			return
		}
		m.emit("await -conn %s -alive %s surface withdrawn", s.conn, s.alias)
	} else {
		m.requirement("SDK-AGENT-EXIT")
		m.emit("await %s exit", s.alias)
		m.emit("await -conn %s %s surface withdrawn", s.conn, s.alias)
		s.exited = true
	}
	m.emit("pending -conn %s %s 0", s.conn, s.alias)
	r.done = true
	if !s.exited {
		m.emit("check %s", s.alias)
	}
	s.cur = len(s.reqs)
	m.done()
}

// late answers or skips a request that has ended: it must be rejected and
// never reach the agent.
func (m *xModel) late(t *rapid.T) {
	s := m.pick(t, func(s *xSession) bool {
		if !s.live() || s.mcp {
			return false
		}
		return len(s.endedReqs()) > 0
	})
	r := rapid.SampledFrom(s.endedReqs()).Draw(t, "ended")
	m.spend(t, m.holdCost(), nil)
	m.emit("")
	m.requirement("SDK-LATE-ANSWER")
	qid := qid(s, r)
	if m.caps.can("skip") && rapid.Bool().Draw(t, "lateSkip") {
		m.emit("! skip-question -conn %s -qid %s %s %s", s.conn, qid, s.alias, quote("Too late to skip"))
	} else {
		m.emit("! answer -conn %s -qid %s %s %s", s.conn, qid, s.alias, quote(r.qs[0].Question+"="+r.qs[0].Options[len(r.qs[0].Options)-1].Label))
	}
	m.emit("! await -for 300ms -qid %s %s answered 2", qid, s.alias)
	m.done()
}

// otherSession answers (or skips) a pending question of one session from
// another session's connection: it must be refused.
func (m *xModel) otherSession(t *rapid.T) {
	a := m.pick(t, func(s *xSession) bool {
		r := s.req()
		// Not one that ends by itself: the hold after would race with it.
		return r != nil && !r.done && r.shown > 0 && (r.outcome == "answer" || r.outcome == "skip") && !s.mcp
	})
	b := m.pick(t, func(s *xSession) bool { return s != a && s.live() && !s.mcp })
	r := a.req()
	qid := qid(a, r)
	m.spend(t, m.holdCost(), nil)
	m.emit("")
	m.requirement("SDK-ISOLATION")
	if m.caps.can("skip") && rapid.Bool().Draw(t, "otherSkip") {
		m.emit("! skip-question -conn %s -qid %s %s %s", b.conn, qid, b.alias, quote("Not mine"))
	} else {
		var args []string
		for _, qq := range r.qs {
			args = append(args, quote(qq.Question+"="+qq.Options[0].Label))
		}
		m.emit("! answer -conn %s -qid %s %s %s", b.conn, qid, b.alias, strings.Join(args, " "))
	}
	m.emit("! await -for 300ms -qid %s %s answered", qid, a.alias)
	m.done()
}

func (m *xModel) disconnect(t *rapid.T) {
	if !m.caps.reconnect {
		t.Skip("no capability reconnect")
	}
	s := m.pick(t, func(s *xSession) bool { return s.conn != "" && !s.dropped && !s.mcp })
	m.spend(t, m.stepCost(), nil)
	m.emit("")
	m.requirement("UI-RECONNECT-REPLAY")
	m.emit("disconnect %s %s", s.alias, s.conn)
	s.conn, s.resumed = "", false
	for _, r := range s.reqs {
		r.seen = false
	}
	m.done()
}

// open opens a new connection to s and writes what it must be shown: the
// pending question, replayed with the same id, and the session's status.
func (m *xModel) open(s *xSession) {
	s.conns++
	s.conn, s.resumed = fmt.Sprintf("c%d", s.conns), false
	m.emit("connect %s %s", s.alias, s.conn)
	r := s.req()
	if r == nil || r.done || s.exited {
		return
	}
	if r.outcome == "timeout" || r.outcome == "cancel" || r.outcome == "exit" {
		return // it may end any moment: whether it is replayed is a race
	}
	if r.shown > 0 {
		if r.orphan {
			m.requirement("UI-PERSIST")
		}
		m.emit("await -conn %s -same %s question", s.conn, s.alias)
		r.seen = true
		if m.checks("SDK-DELIVER") {
			m.emit("delivered -conn %s %s", s.conn, s.alias)
		}
		m.requirement("UI-STATUS")
		if m.checks("UI-STATUS") && !r.orphan {
			m.emit("status -conn %s %s", s.conn, s.alias)
		}
		return
	}
	m.asked(s) // asked while nobody was connected: shown now
}

func (m *xModel) connect(t *rapid.T) {
	if !m.caps.reconnect {
		t.Skip("no capability reconnect")
	}
	s := m.pick(t, func(s *xSession) bool { return s.conn == "" && !s.exited && !s.mcp })
	m.spend(t, m.stepCost(), s.req()) // it brings its own question within reach: not held to the budget
	m.emit("")
	m.requirement("UI-RECONNECT-REPLAY")
	m.open(s)
	m.done()
}

// takeover opens a second connection while the first is open: the first
// is told, and what it sends after is refused.
func (m *xModel) takeover(t *rapid.T) {
	if !m.caps.takeover {
		t.Skip("no capability takeover")
	}
	s := m.pick(t, func(s *xSession) bool {
		r := s.req()
		return s.live() && r != nil && !r.done && r.seen && (r.outcome == "answer" || r.outcome == "skip") && !s.mcp
	})
	old := s.conn
	// On an odd step the old connection takes the session back after (a
	// page's "Answer here again"), and the newer one is told in turn: no
	// draw of its own, so the sequences drawn before are unchanged.
	back := m.steps%2 == 1
	cost := m.holdCost() // (a refusal held)
	if back {
		cost = 2*m.holdCost() + 2*m.stepCost() // (a refusal on each, the press and the replay)
	}
	m.spend(t, cost, nil)
	m.emit("")
	m.requirement("UI-TAKEOVER")
	m.open(s)
	m.requirement("UI-TAKEOVER")
	m.emit("await -conn %s %s surface taken", old, s.alias)
	refused := func(conn, from string) {
		if s.req().outcome == "answer" {
			m.emit("! answer -conn %s %s", conn, s.alias)
		} else {
			m.emit("! skip-question -conn %s %s %s", conn, s.alias, quote(from))
		}
		m.emit("! await -for 300ms %s answered", s.alias)
	}
	refused(old, "From the old tab")
	if !back {
		m.emit("disconnect %s %s", s.alias, old)
		m.done()
		return
	}
	newer := s.conn
	m.emit("reclaim %s %s", s.alias, old)
	m.emit("await -conn %s -same %s question", old, s.alias)
	m.emit("await -conn %s %s surface taken", newer, s.alias)
	refused(newer, "From the newer tab")
	m.emit("disconnect %s %s", s.alias, newer)
	s.conn = old
	m.ops["taken back"]++
	m.done()
}

// drop cuts a connection's stream (resume), or takes its client offline
// (a page: the page must come back by itself once online).
func (m *xModel) drop(t *rapid.T) {
	if !m.caps.resume && !(m.caps.offline && m.caps.reconnect) {
		t.Skip("the surface does not resume streams") // (a page back online replays: capability reconnect)
	}
	s := m.pick(t, func(s *xSession) bool { return s.live() && !s.mcp })
	m.spend(t, m.stepCost(), nil)
	m.emit("")
	m.requirement("UI-RECONNECT-REPLAY")
	m.emit("%s %s %s", m.dropOp(), s.alias, s.conn)
	s.dropped = true
	m.done()
}

// dropOp and resumeOp are the lines of drop and resume: a stream's, or a
// page's network.
func (m *xModel) dropOp() string {
	if m.caps.resume {
		return "drop"
	}
	return "offline"
}

func (m *xModel) resumeOp() string {
	if m.caps.resume {
		return "resume"
	}
	return "online"
}

// resume reconnects a dropped stream: what happened meanwhile comes once.
// A page back online shows what a fresh one would: the question asked
// meanwhile, none that ended meanwhile (pending counts them).
func (m *xModel) resume(t *rapid.T) {
	s := m.pick(t, func(s *xSession) bool { return s.conn != "" && s.dropped })
	m.spend(t, m.holdCost(), s.req()) // as connect
	m.emit("")
	m.requirement("UI-RECONNECT-REPLAY")
	m.emit("%s %s %s", m.resumeOp(), s.alias, s.conn)
	m.emit("! await -conn %s -for 200ms %s repeated", s.conn, s.alias)
	s.dropped, s.resumed = false, true
	if r := s.req(); !m.caps.resume && r != nil && !r.done && (r.outcome == "timeout" || r.outcome == "cancel" || r.outcome == "exit") {
		// It may have ended while the page was away, which a page back
		// online shows as no longer waiting, not how it ended: as after
		// connect, whether it is shown is a race.
		r.seen = false
	}
	if r := s.req(); r != nil && !r.done && !r.seen && r.outcome != "timeout" && r.outcome != "cancel" && r.outcome != "exit" {
		if r.shown > 0 {
			m.emit("await -conn %s -same %s question", s.conn, s.alias)
			r.seen = true
		} else {
			m.asked(s)
		}
	}
	m.done()
}

// pending checks what the surface lists as waiting: exactly the model's.
// Right after a question ends a surface may list it until it hears the
// end, which the bridge sends after the agent's answer: then the list must
// come right within a moment (a connection never told the end lists the
// question for ever).
func (m *xModel) pending(t *rapid.T) {
	s := m.pick(t, func(s *xSession) bool {
		r := s.req()
		if !s.live() || s.mcp {
			return false
		}
		// A question that ends by itself has no fixed count until it has.
		return r == nil || r.done || (r.seen && (r.outcome == "answer" || r.outcome == "skip"))
	})
	m.spend(t, m.stepCost(), nil)
	m.emit("")
	m.requirement("UI-RECONNECT-REPLAY")
	if r := s.req(); r != nil && !r.done {
		m.emit("pending -conn %s %s 1", s.conn, s.alias)
	} else {
		m.emit("pending -within 2s -conn %s %s 0", s.conn, s.alias)
	}
	m.done()
}

// think is the person taking their time: what runs on a clock (a
// timeout's deadline, held parts) is seen at another moment.
func (m *xModel) think(t *rapid.T) {
	d := rapid.SampledFrom([]float64{0.3, 0.7}).Draw(t, "think")
	m.spend(t, d, nil)
	m.emit("")
	m.emit("sleep %dms", int(d*1000))
	m.done()
}

// restart kills the bridge (as a crash), or stops it (SIGTERM), and starts
// it again. Every agent dies with it, or is stopped by it; a question that was pending is listed again under its id
// on a new connection, one that had ended is not, and answering it resumes
// its session with the answer (UI-PERSIST). Taken only when every
// session's agent is at rest or waits on a question the person is to end
// (one that ends by itself would race with the kill), and once a sequence.
func (m *xModel) restart(t *rapid.T) {
	if !m.caps.persist || m.restarted {
		t.Skip("no capability persist, or restarted already")
	}
	if s := m.waitingOut(); s != nil {
		m.restartInWait(t, s)
		return
	}
	m.restartable(t)
	m.spend(t, m.stepCost(), nil)
	m.restarted = true
	m.emit("")
	m.requirement("UI-PERSIST")
	if m.steps%2 == 1 {
		// A restart as a deploy does it (SIGTERM, the bridge's own
		// shutdown stopping its agents), on an odd step (no draw of its
		// own, so the sequences stay as they were): what was pending is
		// kept as across a crash, not withdrawn as its agent stops.
		m.ops["graceful restart"]++
		m.emit("restart")
	} else {
		m.emit("restart -kill")
	}
	m.killed()
	m.done()
}

// waitingOut is the session, if one, whose question is left to time out,
// shown early in its wait, where the bridge may restart (capabilities
// persist, reconnect and timeout): every other session's agent is at
// rest or waits on a question the person is to end.
func (m *xModel) waitingOut() *xSession {
	if !m.caps.reconnect || m.caps.seconds <= 0 {
		return nil
	}
	var out *xSession
	for _, s := range m.sessions {
		r := s.req()
		switch {
		case r == nil || r.done || s.exited || r.shown > 0 && (r.outcome == "answer" || r.outcome == "skip"):
		case out == nil && !s.mcp && r.shown > 0 && r.outcome == "timeout" && s.conn != "" && m.now-r.since <= 0.35*m.caps.seconds:
			out = s
		default:
			return nil // a question may be asked or end while the bridge restarts
		}
	}
	return out
}

// restartInWait restarts the bridge while s's question waits out its
// timeout, late in the wait (55 % of it): the bridge that comes back keeps
// the question's deadline, so the connection opened after it lists it no
// more from 1 s past it, and is told it expired within 1 s of it (the
// invariants), not a whole timeout after the restart. Its agent died with
// the bridge: nobody is told the deny, and the session ends there. It may
// be a sequence's second restart.
func (m *xModel) restartInWait(t *rapid.T, s *xSession) {
	r := s.req()
	wait := 0.55 * m.caps.seconds
	m.spend(t, max(wait+m.stepCost(), r.since+m.caps.seconds+1-m.now)+m.stepCost(), r)
	m.ops["restart while a question waits out its timeout"]++
	m.restarted = true
	m.emit("")
	m.requirement("SDK-TIMEOUT")
	m.emit("sleep %dms", int(wait*1000))
	m.requirement("UI-PERSIST")
	m.emit("restart -kill")
	m.killed()
	// The connection opened after the restart is shown the question (a
	// SKIP, too late to judge, where it opened past the deadline and the
	// bridge had ended it), lists it no more from 1 s past the deadline,
	// and is told it expired within 1 s of it.
	m.emit("await -conn %s -same %s question", s.conn, s.alias)
	m.requirement("SDK-TIMEOUT")
	m.emit("pending -within $TIMEOUT_WAIT -conn %s %s 0", s.conn, s.alias)
	r.done = true
	s.cur = len(s.reqs)
	m.done()
}

// restartable skips the step unless every session's agent is at rest or
// waits on a question the person is to end: one that ends by itself would
// race with the kill.
func (m *xModel) restartable(t *rapid.T) {
	for _, s := range m.sessions {
		r := s.req()
		if r != nil && !r.done && !s.exited && (r.shown == 0 || (r.outcome != "answer" && r.outcome != "skip")) {
			t.Skip("a question may be asked or end while the bridge restarts")
		}
		if r != nil && s.mcp {
			t.Skip("an MCP session runs (its agent and ask server are not the bridge's children)")
		}
	}
}

// crash arms the bridge to end itself as it stores an answer, before it
// writes it to the agent (capabilities.crash: answer-committed), by a
// restart that kills it (every agent dies, as in restart), then starts a
// session whose request, of any shape, the person answers: the bridge
// crashes there, and once started again it must resume the session with
// that answer, byte for byte, and list again what was pending
// (UI-PERSIST). At skip-committed, the same with a skip. At answer-written
// (the answer written whole to the agent, not yet marked delivered), the
// agent has its answer, and the session must not be resumed to tell it
// again. Once a sequence, in place of restart.
func (m *xModel) crash(t *rapid.T) {
	if len(m.caps.crashAt) == 0 || m.restarted || len(m.sessions) >= 3 {
		t.Skip("no crash point, restarted already, or three sessions")
	}
	m.restartable(t)
	m.spend(t, 3*m.stepCost(), nil)
	point := rapid.SampledFrom(m.caps.crashAt).Draw(t, "crashAt")
	r := &xReq{held: map[string]bool{}}
	used := map[string]bool{}
	for range rapid.IntRange(1, 4).Draw(t, "crashQuestions") {
		r.qs = append(r.qs, m.genQuestion(t, used))
	}
	do := "answer -crash -conn main %s"
	if point == profile.CrashSkipCommitted {
		r.outcome = "skip"
		if rapid.Bool().Draw(t, "reasoned") {
			r.reason = rapid.SampledFrom(xSkipReasons).Draw(t, "reason")
		}
		do = "skip-question -crash -conn main %s " + quote(r.reason)
	} else {
		r.outcome, r.answers = "answer", map[string]any{}
		for _, qq := range r.qs {
			r.answers[qq.Question] = genAnswer(t, qq)
		}
	}
	// The crash may come on the session's second request, the first
	// ended the other way (an answer where the bridge crashes at a skip,
	// a skip where it crashes at an answer: the point is armed for the
	// first of its kind): what the bridge knows of an earlier request must
	// not stand for the later one's reply.
	var first *xReq
	if rapid.IntRange(0, 2).Draw(t, "crashOnSecond") == 2 {
		m.spend(t, m.stepCost(), nil)
		first = &xReq{held: map[string]bool{}, qs: []question{m.genQuestion(t, used)}}
		if r.outcome == "skip" {
			first.outcome, first.answers = "answer", map[string]any{first.qs[0].Question: genAnswer(t, first.qs[0])}
		} else {
			first.outcome = "skip"
			first.reason = rapid.SampledFrom(xReasons).Draw(t, "firstReason")
		}
	}
	m.ops["crash at "+point]++
	m.restarted = true
	m.emit("")
	m.requirement("UI-PERSIST")
	m.emit("restart -kill -crash-at %s", point)
	m.killed()
	s := &xSession{alias: fmt.Sprintf("s%d", len(m.sessions)+1), conn: "main", conns: 1, reqs: []*xReq{r}}
	if first != nil {
		s.reqs = []*xReq{first, r}
	}
	m.sessions = append(m.sessions, s)
	r.since = m.now
	m.files[s.alias+".jsonl"] = s.scenario(m.cancelAfter(), m.mcpToolTimeout())
	m.files[s.alias+".resume.jsonl"] = r.resumed()
	m.requirement("UI-PERSIST")
	m.emit("start %s %s.jsonl", s.alias, s.alias)
	if first != nil {
		m.ops["crash on a second request"]++
		m.emit("await -conn main %s question", s.alias)
		s.shown++
		first.shown, first.seen, first.since = s.shown, true, m.now
		if first.outcome == "answer" {
			m.emit("answer -conn main %s", s.alias)
		} else {
			m.emit("skip-question -conn main %s %s", s.alias, quote(first.reason))
		}
		m.emit("await %s answered", s.alias)
		first.done = true
		s.cur = 1
	}
	m.emit("await -conn main %s question", s.alias)
	s.shown++
	r.shown, r.seen = s.shown, true
	m.emit(do, s.alias)
	m.emit("crashed")
	// Its request ended in the crash, which killed every agent again:
	// what was pending stays so. Stored, the reply is told on a resume;
	// written whole to the agent (answer-written), the agent has it, and
	// the restarted bridge, finding so in what the agent left (its session
	// file), does not resume the session to tell it again.
	written := point == profile.CrashAnswerWritten
	r.done, r.orphan = true, !written
	s.cur = len(s.reqs)
	m.killed()
	m.requirement("UI-PERSIST")
	if written {
		// (Its agent's own verdict is not read: it may die writing to the
		// bridge gone. The invariants judge the allow it got.)
		m.emit("await %s allowed", s.alias)
		m.emit("! await -for 2s %s resumed", s.alias)
	} else {
		m.emit("await -timeout 20s %s resumed", s.alias)
		m.emit("check %s", s.alias)
	}
	m.done()
}

// killed is what a kill of the bridge leaves: every agent dead, every
// connection closed; a question that was pending is an orphan, listed
// again on a new connection, and answering it resumes its session.
func (m *xModel) killed() {
	for _, s := range m.sessions {
		if s.mcp {
			continue // its agent asks no more; its main connection watches on
		}
		s.conn, s.dropped = "", false
		for _, r := range s.reqs {
			r.seen = false
		}
		if s.exited {
			continue
		}
		s.killed = true
		if r := s.req(); r != nil && !r.done {
			r.orphan = true
			if r.outcome == "answer" {
				m.files[s.alias+".resume.jsonl"] = r.resumed()
			}
			if m.caps.reconnect {
				m.open(s) // the person's page comes back: the question is there again
			}
		} else {
			s.cur = len(s.reqs) // its agent asks nothing more
		}
	}
}

// resumed is what the agent of a session resumed by the end of r plays:
// for a skip, its first message must carry the person's reason, byte for
// byte where no quoting can change it (a bridge's own default where they
// gave none); for an answer, see answered.
func (r *xReq) resumed() string {
	if r.outcome != "skip" {
		return r.answeredResume()
	}
	first := map[string]any{"prompt": "You previously asked; the user declined."}
	if v := r.reason; !blank(v) && !strings.ContainsAny(v, "\"\\\n\t") {
		first["expect_prompt"] = regexp.QuoteMeta(v)
	}
	return mustJSON(first) + "\n" + mustJSON(map[string]any{"text": "Going on without it."}) + "\n"
}

// answeredResume is what the agent of a session resumed by the answer to r
// plays: its first message must carry the person's answers. How a bridge
// words it is its own, so the check is each answer (each label of a
// multiSelect one), in the questions' order, where it is plain text that
// no quoting can change.
func (r *xReq) answeredResume() string {
	var parts []string
	for _, qq := range r.qs {
		vals, ok := r.answers[qq.Question].([]string)
		if !ok {
			vals = []string{fmt.Sprint(r.answers[qq.Question])}
		}
		for _, v := range vals {
			if v != "" && !strings.ContainsAny(v, "\"\\\n\t") && strings.TrimSpace(v) == v {
				parts = append(parts, regexp.QuoteMeta(v))
			}
		}
	}
	first := map[string]any{"prompt": "You previously asked; the user answered."}
	if len(parts) > 0 {
		first["expect_prompt"] = "(?s)" + strings.Join(parts, ".*")
	}
	return mustJSON(first) + "\n" + mustJSON(map[string]any{"text": "Continuing with the answers."}) + "\n"
}

// tail is how a sequence ends: a question left to end by itself (a
// timeout, a withdrawal, an exit) is seen to its end, so that each one the
// model asked is checked, however short the sequence was.
func (m *xModel) tail(t *rapid.T) {
	// First the person ends what is theirs to end, as they would: a
	// question waiting on them would time out while the others are
	// awaited.
	for more := true; more; {
		more = false
		for _, s := range m.sessions {
			if !s.awaitable() {
				continue
			}
			switch s.req().outcome {
			case "answer":
				m.ops["answer"]++
				m.answered(s)
				more = true
			case "skip":
				m.ops["skip"]++
				m.skipped(s)
				more = true
			}
		}
	}
	for _, s := range m.sessions {
		if r := s.req(); r != nil && !r.done && !s.exited && !r.orphan && (r.outcome == "answer" || r.outcome == "skip") {
			// One is left that the person cannot reach (no connection):
			// a wait now would see it time out.
			return
		}
	}
	// Then what its agent ends, in the order it comes: an MCP agent asks on
	// as its call ends, and the person answers that before the next one
	// comes, or the timeouts are waited out.
	var ends []*xSession
	for _, s := range m.sessions {
		r := s.req()
		if r == nil || r.done || r.shown == 0 || r.orphan || (r.outcome != "cancel" && r.outcome != "exit") || !s.live() || !r.seen {
			continue
		}
		ends = append(ends, s)
	}
	sort.SliceStable(ends, func(i, j int) bool { return m.withdrawsAt(ends[i]) < m.withdrawsAt(ends[j]) })
	for _, s := range ends {
		m.ops["withdraw"]++
		m.now = max(m.now, m.withdrawsAt(s)+0.5) // (as withdraw spends)
		m.withdrawn(s)
		if s.mcp && s.req() != nil {
			m.tail(t) // what it asked after, to its end too
			return
		}
	}
	// Last, time: each question left to time out.
	for _, s := range m.sessions {
		r := s.req()
		if r == nil || r.done || r.shown == 0 || r.orphan || r.outcome != "timeout" {
			continue
		}
		// The person may have begun: a part held while the time runs
		// out must neither stop nor move the deadline.
		if m.caps.canPart() && s.awaitable() && len(r.held) < len(r.qs)-1 && m.now-r.since <= 0.5*m.caps.seconds && rapid.IntRange(0, 1).Draw(t, "holdBeforeTimeout") == 1 {
			if args, part := r.part(); len(args) > 0 {
				m.ops["answerPart"]++
				m.hold(s, args, part, m.lateInWait(r))
			}
		}
		m.ops["expire"]++
		m.now = max(m.now, r.since+m.caps.seconds+1)
		m.expired(s)
	}
}

// generate draws a whole sequence: a first session, the steps, and how
// it ends (tail).
func (m *xModel) generate(t *rapid.T) {
	m.files, m.ops = map[string]string{}, map[string]int{}
	m.start(t)
	m.ops["start"]++ // the later ones are counted as steps
	t.Repeat(m.actions())
	m.emit("")
	m.emit("# The end: each question left to end by itself, seen to its end; every agent's verdict; the rules.")
	m.tail(t)
}

// script is the generated case: its lines and the scenarios (a found
// case gets a comment that says how it came to be: header).
func (m *xModel) script() []byte {
	var b strings.Builder
	for _, l := range m.lines {
		b.WriteString(l + "\n")
	}
	for _, s := range m.sessions {
		if !s.exited && !s.killed {
			fmt.Fprintf(&b, "check %s\n", s.alias)
		}
	}
	b.WriteString("invariants\n")
	names := make([]string, 0, len(m.files))
	for n := range m.files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(&b, "\n-- %s --\n%s", n, m.files[n])
	}
	return []byte(b.String())
}
