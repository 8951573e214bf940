package harness

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/askctl/askctl/internal/clip"
	"github.com/askctl/askctl/internal/events"
	"github.com/askctl/askctl/protocol"
	"github.com/askctl/askctl/scenarios"
	"github.com/askctl/askctl/surface"
	"github.com/askctl/askctl/transcript"
	"github.com/tidwall/gjson"
)

// State is what an Env has seen. Each record an agent writes and each event
// a surface tells is turned into typed facts once, when it arrives
// (requests, responses, turns, exits, failures, questions shown);
// expectations read them with the Env locked and never write.
type State struct {
	Sessions map[string]*SessionState // by alias
	byAgent  map[string]*SessionState // by the agent's session id
	Stray    []transcript.Record      // records of agents the harness did not start
	// Restarts are when the harness restarted the bridge (Env.Restart).
	Restarts []time.Time
}

// SessionState is what one session the harness started has seen: its
// agent's records and what its surface connections showed, with the facts
// read from them.
type SessionState struct {
	Alias    string
	ID       string // the bridge's id
	AgentID  string // the session id fakeclaude announces
	Scenario *scenarios.Scenario
	// MCP says the harness runs the agent in print mode against the bridge's
	// MCP server (StartMCP); ID is learnt from the surface.
	MCP bool

	Agent   []transcript.Record // every record, as it came (for summaries)
	Surface []surface.Event

	// Requests are the agent's AskUserQuestion can_use_tool requests, in
	// order; in a route MCP session, its ask_user tool calls.
	Requests []*Request
	// Turns counts the results the agent wrote (turns ended).
	Turns int
	// Exit is the agent's exit status, once it exited (the latest agent
	// process, for a resumed session).
	Exit *int
	// ExitStderr is the end of what the agent wrote on stderr, where its
	// exit record says (the real CLI's, through the shim).
	ExitStderr string
	// Failures are what the agents reported wrong: protocol errors and
	// broken expectations, of every process; LatestFailures, of the latest.
	Failures []string
	// Resumed: the latest agent process was started with --resume, and
	// ResumedTurns counts the turns it ended.
	Resumed      bool
	ResumedTurns int
	// Questions are the question ids the surfaces showed, in order of
	// first appearance; the n-th is the agent's n-th request.
	Questions []string

	failuresFrom int                  // Failures of the latest process start here
	failureSteps []int                // the scenario step of each of Failures, 0 for none
	byReq        map[string]*Request  // Requests by request id
	byToolUse    map[string]*Request  // Requests by tool_use id
	answered     map[string]time.Time // question id → when the harness first answered it
	consumed     map[string]map[string]bool
	permitted    map[string]bool                // permission prompts answered (Session.Permit)
	skipped      map[string]bool                // questions the person skipped, the surface accepting it
	sent         map[string]map[string][]string // question id → question text → the labels the person answered, the surface accepting them
	current      string                         // the question the case works on: the last one awaited
	conns        map[string]surface.Conn
	gen          map[string]int // connections opened under each name
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
}

// Response is one control_response the agent received.
type Response struct {
	T   time.Time
	Msg json.RawMessage
	// Result is the permission result (response.response).
	Result json.RawMessage
}

func newSessionState(alias, agentID string, sc *scenarios.Scenario, mcp bool) *SessionState {
	return &SessionState{Alias: alias, AgentID: agentID, Scenario: sc, MCP: mcp, byReq: map[string]*Request{}, byToolUse: map[string]*Request{},
		answered: map[string]time.Time{}, skipped: map[string]bool{}, sent: map[string]map[string][]string{}, consumed: map[string]map[string]bool{}, conns: map[string]surface.Conn{}, gen: map[string]int{}}
}

// add turns one record of the session's agent into facts.
func (s *SessionState) add(r transcript.Record) {
	s.Agent = append(s.Agent, r)
	switch {
	case r.Event == events.EventHello:
		// A new agent process (a resume).
		s.Exit, s.failuresFrom = nil, len(s.Failures)
		s.Resumed, s.ResumedTurns = gjson.GetBytes(r.Msg, "resume").String() != "", 0
	case r.Event == transcript.EventExit && r.Code != nil:
		c := *r.Code
		s.Exit, s.ExitStderr = &c, r.Text
		for _, req := range s.Requests {
			if len(req.Responses) > 0 {
				req.Verdict = true
			}
		}
	case r.Event == transcript.EventError && r.Kind == "expectation":
		// The agent's error for the broken expectation it just recorded,
		// saying where ("stdin line 3: …"): one failure, not two.
		if n := len(s.Failures); n > s.failuresFrom && s.failureSteps[n-1] == r.Step && strings.HasSuffix(r.Text, strings.TrimPrefix(s.Failures[n-1], "expectation: ")) {
			s.Failures[n-1] = "expectation: " + r.Text
			break
		}
		s.failed(r.Step, "expectation: "+r.Text)
	case r.Event == transcript.EventError:
		// Its step too: what the response there was tells whose rule the
		// protocol error is (answerOwner reads it, not the text).
		s.failed(r.Step, fmt.Sprintf("%s: %s", r.Kind, r.Text))
	case r.Event == transcript.EventExpect && r.OK != nil && !*r.OK:
		s.failed(r.Step, "expectation: "+r.Text)
	case r.Dir == transcript.FromCLI:
		s.fromAgent(r)
	case r.Dir == transcript.ToCLI:
		s.toAgent(r)
	}
}

