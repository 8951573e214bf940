package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/askctl/askctl/internal/events"
	"github.com/askctl/askctl/protocol"
	"github.com/askctl/askctl/scenarios"
	"github.com/askctl/askctl/surface"
	"github.com/askctl/askctl/transcript"
)

// newTestEnv is an Env with state only: no bridge, no surface.
func newTestEnv() *Env {
	return &Env{bridge: &Bridge{}, changed: make(chan struct{}), st: State{sessions: map[string]*SessionState{}, byAgent: map[string]*SessionState{}}}
}

func TestAwaitVerdicts(t *testing.T) {
	e := newTestEnv()
	s := newSessionState("s1", "a1", nil, false)
	e.st.sessions["s1"], e.st.byAgent["a1"] = s, s

	// Met as soon as the record comes.
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		done <- e.Await(ctx, Turns("s1", 1))
	}()
	time.Sleep(10 * time.Millisecond)
	e.onRecord(transcript.Record{Session: "a1", Dir: transcript.FromCLI, Msg: []byte(`{"type":"result"}`)})
	if err := <-done; err != nil {
		t.Fatalf("met: %v", err)
	}

	// Unmeetable at once when the agent has exited: no waiting for the
	// deadline.
	code := 6
	e.onRecord(transcript.Record{Session: "a1", Event: transcript.EventExit, Code: &code, Text: "warming up\nno credentials in ~/.claude"})
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := e.Await(ctx, Turns("s1", 2))
	if err == nil || !strings.Contains(err.Error(), "can no longer happen") || !strings.Contains(err.Error(), "exited with status 6") ||
		!strings.Contains(err.Error(), "its stderr ended: warming up | no credentials in ~/.claude") {
		t.Fatalf("unmeetable: %v", err)
	}
	if time.Since(start) > time.Second {
		t.Errorf("an unmeetable expectation took %v to fail", time.Since(start))
	}

	// Unmet until the deadline: it says it was not met in time.
	ctx2, cancel2 := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel2()
	if err := e.Await(ctx2, SurfaceSaw("s1", "", surface.EventExpired, "q_1")); err == nil || !strings.Contains(err.Error(), "not met in time") {
		t.Errorf("unmet: %v", err)
	}

	// Hold of Not fails at once when the thing happens.
	go func() {
		time.Sleep(20 * time.Millisecond)
		e.mu.Lock()
		s.told = append(s.told, surface.Event{Type: surface.EventExpired, QuestionID: "q_1"})
		e.changedLocked()
		e.mu.Unlock()
	}()
	if err := e.Hold(context.Background(), 5*time.Second, Not(SurfaceSaw("s1", "", surface.EventExpired, "q_1"))); err == nil || !strings.Contains(err.Error(), "did not hold") {
		t.Errorf("hold: %v", err)
	}

	// AllOf is unmeetable when one part is; AnyOf met when one part is.
	if v, _ := AllOf(Turns("s1", 1), Turns("s1", 5)).Check(&e.st); v != Unmeetable {
		t.Errorf("AllOf: %v", v)
	}
	if v, _ := AnyOf(Turns("s1", 5), Turns("s1", 1)).Check(&e.st); v != Met {
		t.Errorf("AnyOf: %v", v)
	}
}

