package harness

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/askctl/askctl/internal/clip"
	"github.com/askctl/askctl/protocol"
	"github.com/askctl/askctl/surface"
)

// A Violation is a safety rule of the requirements that what an Env saw
// breaks, with the requirement that states the rule.
type Violation struct {
	Requirement string `json:"requirement"`
	Session     string `json:"session"`
	Text        string `json:"text"`
}

func (v Violation) String() string { return v.Requirement + ": " + v.Text }

// TimedOutPattern is how a deny says it timed out (SDK-TIMEOUT's wording
// rule), as a regular expression.
const TimedOutPattern = `(?i)tim(e|ed) ?out|expired|no response|did not respond`

var timedOut = regexp.MustCompile(TimedOutPattern)

// TimedOut reports whether a deny's message says it timed out.
func TimedOut(message string) bool { return timedOut.MatchString(message) }

// Invariants checks the rules that must hold at every moment of every
// session, whatever the person and the agent did: the safety half of the
// requirements, checked on everything seen so far, so that a defect breaks
// them whichever case or explored sequence reaches it. (What must
// eventually happen, a deny after a timeout, a question replayed, is for
// the case to await.) None when every rule holds. Sessions are checked in
// alias order; an empty aliases checks every session.
//
// For each request of the agent:
//   - SDK-LATE-ANSWER: at most one control_response;
//   - SDK-CANCEL: no allow after the agent withdrew it;
//   - SDK-ANSWER-ALL, SDK-NO-EMPTY, SDK-ANSWER-SINGLE: an allow answers
//     every question, none blank, keyed by the question's text, each a
//     string, with the questions unchanged;
//   - SDK-SKIP-DENY: a deny has a non-blank message;
//   - SDK-TIMEOUT (a declared timeout T, no restart since the ask): the
//     response comes within T + 1 s of the ask, and a deny that says it
//     timed out comes no earlier than 3/4 T after it (deadlines run from
//     the ask, and nothing moves them).
//
// For each connection of the session:
//   - SDK-ISOLATION: it hears nothing of another session (its id or its
//     questions);
//   - UI-RECONNECT-REPLAY: it hears each event once: no event id twice,
//     a question at most once, and not again after it ended, and how it
//     ended once;
//   - SDK-TIMEOUT (a declared timeout T): it is told a question expired
//     within 1 s of the question's deadline (the ask and T), or of its
//     own opening when it opened later (a replay), or of its stream's
//     return after a cut (Drop, Offline). A restart moves no deadline:
//     the bridge down at it ends the question as it comes back, before a
//     connection opens.
//
// For a resumed agent (UI-PERSIST): where the agent before it had its
// response to every request, its first prompt asks none of them again (an
// answer reaches the agent once).
//
// For the session's surfaces, one request is one question id: no request
// of the agent is shown under a second id (UI-PERSIST where the bridge was
// restarted in between, else UI-RECONNECT-REPLAY, which replays a question
// with the same id). The agent's request and the surface's question are
// heard apart, so a caller waits for OneIDPerRequest first (with a
// deadline) and then checks.
func (e *Env) Invariants(aliases ...string) []Violation {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(aliases) == 0 {
		for a := range e.st.sessions {
			aliases = append(aliases, a)
		}
	}
	sort.Strings(aliases)
	var timeout time.Duration
	if e.bridge != nil && e.bridge.profile != nil {
		timeout = e.bridge.profile.Capabilities.Timeout.D()
	}
	var out []Violation
	for _, a := range aliases {
		s := e.st.sessions[a]
		if s == nil {
			continue
		}
		out = append(out, e.st.requestViolations(s, timeout)...)
		out = append(out, e.st.surfaceViolations(s)...)
		out = append(out, e.st.expiryViolations(s, timeout)...)
		out = append(out, e.st.idViolations(s)...)
		for _, c := range e.st.statusContradictions(s) {
			out = append(out, Violation{Requirement: "UI-STATUS", Session: s.alias, Text: c})
		}
		for _, r := range s.redelivered {
			out = append(out, Violation{Requirement: "UI-PERSIST", Session: s.alias, Text: fmt.Sprintf("session %s: %s", s.alias, r)})
		}
	}
	return out
}

