package harness

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/askctl/askctl/protocol"
	"github.com/askctl/askctl/scenarios"
	"github.com/askctl/askctl/surface"
)

// Session is a handle on one session of an Env, by alias: what a test does
// as the person (answer, skip, list), what it waits for (the next question,
// the agent's verdict), and what it reads back (the response the agent got,
// what the surface showed). It keeps the session's current question: the
// one the last AwaitQuestion returned, which the other methods work on when
// given no id. Every method returns an error; none calls t.Fatal.
type Session struct {
	e     *Env
	alias string
}

// Session returns the handle of alias's session (started or not yet).
func (e *Env) Session(alias string) *Session { return &Session{e: e, alias: alias} }

// Alias is the session's name in the case.
func (s *Session) Alias() string { return s.alias }

// read runs f on the session's state, locked; an error when there is no
// such session.
func (s *Session) read(f func(*SessionState)) error {
	var found bool
	s.e.Read(func(st *State) {
		if ss := st.sessions[s.alias]; ss != nil {
			found = true
			f(ss)
		}
	})
	if !found {
		return fmt.Errorf("no session %q: start it first", s.alias)
	}
	return nil
}

// readCur is read with the question the case works on (the driver's
// current question).
func (s *Session) readCur(f func(ss *SessionState, cur string)) error {
	return s.read(func(ss *SessionState) { f(ss, s.e.st.driver(s.alias).current) })
}

// Current is the question the session works on: the last one awaited, ""
// before any.
func (s *Session) Current() string {
	var q string
	s.e.Read(func(st *State) { q = st.driver(s.alias).current })
	return q
}

// IsMCP reports whether the session is route MCP (its requests are ask_user
// tool calls).
func (s *Session) IsMCP() bool {
	var mcp bool
	_ = s.read(func(ss *SessionState) { mcp = ss.mcp })
	return mcp
}

// Summary is what the session saw, for failure messages.
func (s *Session) Summary() string {
	var out string
	_ = s.read(func(ss *SessionState) { out = ss.Summary() })
	return out
}

// ErrNotSame is AwaitQuestion's error when same was asked and another
// question showed.
var ErrNotSame = errors.New("not the same question")

// AwaitQuestion waits until connection conn shows a question it has not
// handled yet, makes it the current one, and waits for the agent's own
// record of the request behind it (it travels apart from the surface's
// event), so what follows can pair the two. With same, the question must
// be the current one again (a replay after a reconnect keeps its id).
func (s *Session) AwaitQuestion(ctx context.Context, conn string, same bool) (string, error) {
	ctx = sharedWait(ctx)
	if err := s.e.Await(ctx, NewQuestion(s.alias, conn)); err != nil {
		return "", err
	}
	// Choose and consume in one step: two waits on one connection never
	// take the same question.
	var qid, prev string
	var n int
	s.e.mu.Lock()
	ss := s.e.st.sessions[s.alias]
	ok := false
	d := s.e.st.driver(s.alias)
	if ss != nil {
		qid, ok = ss.nextQuestion(conn, d.consumed[conn])
		prev = d.current
	}
	if ok && (!same || qid == prev) {
		if d.consumed[conn] == nil {
			d.consumed[conn] = map[string]bool{}
		}
		d.consumed[conn][qid] = true
		d.current = qid
		n = slices.Index(ss.questions, qid) + 1
		s.e.changedLocked()
	}
	s.e.mu.Unlock()
	switch {
	case !ok:
		return "", fmt.Errorf("connection %s of session %s shows no new question (another wait took it)", conn, s.alias)
	case same && qid != prev:
		return qid, fmt.Errorf("%w: connection %s shows question %s, want the same id as before, %s", ErrNotSame, conn, qid, prev)
	}
	if err := s.e.Await(ctx, Asked(s.alias, n)); err != nil {
		return qid, fmt.Errorf("the surface shows question %s, but the agent did not ask %d question(s): %w", qid, n, err)
	}
	// Calls of one model response are pending together, and a question
	// may show before the harness reads the agent's record of its own
	// request: a moment for the request that asks its texts (a surface
	// that shows other texts is matched by order after it).
	wctx, cancel := context.WithTimeout(ctx, textMatchGrace)
	defer cancel()
	_ = s.e.Await(wctx, onSession(s.alias, "the agent's request behind question "+qid, func(ss *SessionState) (Verdict, string) {
		if ss.matchedByText(qid) {
			return Met, ""
		}
		return Unmet, ""
	}))
	return qid, nil
}