// failed notes a failure; it is the agent's verdict on every request it
// had a response for.
func (s *SessionState) failed(step int, why string) {
	s.Failures = append(s.Failures, why)
	s.failureSteps = append(s.failureSteps, step)
	for _, req := range s.Requests {
		if len(req.Responses) > 0 {
			req.Verdict = true
		}
	}
}

func (s *SessionState) fromAgent(r transcript.Record) {
	m := gjson.ParseBytes(r.Msg)
	switch m.Get("type").String() {
	case protocol.TypeControlRequest:
		if !s.MCP && m.Get("request.subtype").String() == protocol.SubtypeCanUseTool && m.Get("request.tool_name").String() == protocol.ToolAskUserQuestion {
			s.request(&Request{ID: m.Get("request_id").String(), ToolUseID: m.Get("request.tool_use_id").String(), T: r.T, Input: json.RawMessage(m.Get("request.input").Raw)})
		}
	case protocol.TypeControlCancelRequest:
		if req := s.byReq[m.Get("request_id").String()]; req != nil && req.Cancelled.IsZero() {
			req.Cancelled = r.T
		}
	case protocol.TypeAssistant:
		if !s.MCP {
			return
		}
		if b := m.Get(`message.content.#(type=="tool_use")`); strings.HasPrefix(b.Get("name").String(), "mcp__") {
			s.request(&Request{ID: b.Get("id").String(), ToolUseID: b.Get("id").String(), T: r.T, Input: json.RawMessage(b.Get("input").Raw)})
		}
	case protocol.TypeUser:
		m.Get("message.content").ForEach(func(_, b gjson.Result) bool {
			if b.Get("type").String() == "tool_result" {
				if req := s.byToolUse[b.Get("tool_use_id").String()]; req != nil && req.ToolResult == nil {
					req.ToolResult, req.Verdict = json.RawMessage(b.Raw), true
				}
			}
			return true
		})
	case protocol.TypeResult:
		s.Turns++
		if s.Resumed {
			s.ResumedTurns++
		}
	}
}

func (s *SessionState) request(req *Request) {
	s.Requests = append(s.Requests, req)
	s.byReq[req.ID] = req
	if req.ToolUseID != "" {
		s.byToolUse[req.ToolUseID] = req
	}
}

func (s *SessionState) toAgent(r transcript.Record) {
	m := gjson.ParseBytes(r.Msg)
	if m.Get("type").String() != protocol.TypeControlResponse {
		return
	}
	if req := s.byReq[m.Get("response.request_id").String()]; req != nil {
		req.Responses = append(req.Responses, Response{T: r.T, Msg: r.Msg, Result: json.RawMessage(m.Get("response.response").Raw)})
	}
}

