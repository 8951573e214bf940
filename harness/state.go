package harness

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/askctl/askctl/internal/clip"
	"github.com/askctl/askctl/internal/events"
	"github.com/askctl/askctl/protocol"
	"github.com/askctl/askctl/scenarios"
	"github.com/askctl/askctl/surface"
	"github.com/askctl/askctl/transcript"
)

// State is what an Env has seen. Each record an agent writes and each event
// a surface tells is turned into typed facts once, when it arrives
// (requests, responses, turns, exits, failures, questions shown);
// expectations read them with the Env locked, through read-only accessors
// that return copies, and never write.
type State struct {
	sessions map[string]*SessionState // by alias
	byAgent  map[string]*SessionState // by the agent's session id
	stray    []transcript.Record      // records of agents the harness did not start
	// restarts are when the harness restarted the bridge (Env.Restart).
	restarts []time.Time
	// reconnects: the profile declares capability reconnect, where
	// UI-STATUS's rules apply.
	reconnects bool
	// drivers are the driver's, by alias, apart from what was seen.
	drivers map[string]*driver
}

// driver is what the Env's driver keeps of one session: the questions
// each connection's waits took, the one the case works on, and the
// connections.
type driver struct {
	consumed map[string]map[string]bool // connection → the question ids its waits took
	current  string                     // the question the case works on: the last one awaited
	conns    map[string]surface.Conn
	gen      map[string]int       // connections opened under each name
	opened   map[string]time.Time // when each connection (its latest) was open: its Open returned
	cut      map[string]time.Time // when each connection (its latest) last lost its stream (Drop, Offline)
	back     map[string]time.Time // when it last had it back (Resume, Online)
	// reclaimed: the connections (their latest) that took their session
	// back after another took it over (Reclaim).
	reclaimed map[string]bool
}

// renew starts name conn afresh, for a connection that opens under it
// (again): what the one before heard keeps a name of its own (conn#N), and
// so does nothing of its waits, times or stream cuts.
func (d *driver) renew(s *SessionState, conn string) {
	d.gen[conn]++
	if d.gen[conn] > 1 {
		old := fmt.Sprintf("%s#%d", conn, d.gen[conn]-1)
		for i := range s.told {
			if s.told[i].Conn == conn {
				s.told[i].Conn = old
			}
		}
		delete(d.consumed, conn)
	}
	delete(d.opened, conn)
	delete(d.cut, conn)
	delete(d.back, conn)
	delete(d.reclaimed, conn)
}

// liveSince is when connection conn (its latest) began to hear the
// bridge live: its opening, or its stream's return after a cut; false
// while the stream is cut.
func (d *driver) liveSince(conn string) (time.Time, bool) {
	opened, ok := d.opened[conn]
	cut, back := d.cut[conn], d.back[conn]
	switch {
	case !ok:
		return time.Time{}, false
	case cut.IsZero():
		return opened, true
	case back.Before(cut):
		return time.Time{}, false
	}
	return back, true
}

// consumed is the questions connection conn of alias's session took with
// its waits (nil: none); it makes no driver.
func (st *State) consumed(alias, conn string) map[string]bool {
	if d := st.drivers[alias]; d != nil {
		return d.consumed[conn]
	}
	return nil
}

// driver is alias's driver, made when first needed.
func (st *State) driver(alias string) *driver {
	d := st.drivers[alias]
	if d == nil {
		d = &driver{consumed: map[string]map[string]bool{}, conns: map[string]surface.Conn{}, gen: map[string]int{}, opened: map[string]time.Time{}, cut: map[string]time.Time{}, back: map[string]time.Time{}, reclaimed: map[string]bool{}}
		if st.drivers == nil {
			st.drivers = map[string]*driver{}
		}
		st.drivers[alias] = d
	}
	return d
}