// textMatchGrace bounds AwaitQuestion's wait for the agent's request that
// asks the texts a question shows.
const textMatchGrace = 300 * time.Millisecond

// SelectQuestion waits until connection conn has shown a question that
// asks text, and makes it the current one: of several pending at once (the
// calls of one model response), the one a case goes on with. It consumes
// nothing: the question was awaited already, or is left to AwaitQuestion.
func (s *Session) SelectQuestion(ctx context.Context, conn, text string) (string, error) {
	shown := onSession(s.alias, fmt.Sprintf("connection %s of session %s shows a question that asks %q", conn, s.alias, text), func(ss *SessionState) (Verdict, string) {
		if ss.shownOn(conn, text) != "" {
			return Met, ""
		}
		return Unmet, ""
	})
	if err := s.e.Await(ctx, shown); err != nil {
		return "", err
	}
	s.e.mu.Lock()
	defer s.e.mu.Unlock()
	qid := s.e.st.sessions[s.alias].shownOn(conn, text)
	s.e.st.driver(s.alias).current = qid
	s.e.changedLocked()
	return qid, nil
}

// shownOn is the latest question connection conn was shown that asks text.
func (ss *SessionState) shownOn(conn, text string) string {
	var qid string
	for _, ev := range ss.told {
		if ev.Type == surface.EventQuestion && ev.Conn == conn && slices.Contains(questionTexts(ev.Questions), text) {
			qid = ev.QuestionID
		}
	}
	return qid
}

// orCurrent is qid, or the current question when qid is "".
func (s *Session) orCurrent(qid string) (string, error) {
	if qid != "" {
		return qid, nil
	}
	if qid = s.Current(); qid == "" {
		return "", errors.New("no current question (await a question first)")
	}
	return qid, nil
}

// QuestionAsking is the id of the latest question shown of alias's
// session that asks text: with several pending at once (the calls of one
// model response), which one a case means.
func (s *Session) QuestionAsking(text string) (string, error) {
	var qid string
	err := s.read(func(ss *SessionState) {
		for _, id := range ss.questions {
			if slices.Contains(ss.shownTexts[id], text) {
				qid = id
			}
		}
	})
	if err == nil && qid == "" {
		err = fmt.Errorf("no question shown of session %s asks %q", s.alias, text)
	}
	return qid, err
}

// Answer answers question qid ("" the current one) over connection conn:
// question text → the labels in order, or one free text. A connection the
// bridge closed after telling it of a takeover counts as refused (code
// session_taken): closing it is a fine way to refuse its answers.
func (s *Session) Answer(ctx context.Context, conn, qid string, answers map[string][]string) (surface.Ack, error) {
	qid, err := s.orCurrent(qid)
	if err != nil {
		return surface.Ack{}, err
	}
	ack, err := s.e.Answer(ctx, s.alias, conn, qid, answers)
	return ack, s.closedAfterTakeover(conn, err)
}

// AnswerCrashing is Answer to a bridge armed to crash as it takes the
// answer: it may die before it replies, and what the person gave is what
// the agent's answer is held to all the same (a bridge that wrote it to
// the agent before it died).
func (s *Session) AnswerCrashing(ctx context.Context, conn, qid string, answers map[string][]string) (surface.Ack, error) {
	qid, err := s.orCurrent(qid)
	if err != nil {
		return surface.Ack{}, err
	}
	ack, err := s.Answer(ctx, conn, qid, answers)
	var rj *surface.Rejected
	if err != nil && !errors.As(err, &rj) && !errors.Is(err, surface.ErrIgnored) {
		// No reply, the bridge gone (a refusal is no answer taken).
		if st, _, cerr := s.e.conn(s.alias, conn); cerr == nil {
			s.e.gave(st, qid, answers)
		}
	}
	return ack, err
}

// Skip skips question qid ("" the current one) over connection conn with a
// reason.
func (s *Session) Skip(ctx context.Context, conn, qid, reason string) error {
	qid, err := s.orCurrent(qid)
	if err != nil {
		return err
	}
	return s.closedAfterTakeover(conn, s.e.Skip(ctx, s.alias, conn, qid, reason))
}