// TestCheckAwaitsTheAgentsVerdict: a check never reads the agent's
// failures before the agent has reacted to its last answer. An agent that
// rejects every answer, its failure record arriving a moment after the
// control_response (as it does over the events connection), is seen as
// failing every time, never passed in the gap.
func TestCheckAwaitsTheAgentsVerdict(t *testing.T) {
	for i := 0; i < 200; i++ {
		e := newTestEnv()
		s := newSessionState("s1", "a1", nil, false)
		e.st.sessions["s1"], e.st.byAgent["a1"] = s, s
		e.onRecord(transcript.Record{Session: "a1", Dir: transcript.FromCLI, Msg: []byte(`{"type":"control_request","request_id":"r1","request":{"subtype":"can_use_tool","tool_name":"AskUserQuestion","tool_use_id":"tu1","input":{"questions":[]}}}`)})
		e.onRecord(transcript.Record{Session: "a1", Dir: transcript.ToCLI, Msg: []byte(`{"type":"control_response","response":{"subtype":"success","request_id":"r1","response":{"behavior":"allow","updatedInput":{}}}}`)})
		go func() {
			if i%2 == 0 {
				time.Sleep(time.Duration(i%7) * time.Millisecond)
			}
			no := false
			e.onRecord(transcript.Record{Session: "a1", Event: transcript.EventExpect, OK: &no, Text: "answer … want …"})
		}()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		problems, err := e.Session("s1").Check(ctx)
		cancel()
		if err != nil || len(problems) == 0 {
			t.Fatalf("run %d: the agent rejected the answer, and the check saw %v (err %v)", i, problems, err)
		}
	}
}

// TestRecordsAreTypedOnArrival: the facts expectations read are built as
// the records come: requests with their responses and tool_results, turns,
// the exit, and a resumed process's turns.
func TestRecordsAreTypedOnArrival(t *testing.T) {
	e := newTestEnv()
	s := newSessionState("s1", "a1", nil, false)
	e.st.sessions["s1"], e.st.byAgent["a1"] = s, s
	for _, r := range []transcript.Record{
		{Dir: transcript.FromCLI, Msg: []byte(`{"type":"control_request","request_id":"r1","request":{"subtype":"can_use_tool","tool_name":"AskUserQuestion","tool_use_id":"tu1","input":{"questions":[{"question":"Q?"}]}}}`)},
		{Dir: transcript.FromCLI, Msg: []byte(`{"type":"control_request","request_id":"r2","request":{"subtype":"can_use_tool","tool_name":"Bash","tool_use_id":"tu2","input":{}}}`)},
		{Dir: transcript.ToCLI, Msg: []byte(`{"type":"control_response","response":{"subtype":"success","request_id":"r1","response":{"behavior":"allow"}}}`)},
		{Dir: transcript.FromCLI, Msg: []byte(`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"tu1","content":"User has answered"}]}}`)},
		{Dir: transcript.FromCLI, Msg: []byte(`{"type":"result"}`)},
		{Event: "hello", Msg: []byte(`{"resume":"abc"}`)},
		{Dir: transcript.FromCLI, Msg: []byte(`{"type":"result"}`)},
	} {
		r.Session = "a1"
		e.onRecord(r)
	}
	if len(s.requests) != 1 || s.requests[0].ID != "r1" || len(s.requests[0].Responses) != 1 || !s.requests[0].Verdict || toolResultText(s.requests[0].ToolResult) != "User has answered" {
		t.Errorf("requests: %+v", s.requests)
	}
	if s.turns != 2 || !s.resumed || s.resumedTurns != 1 {
		t.Errorf("turns %d, resumed %v with %d turns", s.turns, s.resumed, s.resumedTurns)
	}
	if v, _ := Verdicts("s1").Check(&e.st); v != Met {
		t.Errorf("Verdicts: %v", v)
	}
}