// SessionState is what one session the harness started has seen: its
// agent's records and what its surface connections showed, with the facts
// read from them. What the driver keeps (the question a case works on,
// the connections) is not here: it is the Env's.
type SessionState struct {
	alias    string
	id       string // the bridge's id
	agentID  string // the session id fakeclaude announces
	scenario *scenarios.Scenario
	// mcp says the harness runs the agent in print mode against the bridge's
	// MCP server (StartMCP); id is learnt from the surface.
	mcp bool
	// altered: a surface showed, under a session no case started, the
	// question of the session's mcp step with its white space changed
	// (mcpAltered); the first such, as the failure's words.
	altered string

	agent []transcript.Record // every record, as it came (for summaries)
	told  []surface.Event     // what the surfaces told of it, in order

	// requests are the agent's AskUserQuestion can_use_tool requests, in
	// order; in a route MCP session, its ask_user tool calls.
	requests []*Request
	// turns counts the results the agent wrote (turns ended).
	turns int
	// exit is the agent's exit status, once it exited (the latest agent
	// process, for a resumed session).
	exit *int
	// exitStderr is the end of what the agent wrote on stderr, where its
	// exit record says (the real CLI's, through the shim).
	exitStderr string
	// failures are what the agents reported wrong: protocol errors and
	// broken expectations, of every process; latestFailures, of the latest.
	failures []string
	// resumed: the latest agent process was started with --resume, and
	// resumedTurns counts the turns it ended.
	resumed      bool
	resumedTurns int
	// helloAt is when the latest agent process said hello, and readyAt
	// when it wrote its first line, zero until it has (AfterStart).
	helloAt, readyAt time.Time
	// questions are the question ids the surfaces showed, in order of
	// first appearance, and shownTexts each one's question texts, by
	// which it is matched to the agent's request (reqIndex).
	questions  []string
	shownTexts map[string][]string
	// others are the agent's permission prompts for other tools, by
	// request id (the tool's name, "" once decided), and decided counts
	// those that got a response, by tool.
	others  map[string]string
	decided map[string]int

	requestsFrom int                            // requests of the latest process start here
	prevFrom     int                            // and of the process before it
	prompted     bool                           // the latest process has had its first prompt
	failuresFrom int                            // failures of the latest process start here
	failureSteps []int                          // the scenario step of each of failures, 0 for none
	byReq        map[string]*Request            // requests by request id
	byToolUse    map[string]*Request            // requests by tool_use id
	answered     map[string]time.Time           // question id → when the harness first answered it
	permitted    map[string]bool                // permission prompts answered (Session.Permit)
	skipped      map[string]bool                // questions the person skipped, the surface accepting it
	sent         map[string]map[string][]string // question id → question text → the labels the person answered, the surface accepting them
	// redelivered are the resumes that told the agent again an answer it
	// had (redelivery), each as its violation's words.
	redelivered []string
}

// Request is one request of the agent for the person, with what came of it.
type Request struct {
	ID        string // request_id (route SDK) or tool_use id (route MCP)
	ToolUseID string
	T         time.Time
	Input     json.RawMessage
	// Responses are the control_responses the agent received for it.
	Responses []Response
	// ToolResult is the tool_result block the agent wrote for it: its
	// verdict on the answer, as the model will read it.
	ToolResult json.RawMessage
	// Verdict: the agent has reacted to the (first) response: it wrote the
	// tool_result, reported a failure, or exited.
	Verdict bool
	// Cancelled is when the agent withdrew the request
	// (control_cancel_request); zero if it did not.
	Cancelled time.Time

	// Decoded once, as the facts arrive:
	asked      []protocol.Question // the questions Input asks
	askedMCP   bool                // Input is an ask_user call's (one question)
	askedRaw   json.RawMessage     // Input's questions, as the agent wrote them
	texts      map[string]bool     // the text of each of asked
	textList   []string            // the same, in order
	resultText string              // ToolResult's text
	resultErr  bool                // ToolResult is an error
}

// Response is one control_response the agent received.
type Response struct {
	T   time.Time
	Msg json.RawMessage
	// Result is the permission result (response.response).
	Result json.RawMessage

	peeked  protocol.Peeked  // Msg, decoded once
	granted protocol.Granted // Result, decoded once
}

func newSessionState(alias, agentID string, sc *scenarios.Scenario, mcp bool) *SessionState {
	return &SessionState{alias: alias, agentID: agentID, scenario: sc, mcp: mcp, byReq: map[string]*Request{}, byToolUse: map[string]*Request{},
		answered: map[string]time.Time{}, skipped: map[string]bool{}, sent: map[string]map[string][]string{}}
}