// statusContradictions are the open connections of s whose latest status
// says the session waits on nobody while a question shown to them, which
// they were not told ended, still waits: its agent has had no response.
// (A status may be heard before the agent's response is: a caller waits
// for StatusesAgree first, with a deadline.) A connection that closed is
// not judged: nothing could correct what it heard last. Route SDK only: an
// MCP session's question lives in its call. It is UI-STATUS's rule, so
// none where the profile does not declare reconnect (State.reconnects).
func (st *State) statusContradictions(s *SessionState) []string {
	if !st.reconnects || s.mcp || s.exit != nil {
		return nil
	}
	type conn struct {
		open   []string // shown, not told ended, in order
		last   *surface.Event
		atLast []string // open when last was heard
		closed bool
	}
	conns := map[string]*conn{}
	for i := range s.told {
		ev := &s.told[i]
		c := conns[ev.Conn]
		if c == nil {
			c = &conn{}
			conns[ev.Conn] = c
		}
		switch {
		case ev.Type == surface.EventQuestion && ev.QuestionID != "" && !slices.Contains(c.open, ev.QuestionID):
			c.open = append(c.open, ev.QuestionID)
		case terminal[ev.Type] && ev.QuestionID != "":
			c.open = slices.DeleteFunc(c.open, func(q string) bool { return q == ev.QuestionID })
		case ev.Type == surface.EventStatus && ev.Waiting != nil && (ev.Session == "" || ev.Session == s.id):
			c.last, c.atLast = ev, slices.Clone(c.open)
		case ev.Type == surface.EventClosed:
			c.closed = true
		}
	}
	var out []string
	for _, name := range slices.Sorted(maps.Keys(conns)) {
		c := conns[name]
		if c.closed || c.last == nil || *c.last.Waiting {
			continue
		}
		for _, q := range c.atLast {
			if slices.Contains(c.open, q) && s.waitsOn(q) {
				out = append(out, fmt.Sprintf("session %s: connection %s was last told, at %s, that the session waits on nobody (a status with waiting_for_user false), while question %s, shown to it before and never told ended, still waits for the person: the agent has had no response; a status says the session waits, and on which question",
					s.alias, name, c.last.T.Format("15:04:05.000"), q))
				break
			}
		}
	}
	return out
}

// StatusesAgree is met when no connection of the sessions (every one for
// none) was last told that its session waits on nobody while a question
// shown to it still waits (statusContradictions): a status heard before
// the agent's response is, is met once the response is heard.
func StatusesAgree(aliases ...string) Expectation {
	return Expectation{Description: "every connection's latest status agrees with what its session waits on", Check: func(st *State) (Verdict, string) {
		for _, a := range slices.Sorted(maps.Keys(st.sessions)) {
			if len(aliases) > 0 && !slices.Contains(aliases, a) {
				continue
			}
			if c := st.statusContradictions(st.sessions[a]); len(c) > 0 {
				return Unmet, c[0]
			}
		}
		return Met, ""
	}}
}

func (st *State) restartedSince(t time.Time) bool {
	return slices.ContainsFunc(st.restarts, func(r time.Time) bool { return r.After(t) })
}

// restartedBetween reports whether the harness restarted the bridge after
// from and before to.
func (st *State) restartedBetween(from, to time.Time) bool {
	return slices.ContainsFunc(st.restarts, func(r time.Time) bool { return r.After(from) && r.Before(to) })
}