// SendRaw sends raw bytes where an answer to the current question goes.
func (s *Session) SendRaw(ctx context.Context, conn string, raw []byte) error {
	return s.e.SendRaw(ctx, s.alias, conn, s.Current(), raw)
}

// Permit waits until connection conn shows another tool's permission
// prompt (capability permissions) not answered yet, then allows or denies
// it, and returns its id. A surface with no permit operation gives an
// *surface.Unsupported.
func (s *Session) Permit(ctx context.Context, conn string, allow bool, reason string) (string, error) {
	// What the surface cannot do is known before any wait: a surface with
	// no way to answer a permission prompt is unsupported at once, not a
	// prompt that never showed.
	if _, c, err := s.e.conn(s.alias, conn); err != nil {
		return "", err
	} else if _, ok := c.(surface.Permitter); !ok {
		return "", &surface.Unsupported{Op: "permit", Message: "the adapter cannot answer other tools' permission prompts"}
	} else if p, ok := c.(surface.Prober); ok {
		// An adapter that may lack it (exec) is asked first.
		var un *surface.Unsupported
		if err := p.Probe(ctx, "permit"); errors.As(err, &un) {
			return "", un
		}
	}
	var id string
	next := func(ss *SessionState) string {
		for _, ev := range ss.told {
			if ev.Conn == conn && ev.Type == surface.EventPermission && ev.QuestionID != "" && !ss.permitted[ev.QuestionID] {
				return ev.QuestionID
			}
		}
		return ""
	}
	exp := onSession(s.alias, fmt.Sprintf("connection %s of session %s shows another tool's permission prompt", conn, s.alias), func(ss *SessionState) (Verdict, string) {
		if next(ss) != "" {
			return Met, ""
		}
		if why, closed := ss.closed(conn); closed {
			return Unmeetable, why
		}
		return exited(ss)
	})
	if err := s.e.Await(ctx, exp); err != nil {
		return "", err
	}
	s.e.mu.Lock()
	if ss := s.e.st.sessions[s.alias]; ss != nil {
		if id = next(ss); id != "" {
			if ss.permitted == nil {
				ss.permitted = map[string]bool{}
			}
			ss.permitted[id] = true
		}
	}
	s.e.mu.Unlock()
	if id == "" {
		return "", fmt.Errorf("connection %s of session %s shows no new permission prompt (another wait took it)", conn, s.alias)
	}
	return id, s.e.Permit(ctx, s.alias, conn, id, allow, reason)
}

// Pending lists what connection conn shows as waiting.
func (s *Session) Pending(ctx context.Context, conn string) ([]surface.Pending, error) {
	return s.e.Pending(ctx, s.alias, conn)
}

func (s *Session) closedAfterTakeover(conn string, err error) error {
	var rj *surface.Rejected
	if err == nil || errors.As(err, &rj) {
		return err
	}
	taken := false
	_ = s.read(func(ss *SessionState) { taken = ss.taken(conn) })
	if taken {
		return &surface.Rejected{Code: "session_taken", Message: "the bridge closed this connection after another took the session over (" + err.Error() + ")"}
	}
	return err
}

// askStep is the scenario's step behind question qid: the n-th question
// the surfaces showed is the scenario's n-th ask (or mcp) step.
func (ss *SessionState) askStep(qid string) *scenarios.Step {
	idx := ss.reqIndex(qid)
	if idx < 0 {
		idx = slices.Index(ss.questions, qid)
	}
	n := 0
	for i := range ss.scenario.Steps {
		if st := &ss.scenario.Steps[i]; st.Kind == scenarios.KindAsk || st.Kind == scenarios.KindMCP {
			if n == idx {
				return st
			}
			n++
		}
	}
	return nil
}