// add turns one record of the session's agent into facts.
func (s *SessionState) add(r transcript.Record) {
	s.agent = append(s.agent, r)
	switch {
	case r.Event == events.EventHello:
		// A new agent process (a resume).
		s.exit, s.failuresFrom, s.prevFrom, s.requestsFrom = nil, len(s.failures), s.requestsFrom, len(s.requests)
		s.prompted = false
		var hello struct {
			Resume string `json:"resume"`
		}
		_ = json.Unmarshal(r.Msg, &hello)
		s.resumed, s.resumedTurns = hello.Resume != "", 0
		s.helloAt, s.readyAt = r.T, time.Time{}
	case r.Event == transcript.EventExit && r.Code != nil:
		c := *r.Code
		s.exit, s.exitStderr = &c, r.Text
		for _, req := range s.requests {
			if len(req.Responses) > 0 {
				req.Verdict = true
			}
		}
	case r.Event == transcript.EventError && r.Kind == "expectation":
		// The agent's error for the broken expectation it just recorded,
		// saying where ("stdin line 3: …"): one failure, not two.
		if n := len(s.failures); n > s.failuresFrom && s.failureSteps[n-1] == r.Step && strings.HasSuffix(r.Text, strings.TrimPrefix(s.failures[n-1], "expectation: ")) {
			s.failures[n-1] = "expectation: " + r.Text
			break
		}
		s.failed(r.Step, "expectation: "+r.Text)
	case r.Event == transcript.EventError:
		// Its step too: what the response there was tells whose rule the
		// protocol error is (answerOwners reads it, not the text).
		s.failed(r.Step, fmt.Sprintf("%s: %s", r.Kind, r.Text))
	case r.Event == transcript.EventExpect && r.OK != nil && !*r.OK:
		s.failed(r.Step, "expectation: "+r.Text)
	case r.Dir == transcript.FromCLI:
		if s.readyAt.IsZero() {
			s.readyAt = r.T
		}
		s.fromAgent(r)
	case r.Dir == transcript.ToCLI:
		s.toAgent(r)
	}
}

// failed notes a failure; it is the agent's verdict on every request it
// had a response for.
func (s *SessionState) failed(step int, why string) {
	s.failures = append(s.failures, why)
	s.failureSteps = append(s.failureSteps, step)
	for _, req := range s.requests {
		if len(req.Responses) > 0 {
			req.Verdict = true
		}
	}
}

func (s *SessionState) fromAgent(r transcript.Record) {
	m := protocol.Peek(r.Msg)
	switch m.Type {
	case protocol.TypeControlRequest:
		if !s.mcp && m.Request.Subtype == protocol.SubtypeCanUseTool && m.Request.ToolName == protocol.ToolAskUserQuestion {
			s.request(&Request{ID: m.RequestID, ToolUseID: m.Request.ToolUseID, T: r.T, Input: m.Request.Input})
		} else if m.Request.Subtype == protocol.SubtypeCanUseTool {
			if s.others == nil {
				s.others = map[string]string{}
			}
			s.others[m.RequestID] = m.Request.ToolName
		}
	case protocol.TypeControlCancelRequest:
		if req := s.byReq[m.RequestID]; req != nil && req.Cancelled.IsZero() {
			req.Cancelled = r.T
		}
	case protocol.TypeAssistant:
		if !s.mcp {
			return
		}
		for _, b := range m.Blocks {
			if b.Type != "tool_use" {
				continue
			}
			if strings.HasPrefix(b.Name, "mcp__") {
				s.request(&Request{ID: b.ID, ToolUseID: b.ID, T: r.T, Input: b.Input})
			}
			break // the first tool_use
		}
	case protocol.TypeUser:
		for i, b := range m.Blocks {
			if b.Type == "tool_result" {
				if req := s.byToolUse[b.ToolUseID]; req != nil && req.ToolResult == nil {
					raw := m.RawBlocks[i]
					req.ToolResult, req.Verdict = raw, true
					req.resultText, req.resultErr = protocol.ToolResult(raw)
				}
			}
		}
	case protocol.TypeResult:
		s.turns++
		if s.resumed {
			s.resumedTurns++
		}
	}
}

func (s *SessionState) request(req *Request) {
	req.asked, req.askedMCP = protocol.Asked(req.Input)
	req.textList = questionTexts(req.asked)
	req.texts = map[string]bool{}
	for _, t := range req.textList {
		req.texts[t] = true
	}
	var in struct {
		Questions json.RawMessage `json:"questions"`
	}
	_ = json.Unmarshal(req.Input, &in)
	req.askedRaw = in.Questions
	s.requests = append(s.requests, req)
	s.byReq[req.ID] = req
	if req.ToolUseID != "" {
		s.byToolUse[req.ToolUseID] = req
	}
}

func (s *SessionState) toAgent(r transcript.Record) {
	m := protocol.Peek(r.Msg)
	if m.Type == protocol.TypeUser && !s.prompted {
		s.prompted = true
		if s.resumed && !s.mcp {
			s.redelivery(m)
		}
	}
	if m.Type != protocol.TypeControlResponse {
		return
	}
	if req := s.byReq[m.Response.RequestID]; req != nil {
		req.Responses = append(req.Responses, Response{T: r.T, Msg: r.Msg, Result: m.Response.Result, peeked: m, granted: protocol.ReadGranted(m.Response.Result)})
	} else if tool, ok := s.others[m.Response.RequestID]; ok && tool != "" {
		if s.decided == nil {
			s.decided = map[string]int{}
		}
		s.decided[tool]++
		s.others[m.Response.RequestID] = "" // its first response decides it
	}
}