// show files one surface event.
func (s *SessionState) show(ev surface.Event) {
	s.Surface = append(s.Surface, ev)
	if ev.Type == surface.EventQuestion && ev.QuestionID != "" && !contains(s.Questions, ev.QuestionID) {
		s.Questions = append(s.Questions, ev.QuestionID)
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// LatestFailures are the failures of the latest agent process (a resumed
// session's first agent may have died with the bridge).
func (s *SessionState) LatestFailures() []string { return s.Failures[s.failuresFrom:] }

// A Problem is one thing an agent reported wrong. Step, when not nil, is
// the scenario step whose expectation the answer broke; Skipped, that the
// person skipped that step's question (what reached the agent for it is
// then the skip's: SDK-SKIP-DENY's).
type Problem struct {
	Text    string
	Step    *scenarios.Step
	Skipped bool
	// Owner, when set, is the requirement the way the answer was broken
	// belongs to (answerOwner).
	Owner string
}

// answerOwner is the requirement that owns how the allow the agent got
// for a question the person answered differs from what they gave, where
// the way it differs tells; "" otherwise:
//   - SDK-ANSWER-SINGLE: an answer keyed by no question's text (q_0);
//   - SDK-ANSWER-ALL: an allow though the person answered only part of the
//     request (sent before every question was answered);
//   - SDK-ANSWER-MULTI: a multiSelect answer whose labels are all options,
//     joined, ordered or cut otherwise than the person picked them.
func answerOwner(req *Request, sent map[string][]string) string {
	if len(req.Responses) == 0 || len(sent) == 0 {
		return ""
	}
	res := gjson.ParseBytes(req.Responses[0].Result)
	if res.Get("behavior").String() != protocol.BehaviorAllow {
		return ""
	}
	answers := res.Get("updatedInput.answers")
	var qs []protocol.Question
	if err := json.Unmarshal([]byte(gjson.GetBytes(req.Input, "questions").Raw), &qs); err != nil {
		return ""
	}
	texts := map[string]bool{}
	for _, q := range qs {
		texts[q.Question] = true
	}
	owner := ""
	answers.ForEach(func(k, _ gjson.Result) bool {
		if !texts[k.String()] {
			owner = "SDK-ANSWER-SINGLE"
		}
		return owner == ""
	})
	if owner != "" {
		return owner
	}
	if len(sent) < len(qs) {
		return "SDK-ANSWER-ALL"
	}
	for _, q := range qs {
		labels, ok := sent[q.Question]
		if !q.MultiSelect || !ok {
			continue
		}
		got := answers.Get(gjson.Escape(q.Question))
		if got.Type != gjson.String || got.String() == protocol.JoinLabels(labels) {
			continue
		}
		all := true
		for _, l := range strings.FieldsFunc(got.String(), func(r rune) bool { return r == ',' }) {
			if !protocol.IsLabel(q, strings.TrimSpace(l)) {
				all = false
			}
		}
		if all {
			return "SDK-ANSWER-MULTI"
		}
	}
	return ""
}

// latestProblems are LatestFailures with their steps.
func (s *SessionState) latestProblems() []Problem {
	var out []Problem
	for i := s.failuresFrom; i < len(s.Failures); i++ {
		p := Problem{Text: s.Failures[i]}
		if n := s.failureSteps[i]; s.Scenario != nil && n >= 1 && n <= len(s.Scenario.Steps) {
			p.Step = &s.Scenario.Steps[n-1]
			for i, qid := range s.Questions {
				if s.askStep(qid) != p.Step {
					continue
				}
				if s.skipped[qid] {
					p.Skipped = true
				} else if i < len(s.Requests) {
					p.Owner = answerOwner(s.Requests[i], s.sent[qid])
				}
			}
		}
		out = append(out, p)
	}
	return out
}

// Current is the question the case works on: the last one awaited.
func (s *SessionState) Current() string { return s.current }

// RequestOf is the agent's request behind question qid: the n-th question
// the surfaces showed is the agent's n-th request.
func (s *SessionState) RequestOf(qid string) (*Request, bool) {
	for i, id := range s.Questions {
		if id == qid && i < len(s.Requests) {
			return s.Requests[i], true
		}
	}
	return nil, false
}

// nextQuestion is the first question connection conn shows that it has not
// consumed.
func (s *SessionState) nextQuestion(conn string) (string, bool) {
	for _, ev := range s.Surface {
		if ev.Conn == conn && ev.Type == surface.EventQuestion && !s.consumed[conn][ev.QuestionID] {
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
	for _, ev := range s.Surface {
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
	for _, ev := range s.Surface {
		if ev.Conn == conn && ev.Type == surface.EventTaken {
			return true
		}
	}
	return false
}

// Summary describes what the session saw, for failure messages: the
// agent's messages about questions and the surface events.
func (s *SessionState) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "session %s (bridge id %s, agent %s, scenario %s)\n", s.Alias, s.ID, s.AgentID, s.Scenario.Name)
	b.WriteString("  agent:\n")
	n := 0
	for _, r := range s.Agent {
		line := ""
		switch {
		case r.IsWire():
			t := gjson.GetBytes(r.Msg, "type").String()
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
	if len(s.Surface) == 0 {
		b.WriteString("    (nothing)\n")
	}
	for _, ev := range s.Surface {
		fmt.Fprintf(&b, "    [%s] %s %s %s\n", ev.Conn, ev.Type, ev.QuestionID, clip.String(ev.Reason, 200))
	}
	return b.String()
}

// List lists the sessions by alias.
func (st *State) List() []*SessionState {
	var out []*SessionState
	for _, s := range st.Sessions {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Alias < out[j].Alias })
	return out
}

// bound reports whether a session the harness started is bridge session id.
func (st *State) bound(id string) bool {
	for _, s := range st.Sessions {
		if s.ID == id {
			return true
		}
	}
	return false
}

// ResultText is a tool_result block's text: its content string, or its text
// blocks joined by newlines.
func ResultText(block json.RawMessage) string {
	c := gjson.GetBytes(block, "content")
	if !c.IsArray() {
		return c.String()
	}
	var texts []string
	c.ForEach(func(_, b gjson.Result) bool {
		if b.Get("type").String() == "text" {
			texts = append(texts, b.Get("text").String())
		}
		return true
	})
	return strings.Join(texts, "\n")
}