func (st *State) requestViolations(s *SessionState, timeout time.Duration) []Violation {
	var out []Violation
	add := func(req, format string, args ...any) {
		out = append(out, Violation{Requirement: req, Session: s.alias, Text: fmt.Sprintf("session %s: ", s.alias) + fmt.Sprintf(format, args...)})
	}
	if s.mcp {
		return nil // a tool call's result is checked by its case (tool-result)
	}
	for i, req := range s.requests {
		what := fmt.Sprintf("request %s (question %s)", req.ID, s.questionOf(i))
		if n := len(req.Responses); n > 1 {
			add("SDK-LATE-ANSWER", "the agent received %d control_responses for %s: exactly one per request", n, what)
		}
		for _, r := range req.Responses {
			if !req.Cancelled.IsZero() && r.T.After(req.Cancelled) && r.granted.Behavior == protocol.BehaviorAllow {
				add("SDK-CANCEL", "the agent withdrew %s, and then received an allow for it: %s", what, clip.String(string(r.Result), 300))
			}
		}
		if len(req.Responses) == 0 {
			continue
		}
		r := req.Responses[0]
		g := r.granted
		switch b := g.Behavior; {
		case b == protocol.BehaviorAllow && s.skipped[s.questionOf(i)]:
			// Not a partial or an empty answer: no answer at all.
			add("SDK-SKIP-DENY", "the person skipped %s, and the agent received an allow for it: a skip is a deny; the allow: %s", what, clip.String(string(r.Result), 300))
		case b == protocol.BehaviorAllow:
			texts := req.texts
			miskeyed := false // answers keyed otherwise (q_0): SDK-ANSWER-SINGLE's, not a missing answer
			for _, a := range g.Answers {
				miskeyed = miskeyed || !texts[a.Key]
			}
			if g.AnswersRaw != nil && !g.AnswersSent {
				// Answers that are no object are keyed by no question.
				miskeyed = true
				add("SDK-ANSWER-SINGLE", "the allow for %s carries answers %s, not an object keyed by the full question text", what, clip.String(string(g.AnswersRaw), 200))
			}
			for _, q := range req.asked {
				a, ok := g.Answer(q.Question)
				text, isString := a.String()
				switch {
				case !ok && miskeyed:
				case !ok:
					add("SDK-ANSWER-ALL", "the allow for %s has no answer to %q: every question is answered, at once", what, q.Question)
				case !isString:
					add("SDK-ANSWER-MULTI", "the answer to %q in the allow for %s is %s, not one string", q.Question, what, a.Value)
				case strings.TrimSpace(text) == "":
					add("SDK-NO-EMPTY", "the answer to %q in the allow for %s is %q: never an empty or blank answer", q.Question, what, text)
				}
			}
			for _, a := range g.Answers {
				if !texts[a.Key] {
					add("SDK-ANSWER-SINGLE", "the allow for %s answers %q, which is no question's text: answers are keyed by the full question text", what, a.Key)
				}
			}
			if !protocol.SameJSON(g.Questions, req.askedRaw) {
				add("SDK-ANSWER-SINGLE", "the allow for %s carries questions other than those asked: %s", what, clip.String(string(g.Questions), 300))
			}
		case b == protocol.BehaviorDeny:
			if strings.TrimSpace(g.Message) == "" {
				add("SDK-SKIP-DENY", "the deny for %s has no message: a deny says why", what)
			}
		default:
			add("SDK-ANSWER-SINGLE", "the response to %s has behavior %q: want allow or deny", what, b)
		}
		if timeout <= 0 || st.restartedSince(req.T) {
			continue
		}
		took := r.T.Sub(req.T)
		if took > timeout+time.Second {
			add("SDK-TIMEOUT", "the response to %s came %v after the ask, past the declared timeout %v + 1 s: the deadline runs from the ask", what, took.Round(time.Millisecond), timeout)
		}
		if g.Behavior == protocol.BehaviorDeny && TimedOut(g.Message) && took < timeout*3/4 && !st.personActed(s, i, r.T) {
			add("SDK-TIMEOUT", "%s was denied as timed out %v after the ask, before the declared timeout %v: the deadline runs from the ask", what, took.Round(time.Millisecond), timeout)
		}
	}
	return out
}