// redelivery judges a resumed agent's first prompt m: where the agent
// before it had its response to every request it made, nothing was left
// to deliver, and a prompt that asks again a question of that agent's, of
// which it had the answer, tells it that answer a second time (a restarted
// bridge that did not see the reply in what the agent left behind). Where
// a request went without its response, the prompt is that one's delivery,
// and may recall others; questions of older processes are not judged.
func (s *SessionState) redelivery(m protocol.Peeked) {
	prev := s.requests[s.prevFrom:s.requestsFrom]
	for _, req := range prev {
		if len(req.Responses) == 0 {
			return
		}
	}
	text := m.Text
	for _, b := range m.Blocks {
		if b.Type == "text" {
			text += "\n" + b.Text
		}
	}
	for _, req := range prev { // not older ones: a prompt may recall them
		if len(req.Responses) == 0 || len(req.textList) == 0 {
			continue
		}
		all := true
		for _, q := range req.textList {
			all = all && strings.Contains(text, q)
		}
		if all {
			s.redelivered = append(s.redelivered, fmt.Sprintf("its agent was resumed with the question of request %s (%q) in its first prompt, though the agent before it had received its response to that request and to every other: an answer reaches the agent once; the prompt: %s",
				req.ID, req.textList[0], clip.String(text, 300)))
		}
	}
}

// show files one surface event.
func (s *SessionState) show(ev surface.Event) {
	s.told = append(s.told, ev)
	if ev.Type == surface.EventQuestion && ev.QuestionID != "" && !contains(s.questions, ev.QuestionID) {
		s.questions = append(s.questions, ev.QuestionID)
		if s.shownTexts == nil {
			s.shownTexts = map[string][]string{}
		}
		s.shownTexts[ev.QuestionID] = questionTexts(ev.Questions)
	}
}

func questionTexts(qs []protocol.Question) []string {
	out := make([]string, len(qs))
	for i, q := range qs {
		out[i] = q.Question
	}
	return out
}

// reqIndex is the index among the agent's requests of the one behind
// question qid (-1: not known yet). Questions are matched to requests in
// the order they showed: each to the first request not matched yet that
// asks the same question texts, else (a surface that shows texts
// otherwise) to the first not matched. Calls of one model response run at
// once, so their questions may show in another order than asked.
func (s *SessionState) reqIndex(qid string) int {
	taken := make([]bool, len(s.requests))
	for _, id := range s.questions {
		k := -1
		if texts := s.shownTexts[id]; len(texts) > 0 {
			for j, r := range s.requests {
				if !taken[j] && slices.Equal(r.textList, texts) {
					k = j
					break
				}
			}
		}
		if k < 0 {
			k = slices.Index(taken, false) // -1 while every request it could be is matched
		}
		if id == qid {
			return k
		}
		if k >= 0 {
			taken[k] = true
		}
	}
	return -1
}

// extraQuestions are the question ids shown asking what fewer requests
// of the agent asked: for each list of question texts that a request
// asks, the ids shown asking it past the number of requests that ask it,
// each with the id first shown for the same texts and that number. One
// request is one question, under one id, across reconnects and restarts.
// (An id that shows no texts, or texts no request asks — a surface that
// shows them otherwise, or a request one card at a time — is not counted.)
func (s *SessionState) extraQuestions() (extra []struct {
	ID, First string
	Asked     int
}) {
	asked := map[string]int{}
	for _, r := range s.requests {
		asked[strings.Join(r.textList, "\x00")]++
	}
	shown := map[string][]string{}
	for _, id := range s.questions {
		texts := s.shownTexts[id]
		if len(texts) == 0 {
			continue
		}
		k := strings.Join(texts, "\x00")
		if asked[k] > 0 && len(shown[k]) >= asked[k] {
			extra = append(extra, struct {
				ID, First string
				Asked     int
			}{id, shown[k][0], asked[k]})
		}
		shown[k] = append(shown[k], id)
	}
	return extra
}

// firstShown is when question qid was first shown, on any connection.
func (s *SessionState) firstShown(qid string) time.Time {
	for _, ev := range s.told {
		if ev.Type == surface.EventQuestion && ev.QuestionID == qid {
			return ev.T
		}
	}
	return time.Time{}
}