// TestScenarioAnswers: the scenario's user part answers the n-th question
// shown; a step with no user part, or a question no step matches, is an
// error that says so.
func TestScenarioAnswers(t *testing.T) {
	sc, err := scenarios.Parse("t.txtar", []byte("Two asks.\n-- scenario.json --\n{\"name\":\"t\",\"route\":\"sdk\"}\n-- steps.jsonl --\n{\"prompt\":\"Go.\"}\n"+
		`{"ask":{"questions":[{"question":"A?","header":"A","options":[{"label":"x","description":"x"},{"label":"y","description":"y"}],"multiSelect":false}]},"user":{"answers":{"A?":"y"}}}`+"\n"+
		`{"ask":{"questions":[{"question":"B?","header":"B","options":[{"label":"x","description":"x"},{"label":"y","description":"y"}],"multiSelect":false}]},"expect":{"behavior":"deny"}}`+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	e := newTestEnv()
	s := newSessionState("s1", "a1", sc, false)
	s.questions = []string{"q_1", "q_2"}
	e.st.sessions["s1"], e.st.byAgent["a1"] = s, s
	h := e.Session("s1")
	if got, err := h.ScenarioAnswers("q_1"); err != nil || len(got["A?"]) != 1 || got["A?"][0] != "y" {
		t.Errorf("q_1: %v, %v", got, err)
	}
	if _, err := h.ScenarioAnswers("q_2"); err == nil || !strings.Contains(err.Error(), "no user part") {
		t.Errorf("q_2 (no user part): %v", err)
	}
	if _, err := h.ScenarioAnswers("q_9"); err == nil || !strings.Contains(err.Error(), "no ask step") {
		t.Errorf("q_9 (shown by no step): %v", err)
	}
}

// TestVerdictsWaitForTakenAnswers: an answer the bridge took is not judged
// until the agent has it. Before, Verdicts was met while the answer was on
// its way (no response yet, so nothing to react to), and a wrong answer
// passed (seen in askctl bench: 1 of 4 wrong answers counted ok).
func TestVerdictsWaitForTakenAnswers(t *testing.T) {
	e := newTestEnv()
	s := newSessionState("s1", "a1", nil, false)
	e.st.sessions["s1"], e.st.byAgent["a1"] = s, s
	e.onRecord(transcript.Record{Session: "a1", Dir: transcript.FromCLI, Msg: []byte(`{"type":"control_request","request_id":"r1","request":{"subtype":"can_use_tool","tool_name":"AskUserQuestion","input":{"questions":[]}}}`)})
	e.mu.Lock()
	s.questions = append(s.questions, "q_1")
	s.answered["q_1"] = time.Now()
	e.mu.Unlock()

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := e.Await(ctx, Verdicts("s1")); err == nil {
		t.Fatal("Verdicts met before the agent received the answer the bridge took")
	}
	// The answer arrives, and the agent judges it.
	e.onRecord(transcript.Record{Session: "a1", Dir: transcript.ToCLI, Msg: []byte(`{"type":"control_response","response":{"subtype":"success","request_id":"r1","response":{"behavior":"allow","updatedInput":{}}}}`)})
	e.onRecord(transcript.Record{Session: "a1", Event: transcript.EventError, Kind: "expectation", Text: "wrong answer"})
	ctx2, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel2()
	problems, err := e.Session("s1").Check(ctx2)
	if err != nil || len(problems) != 1 || !strings.Contains(problems[0], "wrong answer") {
		t.Errorf("Check = %v, %v; want the agent's failure", problems, err)
	}

	// An agent that exits without the answer: Check says so.
	s2 := newSessionState("s2", "a2", nil, false)
	e.st.sessions["s2"], e.st.byAgent["a2"] = s2, s2
	e.onRecord(transcript.Record{Session: "a2", Dir: transcript.FromCLI, Msg: []byte(`{"type":"control_request","request_id":"r2","request":{"subtype":"can_use_tool","tool_name":"AskUserQuestion","input":{"questions":[]}}}`)})
	e.mu.Lock()
	s2.questions = append(s2.questions, "q_2")
	s2.answered["q_2"] = time.Now()
	e.mu.Unlock()
	code := 0
	e.onRecord(transcript.Record{Session: "a2", Event: transcript.EventExit, Code: &code})
	problems, err = e.Session("s2").Check(ctx2)
	if err != nil || len(problems) != 1 || !strings.Contains(problems[0], "took the answer to q_2, and the agent exited without receiving it") {
		t.Errorf("Check = %v, %v", problems, err)
	}
}

// TestNewQuestionAnsweredBehindSurfaces: a bridge that answers the agent
// itself (a common shortcut) shows nothing; once the agent has exited, the
// wait for a question fails at once, and says what the agent got and said.
// An agent that died waiting, or one a surface answered, is still waited
// for: a bridge may show its question yet.
func TestNewQuestionAnsweredBehindSurfaces(t *testing.T) {
	ask := func(e *Env, agent, req string) {
		e.onRecord(transcript.Record{Session: agent, Dir: transcript.FromCLI, Msg: []byte(`{"type":"control_request","request_id":"` + req + `","request":{"subtype":"can_use_tool","tool_name":"AskUserQuestion","input":{"questions":[]}}}`)})
	}
	respond := func(e *Env, agent, req string) {
		e.onRecord(transcript.Record{Session: agent, Dir: transcript.ToCLI, Msg: []byte(`{"type":"control_response","response":{"subtype":"success","request_id":"` + req + `","response":{"behavior":"allow","updatedInput":{"questions":[],"answers":{"Which database?":"SQLite"}}}}}`)})
	}
	exit := func(e *Env, agent string, code int) {
		e.onRecord(transcript.Record{Session: agent, Event: transcript.EventExit, Code: &code})
	}
	e := newTestEnv()
	for _, a := range []string{"s1", "s2", "s3"} {
		s := newSessionState(a, "a"+a[1:], nil, false)
		e.st.sessions[a], e.st.byAgent["a"+a[1:]] = s, s
	}

	// s1: answered by the bridge itself; the agent finds it wrong and exits 4.
	ask(e, "a1", "r1")
	respond(e, "a1", "r1")
	e.onRecord(transcript.Record{Session: "a1", Event: transcript.EventError, Kind: "expectation", Text: "step 3: answer is \"SQLite\", want \"Postgres\""})
	exit(e, "a1", 4)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	err := e.Await(ctx, NewQuestion("s1", "main"))
	if err == nil || ctx.Err() != nil {
		t.Fatalf("Await = %v after %v; want Unmeetable at once", err, time.Since(start))
	}
	for _, want := range []string{"can no longer happen", "answered where no surface answered", "status 4", `allow with the answers {"Which database?":"SQLite"}`, `want "Postgres"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the reason does not say %q:\n%v", want, err)
		}
	}

	// s2: the agent died waiting; s3: a surface answered. Both wait.
	ask(e, "a2", "r2")
	exit(e, "a2", 1)
	ask(e, "a3", "r3")
	e.mu.Lock()
	e.st.sessions["s3"].questions = append(e.st.sessions["s3"].questions, "q_3")
	e.st.sessions["s3"].answered["q_3"] = time.Now()
	e.mu.Unlock()
	respond(e, "a3", "r3")
	exit(e, "a3", 0)
	for _, a := range []string{"s2", "s3"} {
		short, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		err := e.Await(short, NewQuestion(a, "main"))
		cancel()
		if err == nil || strings.Contains(err.Error(), "Unmeetable") {
			t.Errorf("session %s: Await = %v; want it still waiting (its deadline)", a, err)
		}
	}
}

// plainConn is a connection that can do only what every Conn does.
type plainConn struct{}

func (plainConn) Pending(context.Context) ([]surface.Pending, error) { return nil, nil }
func (plainConn) Sync(context.Context) error                         { return nil }
func (plainConn) Answer(context.Context, string, map[string][]string) (surface.Ack, error) {
	return surface.Ack{}, nil
}
func (plainConn) Skip(context.Context, string, string) error    { return nil }
func (plainConn) SendRaw(context.Context, string, []byte) error { return nil }
func (plainConn) Close() error                                  { return nil }

// TestPermitUnsupportedAtOnce: permit on a surface that cannot answer
// permission prompts is unsupported at once (a SKIP in the suite), not a
// wait for a prompt that ends in a FAIL with no prompt id.
func TestPermitUnsupportedAtOnce(t *testing.T) {
	e := newTestEnv()
	s := newSessionState("s1", "a1", nil, false)
	e.st.driver("s1").conns["main"] = plainConn{}
	e.st.sessions["s1"], e.st.byAgent["a1"] = s, s
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := e.Session("s1").Permit(ctx, "main", true, "")
	var u *surface.Unsupported
	if !errors.As(err, &u) || ctx.Err() != nil {
		t.Fatalf("Permit = %v (context %v); want surface.Unsupported at once", err, ctx.Err())
	}
}

// TestAllowedFailsOnExpiry: a wait for the answer to reach the agent fails
// at once when the question expired instead, saying what the agent got.
func TestAllowedFailsOnExpiry(t *testing.T) {
	e := newTestEnv()
	s := newSessionState("s1", "a1", nil, false)
	e.st.sessions["s1"], e.st.byAgent["a1"] = s, s
	e.onRecord(transcript.Record{Session: "a1", Dir: transcript.FromCLI, Msg: []byte(`{"type":"control_request","request_id":"r1","request":{"subtype":"can_use_tool","tool_name":"AskUserQuestion","input":{"questions":[]}}}`)})
	e.onSurface(s, "main", surface.Event{Type: surface.EventQuestion, QuestionID: "q_1", T: time.Now()})
	e.onRecord(transcript.Record{Session: "a1", Dir: transcript.ToCLI, Msg: []byte(`{"type":"control_response","response":{"subtype":"success","request_id":"r1","response":{"behavior":"deny","message":"The user did not answer within 2s: the question timed out."}}}`)})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- e.Await(ctx, Allowed("s1", "q_1")) }()
	e.onSurface(s, "main", surface.Event{Type: surface.EventExpired, QuestionID: "q_1", T: time.Now()})
	err := <-done
	if err == nil || ctx.Err() != nil || !strings.Contains(err.Error(), "question q_1 expired: the agent of session s1 got deny") {
		t.Fatalf("Await(Allowed) = %v, want it to fail at once, saying the question expired", err)
	}
}

// TestCardsAreOneRequest: a request shown one card at a time (cards 2..N
// with the request's one question id) is shown whole: every card's
// question, once each, in order, a replayed card not counted twice.
func TestCardsAreOneRequest(t *testing.T) {
	s := newSessionState("s1", "a1", nil, false)
	q := func(text string) protocol.Question { return protocol.Question{Question: text, Header: "H"} }
	for _, ev := range []surface.Event{
		{Conn: "main", Type: surface.EventQuestion, QuestionID: "q_1", Questions: []protocol.Question{q("First?")}},
		{Conn: "main", Type: surface.EventQuestion, QuestionID: "q_1", Questions: []protocol.Question{q("Second?")}},
		{Conn: "main", Type: surface.EventQuestion, QuestionID: "q_1", Questions: []protocol.Question{q("First?")}}, // replayed
		{Conn: "other", Type: surface.EventQuestion, QuestionID: "q_1", Questions: []protocol.Question{q("Third?")}},
	} {
		s.show(ev)
	}
	got, ok := s.shown("main", "q_1")
	if !ok || len(got) != 2 || got[0].Question != "First?" || got[1].Question != "Second?" {
		t.Errorf("shown on main: %+v, want the two cards it showed", got)
	}
	if got, _ := s.shown("", "q_1"); len(got) != 3 {
		t.Errorf("shown anywhere: %+v, want three", got)
	}
}

func toolResultText(block []byte) string {
	text, _ := protocol.ToolResult(block)
	return text
}

// TestAgentWaits: a wait that runs out says what the agent waits on: the
// requests with no response, and a line past a line reader's default
// bound after which it wrote nothing.
func TestAgentWaits(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	from := func(ms int, msg string) transcript.Record {
		return transcript.Record{T: t0.Add(time.Duration(ms) * time.Millisecond), Dir: transcript.FromCLI, Msg: json.RawMessage(msg)}
	}
	to := func(msg string) transcript.Record {
		return transcript.Record{T: t0, Dir: transcript.ToCLI, Msg: json.RawMessage(msg)}
	}
	askReq := func(id, tool string) string {
		return fmt.Sprintf(`{"type":"control_request","request_id":%q,"request":{"subtype":"can_use_tool","tool_name":%q,"input":{}}}`, id, tool)
	}
	response := func(id string) string {
		return fmt.Sprintf(`{"type":"control_response","response":{"subtype":"success","request_id":%q,"response":{"behavior":"allow","updatedInput":{}}}}`, id)
	}
	long := `{"type":"assistant","message":{"content":[{"type":"text","text":"` + strings.Repeat("x", 70<<10) + `"}]}}`
	code := 0
	for _, c := range []struct {
		name    string
		records []transcript.Record
		exited  bool
		want    []string // "" for no words
	}{
		{"nothing asked", []transcript.Record{from(0, `{"type":"system","subtype":"init"}`)}, false, nil},
		{"answered", []transcript.Record{from(0, askReq("r1", "AskUserQuestion")), to(response("r1"))}, false, nil},
		{"two unanswered, one answered", []transcript.Record{from(0, askReq("r1", "Write")), from(500, askReq("r2", "AskUserQuestion")), from(600, askReq("r3", "Read")), to(response("r3"))}, false,
			[]string{"session s1", "its Write request r1, for 2.0s", "its AskUserQuestion request r2, for 1.5s"}},
		{"withdrawn", []transcript.Record{from(0, askReq("r1", "AskUserQuestion")), from(100, `{"type":"control_cancel_request","request_id":"r1"}`)}, false, nil},
		{"exited", []transcript.Record{from(0, askReq("r1", "AskUserQuestion"))}, true, nil},
		{"after a long line", []transcript.Record{from(0, askReq("r1", "Read")), to(response("r1")), from(1000, long)}, false,
			[]string{"wrote nothing after its line of 71 KB (of type assistant, 1.0s before)"}},
		{"a long line, then a request", []transcript.Record{from(0, long), from(1000, askReq("r1", "AskUserQuestion"))}, false,
			[]string{"its AskUserQuestion request r1, for 1.0s", "it wrote a line of 71 KB before"}},
		{"a request, then a long line", []transcript.Record{from(0, askReq("r1", "AskUserQuestion")), from(1000, long)}, false,
			[]string{"its AskUserQuestion request r1, for 2.0s"}},
		{"a long result, the turn over", []transcript.Record{from(1000, `{"type":"result","result":"`+strings.Repeat("x", 70<<10)+`"}`)}, false, nil},
		{"a request of the agent before a resume", []transcript.Record{from(0, askReq("r1", "AskUserQuestion")),
			{T: t0.Add(time.Second), Event: events.EventHello}, from(1500, `{"type":"system","subtype":"init"}`)}, false, nil},
	} {
		s := newSessionState("s1", "", nil, false)
		for _, r := range c.records {
			s.add(r)
		}
		if c.exited {
			s.exit = &code
		}
		got := s.agentWaits(t0.Add(2 * time.Second))
		if len(c.want) == 0 && got != "" {
			t.Errorf("%s: %q, want nothing", c.name, got)
		}
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %q, want it to say %q", c.name, got, w)
			}
		}
		if strings.Contains(got, "KB") != strings.Contains(strings.Join(c.want, " "), "KB") {
			t.Errorf("%s: %q: a line is named only past 64 KiB", c.name, got)
		}
		if strings.Contains(got, "r3") {
			t.Errorf("%s: %q names a request that had its response", c.name, got)
		}
	}
}

// TestSharedAlias: a combination of expectations about one session is
// about that session (its wait that runs out says what the agent waits
// on); one about several sessions, or none, is about none.
func TestSharedAlias(t *testing.T) {
	s1a, s1b, s2 := NewQuestion("s1", "main"), NewQuestion("s1", "c2"), NewQuestion("s2", "main")
	for _, c := range []struct {
		name string
		exp  Expectation
		want string
	}{
		{"all of one session's", AllOf(s1a, s1b), "s1"},
		{"any of one session's", AnyOf(s1a, s1b), "s1"},
		{"all of two sessions'", AllOf(s1a, s2), ""},
		{"with one of no session", AllOf(s1a, OneIDPerRequest()), ""},
		{"none", AllOf(), ""},
	} {
		if c.exp.alias != c.want {
			t.Errorf("%s: alias %q, want %q", c.name, c.exp.alias, c.want)
		}
	}
}

// TestResumedSaysWhatTheAgentDid: a wait on a resumed agent that runs out
// says what the session's latest agent process did meanwhile, not only
// that it was not met.
func TestResumedSaysWhatTheAgentDid(t *testing.T) {
	e := newTestEnv()
	s := newSessionState("c3", "a1", nil, false)
	e.st.sessions["c3"], e.st.byAgent["a1"] = s, s
	await := func() string {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
		defer cancel()
		err := e.Await(ctx, Resumed("c3"))
		if err == nil {
			t.Fatal("met with no resumed agent")
		}
		return err.Error()
	}
	if got := await(); !strings.Contains(got, "so far no agent process of session c3 said hello") {
		t.Errorf("before any hello: %s", got)
	}
	e.onRecord(transcript.Record{Session: "a1", Event: events.EventHello, Msg: []byte(`{"resume":"sess-1"}`), T: time.Now()})
	if got := await(); !strings.Contains(got, "its agent resumed with --resume said hello") || !strings.Contains(got, "has written nothing since, ended 0 turns") {
		t.Errorf("resumed, silent: %s", got)
	}
	e.onRecord(transcript.Record{Session: "a1", Event: transcript.EventNote, Text: "the CLI is waiting on the session's HOME lock", T: time.Now()})
	e.onRecord(transcript.Record{Session: "a1", Dir: transcript.FromCLI, Msg: []byte(`{"type":"system","subtype":"init"}`), T: time.Now()})
	if got := await(); !strings.Contains(got, "has written 1 lines since, the last of type system") || !strings.Contains(got, "the last note on it") || !strings.Contains(got, "HOME lock") {
		t.Errorf("resumed, one line: %s", got)
	}
}

// TestAfterStartWaitsForTheAgent: a wait under AfterStart does not run out
// while the session's agent has not started; it runs d from its start,
// and a wait that the start limit ends says the agent had not started.
func TestAfterStartWaitsForTheAgent(t *testing.T) {
	e := newTestEnv()
	s := newSessionState("s1", "a1", nil, false)
	e.st.sessions["s1"], e.st.byAgent["a1"] = s, s
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- e.Await(AfterStart(ctx, 20*time.Millisecond), Turns("s1", 1)) }()
	time.Sleep(200 * time.Millisecond) // ten times the wait: it must still be waiting
	select {
	case err := <-done:
		t.Fatalf("the wait ran out before the agent started: %v", err)
	default:
	}
	e.onRecord(transcript.Record{Session: "a1", Event: events.EventHello, Msg: []byte(`{}`), T: time.Now()})
	if err := <-done; err == nil || !strings.Contains(err.Error(), "not met in time") {
		t.Fatalf("after the start: %v", err)
	}

	// Never started: the context's deadline ends it, and it says so.
	s2 := newSessionState("s2", "a2", nil, false)
	e.st.sessions["s2"], e.st.byAgent["a2"] = s2, s2
	ctx2, cancel2 := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel2()
	err := e.Await(AfterStart(ctx2, 10*time.Millisecond), Turns("s2", 1))
	if err == nil || !strings.Contains(err.Error(), "the session's agent had not started: no agent process of session s2 said hello") {
		t.Fatalf("never started: %v", err)
	}
}