// ScenarioAnswers are the scenario's user part for question qid ("" the
// current one), as labels: what the person answers when the case says no
// more.
func (s *Session) ScenarioAnswers(qid string) (map[string][]string, error) {
	qid, err := s.orCurrent(qid)
	if err != nil {
		return nil, err
	}
	var out map[string][]string
	var why error
	if err := s.read(func(ss *SessionState) {
		st := ss.askStep(qid)
		switch {
		case st == nil:
			why = fmt.Errorf("question %s: no ask step of scenario %s matches it", qid, ss.scenario.Name)
		case st.User == nil:
			why = fmt.Errorf("step %d of scenario %s has no user part: give the answers", st.N, ss.scenario.Name)
		default:
			out = map[string][]string{}
			for q, a := range st.User.Answers {
				out[q] = a.Labels
			}
		}
	}); err != nil {
		return nil, err
	}
	return out, why
}

// SkipReason is the scenario's reason for skipping question qid ("" the
// current one), or def when it gives none.
func (s *Session) SkipReason(qid, def string) string {
	qid, _ = s.orCurrent(qid)
	reason := def
	_ = s.read(func(ss *SessionState) {
		if st := ss.askStep(qid); st != nil && st.User != nil && st.User.Skip != nil {
			reason = *st.User.Skip
		}
	})
	return reason
}

// Shown is the current question as any connection showed it.
func (s *Session) Shown() ([]protocol.Question, bool) {
	var qs []protocol.Question
	var ok bool
	_ = s.readCur(func(ss *SessionState, cur string) { qs, ok = ss.shown("", cur) })
	return qs, ok
}

// Response is the first control_response the agent received for the
// current question, and how long after its request it came.
func (s *Session) Response() (Response, bool, error) {
	var r Response
	var req *Request
	var ok bool
	if err := s.readCur(func(ss *SessionState, cur string) {
		if req, ok = ss.requestOf(cur); ok && len(req.Responses) > 0 {
			r = req.Responses[0]
		}
	}); err != nil {
		return Response{}, false, err
	}
	if !ok || r.Msg == nil {
		return Response{}, false, nil
	}
	return r, true, nil
}

// AskedAt is when the agent asked question qid (its can_use_tool
// request), if the harness has seen the request.
func (s *Session) AskedAt(qid string) (time.Time, bool) {
	var at time.Time
	var ok bool
	_ = s.read(func(ss *SessionState) {
		var req *Request
		if req, ok = ss.requestOf(qid); ok {
			at = req.T
		}
	})
	return at, ok
}

// OpenedAt is when connection conn of the session last opened, if it did.
func (s *Session) OpenedAt(conn string) (time.Time, bool) {
	var at time.Time
	s.e.Read(func(st *State) {
		if d := st.drivers[s.alias]; d != nil {
			at = d.opened[conn]
		}
	})
	return at, !at.IsZero()
}

// Due is by when connection conn must no longer list question qid as
// pending: its deadline (asked, the ask, and timeout), or the moment the
// connection began to hear the bridge live (live: its opening, or its
// stream's return after Drop or Offline), if later. Not ok where the ask
// is not known, or the stream is cut and not back.
func (s *Session) Due(conn, qid string, timeout time.Duration) (asked, live, due time.Time, ok bool) {
	s.e.Read(func(st *State) {
		if ss := st.sessions[s.alias]; ss != nil {
			asked, live, due, ok = st.due(ss, conn, qid, timeout)
		}
	})
	return asked, live, due, ok
}

// ToldOverSince reports whether connection conn was told, at t or later,
// that the session waits on no question, or on another than qid.
func (s *Session) ToldOverSince(conn, qid string, t time.Time) bool {
	over := false
	_ = s.read(func(ss *SessionState) {
		for _, ev := range ss.told {
			if ev.Conn == conn && ev.Type == surface.EventStatus && !ev.T.Before(t) && ev.Waiting != nil && (!*ev.Waiting || ev.PendingID != "" && ev.PendingID != qid) {
				over = true
			}
		}
	})
	return over
}

// Request is the agent's request behind the current question.
func (s *Session) Request() (Request, bool) {
	var out Request
	var ok bool
	_ = s.readCur(func(ss *SessionState, cur string) {
		var req *Request
		if req, ok = ss.requestOf(cur); ok {
			out = *req
		}
	})
	return out, ok
}