// matchedByText reports whether question qid shows no texts, or the
// agent made a request that asks them.
func (s *SessionState) matchedByText(qid string) bool {
	texts := s.shownTexts[qid]
	if len(texts) == 0 {
		return true
	}
	return slices.ContainsFunc(s.requests, func(r *Request) bool { return slices.Equal(r.textList, texts) })
}

// questionOf is the question id the surfaces showed for the i-th request
// ("?" for none).
func (s *SessionState) questionOf(i int) string {
	for _, id := range s.questions {
		if s.reqIndex(id) == i {
			return id
		}
	}
	return "?"
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// latestFailures are the failures of the latest agent process (a resumed
// session's first agent may have died with the bridge).
func (s *SessionState) latestFailures() []string { return s.failures[s.failuresFrom:] }

// A Problem is one thing an agent reported wrong. Step, when not nil, is
// the scenario step whose expectation the answer broke; Skipped, that the
// person skipped that step's question (what reached the agent for it is
// then the skip's: SDK-SKIP-DENY's).
type Problem struct {
	Text    string
	Step    *scenarios.Step
	Skipped bool
	// Owners, when set, are the requirements the way the answer was
	// broken belongs to (answerOwners), or SDK-PASSTHROUGH for another
	// tool's permission prompt: the case's own failure in a case of one of
	// them, BLOCKED by the first in another.
	Owners []string
}

// answerOwners are the requirements that own how the allow the agent got
// for a question the person answered differs from what they gave, where
// the way it differs tells (nil otherwise); the first is the one blamed in
// a case of none of them:
//   - SDK-ANSWER-SINGLE: an answer keyed by no question's text (q_0);
//   - SDK-ANSWER-ALL: an allow though the person answered only part of the
//     request (sent before every question was answered);
//   - SDK-ANSWER-MULTI: a multiSelect answer whose labels are all options,
//     joined, ordered or cut otherwise than the person picked them;
//   - an answer's value otherwise than the person gave it, on whatever
//     path it came (a late answer after a restart, a replay): the rule of
//     the answer's shape, SDK-ANSWER-MULTI for a multiSelect one,
//     SDK-ANSWER-OTHER where the person's own words are in it (both, for a
//     multiSelect one with own words), SDK-ANSWER-SINGLE for one label;
//     SDK-NO-EMPTY before them where the answer is blank or missing (a
//     partial set, SDK-ANSWER-ALL's first, where the request has several).
//     What the person gave reaches the agent byte for byte, whichever
//     requirement's case met the difference.
func answerOwners(req *Request, sent map[string][]string) []string {
	if len(req.Responses) == 0 || len(sent) == 0 {
		return nil
	}
	g := req.Responses[0].granted
	if g.Behavior != protocol.BehaviorAllow {
		return nil
	}
	qs, texts := req.asked, req.texts
	if g.AnswersRaw != nil && !g.AnswersSent {
		return []string{"SDK-ANSWER-SINGLE"} // answers that are no object: keyed by no question
	}
	for _, a := range g.Answers {
		if !texts[a.Key] {
			return []string{"SDK-ANSWER-SINGLE"}
		}
	}
	if len(sent) < len(qs) {
		return []string{"SDK-ANSWER-ALL"}
	}
	for _, q := range qs {
		labels, ok := sent[q.Question]
		if !q.MultiSelect || !ok {
			continue
		}
		a, _ := g.Answer(q.Question)
		got, isString := a.String()
		if !isString || got == protocol.JoinLabels(labels) {
			continue
		}
		all := true
		for _, l := range strings.FieldsFunc(got, func(r rune) bool { return r == ',' }) {
			if !protocol.IsLabel(q, strings.TrimSpace(l)) {
				all = false
			}
		}
		if all {
			return []string{"SDK-ANSWER-MULTI"}
		}
	}
	for _, q := range qs {
		labels, ok := sent[q.Question]
		if !ok {
			continue
		}
		a, present := g.Answer(q.Question)
		got, isString := a.String()
		if present && isString && got == protocol.JoinLabels(labels) {
			continue
		}
		var owners []string
		switch {
		case !present && len(qs) > 1:
			return []string{"SDK-ANSWER-ALL", "SDK-NO-EMPTY"} // a partial set
		case !present || isString && strings.TrimSpace(got) == "":
			owners = append(owners, "SDK-NO-EMPTY")
		}
		own := slices.ContainsFunc(labels, func(l string) bool { return !protocol.IsLabel(q, l) })
		switch {
		case q.MultiSelect && own:
			return append(owners, "SDK-ANSWER-MULTI", "SDK-ANSWER-OTHER")
		case q.MultiSelect:
			return append(owners, "SDK-ANSWER-MULTI")
		case own:
			return append(owners, "SDK-ANSWER-OTHER")
		}
		return append(owners, "SDK-ANSWER-SINGLE")
	}
	return nil
}

// latestProblems are latestFailures with their steps.
func (s *SessionState) latestProblems() []Problem {
	var out []Problem
	for i := s.failuresFrom; i < len(s.failures); i++ {
		p := Problem{Text: s.failures[i]}
		if n := s.failureSteps[i]; s.scenario != nil && n >= 1 && n <= len(s.scenario.Steps) {
			p.Step = &s.scenario.Steps[n-1]
			if p.Step.Tool != nil && strings.HasPrefix(p.Text, "expectation: stdin line") {
				// The reply to another tool's permission prompt, decided
				// otherwise than the policy says or its input changed:
				// the rule of passing them through, whatever case met it.
				// (Not what the agent met while on that step about another
				// request: a second response, a late allow.)
				p.Owners = []string{"SDK-PASSTHROUGH"}
			}
			for _, qid := range s.questions {
				if s.askStep(qid) != p.Step {
					continue
				}
				if s.mcp {
					p.Owners = s.mcpOwners(qid)
					continue
				}
				if s.skipped[qid] {
					p.Skipped = true
				} else if req, ok := s.requestOf(qid); ok {
					p.Owners = answerOwners(req, s.sent[qid])
				}
			}
		}
		out = append(out, p)
	}
	return out
}

// mcpOwners are the requirements that own what an ask_user call returned
// for question qid, by how the person ended it: a skip's result is
// MCP-SKIP's, an answer's MCP-ANSWER's (MCP-MULTI's first, for a
// multiSelect question answered with labels alone); nil where the person
// did neither.
func (s *SessionState) mcpOwners(qid string) []string {
	if s.skipped[qid] {
		return []string{"MCP-SKIP"}
	}
	if s.sent[qid] == nil {
		return nil
	}
	req, ok := s.requestOf(qid)
	if !ok || len(req.asked) != 1 || !req.asked[0].MultiSelect {
		return []string{"MCP-ANSWER"}
	}
	q := req.asked[0]
	for _, labels := range s.sent[qid] {
		if slices.ContainsFunc(labels, func(l string) bool { return !protocol.IsLabel(q, l) }) {
			return []string{"MCP-ANSWER", "MCP-MULTI"} // the person's own words
		}
	}
	return []string{"MCP-MULTI", "MCP-ANSWER"}
}

// waitsOn reports whether the agent still waits on question qid: its
// request, of the agent process now running, has had no response and was
// not withdrawn.
func (s *SessionState) waitsOn(qid string) bool {
	i := s.reqIndex(qid)
	if i < 0 || i < s.requestsFrom || s.exit != nil {
		return false
	}
	req := s.requests[i]
	return len(req.Responses) == 0 && req.Cancelled.IsZero()
}

// requestOf is the agent's request behind question qid (reqIndex).
func (s *SessionState) requestOf(qid string) (*Request, bool) {
	if i := s.reqIndex(qid); i >= 0 {
		return s.requests[i], true
	}
	return nil, false
}

// nextQuestion is the first question connection conn shows that it has not
// consumed.
func (s *SessionState) nextQuestion(conn string, consumed map[string]bool) (string, bool) {
	for _, ev := range s.told {
		if ev.Conn == conn && ev.Type == surface.EventQuestion && !consumed[ev.QuestionID] {
			return ev.QuestionID, true
		}
	}
	return "", false
}

// shown is question qid as connection conn ("" any) showed it.
// A request shown one card at a time (the exec contract's card rule) is
// several question events with its one id: the questions are those of
// every card, each once, in the order first shown.
func (s *SessionState) shown(conn, qid string) ([]protocol.Question, bool) {
	var out []protocol.Question
	seen := map[string]bool{}
	for _, ev := range s.told {
		if (conn == "" || ev.Conn == conn) && ev.Type == surface.EventQuestion && ev.QuestionID == qid {
			for _, q := range ev.Questions {
				if !seen[q.Question] {
					seen[q.Question] = true
					out = append(out, q)
				}
			}
		}
	}
	return out, len(out) > 0
}

// taken reports whether connection conn was told of a takeover.
func (s *SessionState) taken(conn string) bool {
	for _, ev := range s.told {
		if ev.Conn == conn && ev.Type == surface.EventTaken {
			return true
		}
	}
	return false
}

// longLine is the length past which a line of the agent is named in a
// wait that ran out: 64 KiB, a line reader's default bound (Go's
// bufio.Scanner, among others), the usual cause of a bridge that stops
// hearing its agent.
const longLine = 64 << 10

// agentWaits says what the session's agent waits on at now, for a wait
// that ran out: its permission requests that had no response, how long
// each has waited, and a line of the agent's longer than a line reader
// takes by default. "" when it waits on nothing.
func (s *SessionState) agentWaits(now time.Time) string {
	type open struct {
		what string
		t    time.Time
	}
	var order []string
	waiting := map[string]open{}
	var long, last transcript.Record
	for _, r := range s.agent {
		if r.Event == events.EventHello {
			// A new agent process: what the one before waited on died with it.
			order, waiting, long, last = nil, map[string]open{}, transcript.Record{}, transcript.Record{}
			continue
		}
		if !r.IsWire() {
			continue
		}
		m := protocol.Peek(r.Msg)
		if r.Dir == transcript.FromCLI {
			last = r
			if len(r.Msg) > longLine && len(r.Msg) > len(long.Msg) {
				long = r
			}
		}
		switch {
		case r.Dir == transcript.FromCLI && m.Type == protocol.TypeControlRequest && m.Request.Subtype == protocol.SubtypeCanUseTool:
			order = append(order, m.RequestID)
			waiting[m.RequestID] = open{fmt.Sprintf("its %s request %s", m.Request.ToolName, m.RequestID), r.T}
		case r.Dir == transcript.FromCLI && m.Type == protocol.TypeControlCancelRequest:
			delete(waiting, m.RequestID)
		case r.Dir == transcript.ToCLI && m.Type == protocol.TypeControlResponse:
			delete(waiting, m.Response.RequestID)
		}
	}
	if s.mcp {
		for _, req := range s.requests[s.requestsFrom:] {
			if req.ToolResult == nil {
				order = append(order, req.ID)
				waiting[req.ID] = open{"its MCP tool call " + req.ID, req.T}
			}
		}
	}
	var parts []string
	var first time.Time // when the agent began to wait on the first of them
	for _, id := range order {
		if w, ok := waiting[id]; ok {
			parts = append(parts, fmt.Sprintf("%s, for %.1fs", w.what, now.Sub(w.t).Seconds()))
			if first.IsZero() {
				first = w.t
			}
			delete(waiting, id)
		}
	}
	switch {
	case s.exit != nil:
		return ""
	case len(parts) > 0:
		out := fmt.Sprintf("the agent of session %s waited on the bridge's response to %s", s.alias, strings.Join(parts, "; "))
		if long.Msg != nil && !long.T.After(first) {
			out += fmt.Sprintf(" (it wrote a line of %d KB before, of type %s: past the 64 KiB a line reader takes unless told more)",
				len(long.Msg)/1000, protocol.Peek(long.Msg).Type)
		}
		return out
	case len(last.Msg) > longLine && protocol.Peek(last.Msg).Type != protocol.TypeResult:
		// The agent writes its lines in order: one the bridge does not
		// read holds back every line after it. (After a result, the agent
		// waits on its input, not on its write.)
		return fmt.Sprintf("the agent of session %s wrote nothing after its line of %d KB (of type %s, %.1fs before): "+
			"past the 64 KiB a line reader takes unless told more; if the bridge stopped reading there, the agent is blocked on its write",
			s.alias, len(last.Msg)/1000, protocol.Peek(last.Msg).Type, now.Sub(last.T).Seconds())
	}
	return ""
}

// latestAgent says what the session's latest agent process has done since
// it said hello: whether it was resumed, the lines it wrote, its last
// line and the last note about it (a real CLI's launcher notes its start
// and its end), for a wait on it that ran out.
func (s *SessionState) latestAgent(now time.Time) string {
	hello := -1
	for i, r := range s.agent {
		if r.Event == events.EventHello {
			hello = i
		}
	}
	if hello < 0 {
		return fmt.Sprintf("no agent process of session %s said hello", s.alias)
	}
	h := s.agent[hello]
	what := "its latest agent process (not resumed)"
	if s.resumed {
		what = "its agent resumed with --resume"
	}
	out := fmt.Sprintf("%s said hello %.1fs ago", what, now.Sub(h.T).Seconds())
	lines := 0
	var last, note transcript.Record
	for _, r := range s.agent[hello+1:] {
		switch {
		case r.IsWire() && r.Dir == transcript.FromCLI:
			lines++
			last = r
		case r.Event == transcript.EventNote:
			note = r
		}
	}
	if lines == 0 {
		out += " and has written nothing since"
	} else {
		out += fmt.Sprintf(" and has written %d lines since, the last of type %s %.1fs ago", lines, protocol.Peek(last.Msg).Type, now.Sub(last.T).Seconds())
	}
	if s.resumed {
		out += fmt.Sprintf(", ended %d turns", s.resumedTurns)
	}
	if note.Text != "" {
		out += fmt.Sprintf("; the last note on it (%.1fs ago): %s", now.Sub(note.T).Seconds(), clip.String(note.Text, 200))
	}
	if s.exit != nil {
		out += fmt.Sprintf("; it exited with status %d", *s.exit)
	}
	return out
}

// Summary describes what the session saw, for failure messages: the
// agent's messages about questions and the surface events.
func (s *SessionState) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "session %s (bridge id %s, agent %s, scenario %s)\n", s.alias, s.id, s.agentID, s.scenario.Name)
	b.WriteString("  agent:\n")
	n := 0
	for _, r := range s.agent {
		line := ""
		switch {
		case r.IsWire():
			t := protocol.Peek(r.Msg).Type
			if t != protocol.TypeControlRequest && t != protocol.TypeControlResponse && t != protocol.TypeControlCancelRequest && t != protocol.TypeResult {
				continue
			}
			line = fmt.Sprintf("%s %s", r.Dir, clip.String(string(r.Msg), 300))
		case r.Event == transcript.EventError || r.Event == transcript.EventExit || (r.Event == transcript.EventExpect && r.OK != nil && !*r.OK):
			line = fmt.Sprintf("%s %s %s", r.Event, r.Kind, r.Text)
			if r.Code != nil {
				line += fmt.Sprintf(" code %d", *r.Code)
			}
		default:
			continue
		}
		fmt.Fprintf(&b, "    %s\n", line)
		n++
	}
	if n == 0 {
		b.WriteString("    (nothing)\n")
	}
	b.WriteString("  surface:\n")
	if len(s.told) == 0 {
		b.WriteString("    (nothing)\n")
	}
	for _, ev := range s.told {
		fmt.Fprintf(&b, "    [%s] %s %s %s\n", ev.Conn, ev.Type, ev.QuestionID, clip.String(ev.Reason, 200))
	}
	return b.String()
}