// personActed reports whether the harness answered or skipped the i-th
// request's question before t (a skip reason may say anything).
func (st *State) personActed(s *SessionState, i int, t time.Time) bool {
	at, ok := s.answered[s.questionOf(i)]
	return ok && at.Before(t)
}

var terminal = map[string]bool{surface.EventAnswered: true, surface.EventSkipped: true, surface.EventExpired: true, surface.EventWithdrawn: true}

func (st *State) surfaceViolations(s *SessionState) []Violation {
	var out []Violation
	add := func(req, format string, args ...any) {
		out = append(out, Violation{Requirement: req, Session: s.alias, Text: fmt.Sprintf("session %s: ", s.alias) + fmt.Sprintf(format, args...)})
	}
	others := map[string]string{} // question id → the alias of the other session that showed it
	for _, o := range st.sessions {
		if o == s {
			continue
		}
		for _, q := range o.questions {
			others[q] = o.alias
		}
	}
	type key struct{ conn, typ, qid string }
	seq := map[string]map[int64]bool{}
	told := map[key]bool{}
	reported := map[string]bool{}
	once := func(k string) bool {
		if reported[k] {
			return false
		}
		reported[k] = true
		return true
	}
	for _, ev := range s.told {
		c := ev.Conn
		switch {
		case ev.Session != "" && s.id != "" && ev.Session != s.id:
			if once("iso-s " + c + ev.Session) {
				add("SDK-ISOLATION", "connection %s was told %s of session %s, which is not its session (%s)", c, describe(ev), ev.Session, s.id)
			}
		case ev.QuestionID != "" && others[ev.QuestionID] != "":
			if once("iso-q " + c + ev.QuestionID) {
				add("SDK-ISOLATION", "connection %s was told %s, a question of session %s", c, describe(ev), others[ev.QuestionID])
			}
		case ev.PendingID != "" && others[ev.PendingID] != "":
			// A status: the session waits on another session's question.
			if once("iso-p " + c + ev.PendingID) {
				add("SDK-ISOLATION", "connection %s was told its session waits on question %s, a question of session %s", c, ev.PendingID, others[ev.PendingID])
			}
		}
		if ev.Seq > 0 {
			if seq[c] == nil {
				seq[c] = map[int64]bool{}
			}
			if seq[c][ev.Seq] && once(fmt.Sprint("seq ", c, ev.Seq)) {
				add("UI-RECONNECT-REPLAY", "connection %s was told event %d (%s) twice", c, ev.Seq, describe(ev))
			}
			seq[c][ev.Seq] = true
		}
		if ev.QuestionID == "" {
			continue
		}
		switch {
		case ev.Type == surface.EventQuestion:
			ended := false
			for t := range terminal {
				ended = ended || told[key{c, t, ev.QuestionID}]
			}
			switch {
			case ended && once("again "+c+ev.QuestionID):
				add("UI-RECONNECT-REPLAY", "connection %s was shown question %s again after it was told the question ended", c, ev.QuestionID)
			case told[key{c, surface.EventQuestion, ev.QuestionID}] && once("twice "+c+ev.QuestionID):
				add("UI-RECONNECT-REPLAY", "connection %s was shown question %s twice", c, ev.QuestionID)
			}
		case terminal[ev.Type]:
			if told[key{c, ev.Type, ev.QuestionID}] && once("end "+c+ev.Type+ev.QuestionID) {
				add("UI-RECONNECT-REPLAY", "connection %s was told twice that question %s %s", c, ev.QuestionID, ev.Type)
			}
		}
		told[key{c, ev.Type, ev.QuestionID}] = true
	}
	return out
}