// Delivered compares the current question as connection conn shows it
// with what the agent asked: every question, header, option label and
// description, multiSelect, in order. An ask_user call (route MCP) has one
// question and no header.
func (s *Session) Delivered(conn string) error {
	var shown, asked []protocol.Question
	var found, mcpCall bool
	qid := s.Current()
	if err := s.read(func(ss *SessionState) {
		shown, _ = ss.shown(conn, qid)
		if req, ok := ss.requestOf(qid); ok && req.Input != nil {
			found, asked, mcpCall = true, req.asked, req.askedMCP
		}
	}); err != nil {
		return err
	}
	if !found {
		return fmt.Errorf("no agent request matches question %s", qid)
	}
	if len(shown) != len(asked) {
		return fmt.Errorf("the surface shows %d question(s), the agent asked %d", len(shown), len(asked))
	}
	for i, a := range asked {
		q := shown[i]
		diff := func(field, got, want string) error {
			if got != want {
				return fmt.Errorf("question %d: %s is %q on the surface, the agent asked %q", i+1, field, got, want)
			}
			return nil
		}
		errs := []error{diff("question", q.Question, a.Question)}
		if !mcpCall {
			errs = append(errs, diff("header", q.Header, a.Header))
		}
		errs = append(errs, diff("multiSelect", strconv.FormatBool(q.MultiSelect), strconv.FormatBool(a.MultiSelect)))
		opts := a.Options
		if len(q.Options) != len(opts) {
			errs = append(errs, fmt.Errorf("question %d: %d option(s) on the surface, the agent asked with %d", i+1, len(q.Options), len(opts)))
		} else {
			for j, o := range opts {
				errs = append(errs, diff(fmt.Sprintf("option %d label", j+1), q.Options[j].Label, o.Label),
					diff(fmt.Sprintf("option %d description", j+1), q.Options[j].Description, o.Description))
			}
		}
		for _, err := range errs {
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// Check waits for the agent's verdict on every answer it received
// (Verdicts), then returns what it reported wrong: failures of its latest
// process, and any request that got more than one control_response. None
// means the agent took every answer as the scenario expects.
func (s *Session) Check(ctx context.Context) ([]string, error) {
	problems, err := s.Problems(ctx)
	var out []string
	for _, p := range problems {
		out = append(out, p.Text)
	}
	return out, err
}

// Problems is Check with the scenario step each problem is of, where it is
// of one.
func (s *Session) Problems(ctx context.Context) ([]Problem, error) {
	if err := s.e.Await(ctx, Verdicts(s.alias)); err != nil {
		return nil, err
	}
	var problems []Problem
	err := s.read(func(ss *SessionState) {
		problems = append(problems, ss.latestProblems()...)
		for _, qid := range undelivered(ss) {
			problems = append(problems, Problem{Text: fmt.Sprintf("the bridge took the answer to %s, and the agent exited without receiving it", qid)})
		}
		for _, req := range ss.requests {
			if n := len(req.Responses); n > 1 {
				problems = append(problems, Problem{Text: fmt.Sprintf("the agent received %d control_responses for request %s; exactly one is allowed", n, req.ID)})
			}
		}
	})
	return problems, err
}

// AnswerOwners are the requirements that own how the agent's answer to
// the current question differs from what the person gave, where the way it
// differs tells (answerOwners): nil otherwise.
func (s *Session) AnswerOwners() []string {
	var owners []string
	_ = s.readCur(func(ss *SessionState, cur string) {
		if req, ok := ss.requestOf(cur); ok {
			owners = answerOwners(req, ss.sent[cur])
		}
	})
	return owners
}

// AnsweredUnshown reports that the bridge answered the agent itself: the
// agent got a response to every request it made, none of whose questions
// the harness answered, and exited; and it got an allow for a request whose
// question no surface ever showed. (A deny after the question showed is a
// timeout, which a bridge may give.) why says what the agent got.
func (s *Session) AnsweredUnshown() (why string, ok bool) {
	_ = s.read(func(ss *SessionState) {
		if why, ok = ss.answeredBehindSurfaces(); !ok {
			return
		}
		ok = false
		for i, r := range ss.requests {
			if ss.questionOf(i) == "?" && len(r.Responses) > 0 && r.Responses[0].granted.Behavior == protocol.BehaviorAllow {
				ok = true
			}
		}
	})
	return why, ok
}

// Has reports whether the harness started a session named alias.
func (e *Env) Has(alias string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.st.sessions[alias] != nil
}

// ToolResult waits for the tool_result the agent wrote for the current
// question's request (route MCP: what the ask_user call returned) and
// returns its text and whether it is an error.
func (s *Session) ToolResult(ctx context.Context) (text string, isError bool, err error) {
	qid, err := s.orCurrent("")
	if err != nil {
		return "", false, err
	}
	if err := s.e.Await(ctx, ToolResulted(s.alias, qid)); err != nil {
		return "", false, err
	}
	_ = s.read(func(ss *SessionState) {
		if req, ok := ss.requestOf(qid); ok {
			text, isError = req.resultText, req.resultErr
		}
	})
	return text, isError, nil
}

// Reclaimed reports whether connection conn (its latest) took its session
// back after a takeover (Env.Reclaim).
func (s *Session) Reclaimed(conn string) bool {
	var back bool
	s.e.Read(func(st *State) {
		if d := st.drivers[s.alias]; d != nil {
			back = d.reclaimed[conn]
		}
	})
	return back
}

// NotReplayed is a question that was pending when connection conn was
// open (its Open had returned: a bridge must by then have replayed, or go
// on to tell, what waits), that conn was never shown: one a connection of
// the session was shown before (another connection, or conn before it was
// opened again), or one the agent asked that no connection was ever shown
// ("of the agent's request ID"). Nothing had ended it by then (no answer,
// skip, expiry or withdrawal told, no response to the agent, no withdrawal
// by it); what became of it later does not matter. It is what a bridge that
// does not replay pending questions to a connection that opens leaves
// behind (UI-RECONNECT-REPLAY). A bridge restarted between the ask and the
// open is not asked to replay: keeping a question across a restart is
// another rule's (UI-PERSIST).
func (s *Session) NotReplayed(conn string) (string, bool) {
	var qid string
	s.e.Read(func(st *State) {
		ss, d := st.sessions[s.alias], st.drivers[s.alias]
		if ss == nil || d == nil || d.opened[conn].IsZero() {
			return
		}
		opened := d.opened[conn]
		shownOn := map[string]map[string]bool{} // question → connections told of it
		ended := map[string]bool{}              // by the time conn was open
		first := map[string]time.Time{}         // when it was first shown
		var order []string
		for _, ev := range ss.told {
			switch ev.Type {
			case surface.EventQuestion:
				if shownOn[ev.QuestionID] == nil {
					if !ev.T.Before(opened) {
						continue // first shown after conn began to open
					}
					shownOn[ev.QuestionID] = map[string]bool{}
					first[ev.QuestionID] = ev.T
					order = append(order, ev.QuestionID)
				}
				shownOn[ev.QuestionID][ev.Conn] = true
			case surface.EventAnswered, surface.EventSkipped, surface.EventExpired, surface.EventWithdrawn, surface.EventResumed:
				if ev.T.Before(opened) {
					ended[ev.QuestionID] = true
				}
			}
		}
		for _, q := range order {
			if ended[q] || shownOn[q][conn] || st.restartedBetween(first[q], opened) {
				continue
			}
			if req, ok := ss.requestOf(q); ok && (len(req.Responses) > 0 && req.Responses[0].T.Before(opened) || !req.Cancelled.IsZero() && req.Cancelled.Before(opened)) {
				continue
			}
			qid = q
			return
		}
		// Asked while no connection was open, and never shown anywhere. A
		// bridge may take its snapshot for a connection a moment after
		// the connection is open (a WebSocket's handshake ends before its
		// handler subscribes), so a question asked before the first thing
		// the connection was told (a snapshot begins with the session's
		// status) was the replay's to bring too.
		replayBy := opened
		for _, ev := range ss.told {
			if ev.Conn == conn {
				if ev.T.After(opened) {
					replayBy = ev.T
				}
				break
			}
		}
		for i, req := range ss.requests {
			if ss.questionOf(i) != "?" || !req.T.Before(replayBy) || st.restartedBetween(req.T, replayBy) {
				continue
			}
			if len(req.Responses) > 0 && req.Responses[0].T.Before(opened) || !req.Cancelled.IsZero() && req.Cancelled.Before(opened) {
				continue
			}
			qid = "of the agent's request " + req.ID
			return
		}
	})
	return qid, qid != ""
}