// list lists the sessions by alias.
func (st *State) list() []*SessionState {
	var out []*SessionState
	for _, s := range st.sessions {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].alias < out[j].alias })
	return out
}

// bound reports whether a session the harness started is bridge session id.
func (st *State) bound(id string) bool {
	for _, s := range st.sessions {
		if s.id == id {
			return true
		}
	}
	return false
}

// The read-only view of State, for an Expectation written outside the
// package: each accessor returns a copy, so what a Check reads cannot
// change what the Env saw.

// Session is the state of the session started as alias, or nil.
func (st *State) Session(alias string) *SessionState { return st.sessions[alias] }

// Stray is the records of agents the harness did not start.
func (st *State) Stray() []transcript.Record { return slices.Clone(st.stray) }

// Restarts are when the harness restarted the bridge (Env.Restart).
func (st *State) Restarts() []time.Time { return slices.Clone(st.restarts) }

// Alias is the name the harness started the session under.
func (s *SessionState) Alias() string { return s.alias }

// ID is the bridge's id of the session ("" until the bridge said it).
func (s *SessionState) ID() string { return s.id }

// AgentID is the session id the agent announced.
func (s *SessionState) AgentID() string { return s.agentID }

// Scenario is the scenario the session's agent plays.
func (s *SessionState) Scenario() *scenarios.Scenario { return s.scenario }