// expiryViolations are the expiries a connection of s heard late: past
// the question's deadline (its ask and timeout), or the moment the
// connection began to hear the bridge live if later (its opening, or its
// stream's return after Drop or Offline), by more than 1 s. Events it
// heard before then, or while its stream is cut, are not judged: they may
// wait as long as it was away. Not for an MCP session, whose ask
// server keeps the time.
func (st *State) expiryViolations(s *SessionState, timeout time.Duration) []Violation {
	if timeout <= 0 || s.mcp {
		return nil
	}
	var out []Violation
	seen := map[string]bool{}
	for _, ev := range s.told {
		if ev.Type != surface.EventExpired || ev.QuestionID == "" || seen[ev.Conn+ev.QuestionID] {
			continue
		}
		seen[ev.Conn+ev.QuestionID] = true
		asked, live, due, ok := st.due(s, ev.Conn, ev.QuestionID, timeout)
		if !ok || ev.T.Before(live) {
			continue
		}
		if late := ev.T.Sub(due); late > time.Second {
			out = append(out, Violation{Requirement: "SDK-TIMEOUT", Session: s.alias, Text: fmt.Sprintf(
				"session %s: connection %s was told question %s expired %v after the ask, the declared timeout being %v (the connection live since %v after the ask): %v late; the deadline runs from the ask, and a restart or a reconnect does not move it",
				s.alias, ev.Conn, ev.QuestionID, ev.T.Sub(asked).Round(time.Millisecond), timeout, live.Sub(asked).Round(time.Millisecond), late.Round(time.Millisecond))})
		}
	}
	return out
}

// due is by when connection conn of s must no longer show question qid
// as pending, and be told it expired: its deadline (asked, the ask, and
// timeout), or the moment the connection began to hear the bridge live
// (live), if later. Not ok where the ask is not known, or the stream is
// cut (Drop, Offline) and not back.
func (st *State) due(s *SessionState, conn, qid string, timeout time.Duration) (asked, live, due time.Time, ok bool) {
	d := st.drivers[s.alias]
	if d == nil {
		return
	}
	req, known := s.requestOf(qid)
	if live, ok = d.liveSince(conn); !ok || !known {
		return time.Time{}, time.Time{}, time.Time{}, false
	}
	due = req.T.Add(timeout)
	if live.After(due) {
		due = live
	}
	return req.T, live, due, true
}

func (st *State) idViolations(s *SessionState) []Violation {
	if s.mcp {
		return nil
	}
	var out []Violation
	for _, x := range s.extraQuestions() {
		req, why := "UI-RECONNECT-REPLAY", "replayed on a reconnect, a question keeps its id"
		if st.restartedBetween(s.firstShown(x.First), s.firstShown(x.ID)) {
			req, why = "UI-PERSIST", "listed again after a restart, a question keeps its id"
		}
		out = append(out, Violation{Requirement: req, Session: s.alias, Text: fmt.Sprintf(
			"session %s: the surfaces showed question %s, and then %s, which asks the same %s, where the agent asked it %s: one request is one question; %s",
			s.alias, x.First, x.ID, clip.String(strings.Join(s.shownTexts[x.ID], " / "), 160), times(x.Asked), why)})
	}
	return out
}

func times(n int) string {
	if n == 1 {
		return "once"
	}
	return fmt.Sprintf("%d times", n)
}

// OneIDPerRequest is met when, for each of the sessions (every one for
// none), every question id shown asks what a request of the agent of its
// own asked: the agent's request has been heard for each question shown.
// Unmet while one is shown twice under two ids (idViolations then says so).
func OneIDPerRequest(aliases ...string) Expectation {
	return Expectation{Description: "every question shown is a request of the agent's own", Check: func(st *State) (Verdict, string) {
		for a, s := range st.sessions {
			if len(aliases) > 0 && !slices.Contains(aliases, a) {
				continue
			}
			if !s.mcp && len(s.extraQuestions()) > 0 {
				return Unmet, ""
			}
		}
		return Met, ""
	}}
}

func describe(ev surface.Event) string {
	if ev.QuestionID != "" {
		return fmt.Sprintf("%q (question %s)", ev.Type, ev.QuestionID)
	}
	return fmt.Sprintf("%q", ev.Type)
}