// Records are the records its agents wrote, in order.
func (s *SessionState) Records() []transcript.Record { return slices.Clone(s.agent) }

// Events are what the surfaces told of the session, in order.
func (s *SessionState) Events() []surface.Event { return slices.Clone(s.told) }

// Requests are the agent's requests for the person (AskUserQuestion
// can_use_tool requests, or ask_user tool calls), with what came of each.
func (s *SessionState) Requests() []Request {
	out := make([]Request, len(s.requests))
	for i, r := range s.requests {
		out[i] = *r
		out[i].Responses = slices.Clone(r.Responses)
	}
	return out
}

// Questions are the question ids the surfaces showed, in order of first
// appearance; the n-th is the agent's n-th request.
func (s *SessionState) Questions() []string { return slices.Clone(s.questions) }

// Turns counts the turns the agent ended (its results).
func (s *SessionState) Turns() int { return s.turns }

// Exit is the agent's exit status, once it exited (the latest agent
// process, for a resumed session).
func (s *SessionState) Exit() (int, bool) {
	if s.exit == nil {
		return 0, false
	}
	return *s.exit, true
}

// Failures are what the agents reported wrong: protocol errors and broken
// expectations, of every process.
func (s *SessionState) Failures() []string { return slices.Clone(s.failures) }
