package harness

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/askctl/askctl/internal/clip"
	"github.com/askctl/askctl/internal/events"
	"github.com/askctl/askctl/protocol"
	"github.com/askctl/askctl/surface"
	"github.com/askctl/askctl/transcript"
)

// The expectations cases await, in one place. Each reads the typed state
// (never the raw records again) and writes nothing; each is unmeetable once
// what it depends on can no longer happen (the agent exited without meeting
// it, the connection closed), so a failure is immediate, not a timeout.

func exited(s *SessionState) (Verdict, string) {
	if s.exit != nil {
		return Unmeetable, s.exitText()
	}
	return Unmet, ""
}

// exitText says how the agent ended: its status, what it reported wrong,
// and the end of its stderr where known.
func (s *SessionState) exitText() string {
	why := fmt.Sprintf("the agent of session %s exited with status %d", s.alias, *s.exit)
	if f := s.latestFailures(); len(f) > 0 {
		why += "; it reported: " + strings.Join(f, "; ")
	}
	if e := strings.TrimSpace(s.exitStderr); e != "" {
		lines := strings.Split(e, "\n")
		lines = lines[max(0, len(lines)-5):]
		why += "; its stderr ended: " + strings.Join(lines, " | ")
	}
	return why
}

// closed says whether connection conn has closed, and why.
func (s *SessionState) closed(conn string) (string, bool) {
	for _, ev := range s.told {
		if ev.Conn == conn && ev.Type == surface.EventClosed {
			return "the connection closed: " + ev.Reason, true
		}
	}
	return "", false
}

// onSession is an expectation on alias's session: unmeetable when there is
// no such session.
func onSession(alias, desc string, check func(*SessionState) (Verdict, string)) Expectation {
	return onSessionIn(alias, desc, func(_ *State, s *SessionState) (Verdict, string) { return check(s) })
}

// onSessionIn is onSession for a check that also reads the rest of the
// state (the driver's).
func onSessionIn(alias, desc string, check func(*State, *SessionState) (Verdict, string)) Expectation {
	return Expectation{Description: desc, alias: alias, Check: func(st *State) (Verdict, string) {
		s := st.sessions[alias]
		if s == nil {
			return Unmeetable, fmt.Sprintf("no session %q", alias)
		}
		return check(st, s)
	}}
}

// NewQuestion is met when connection conn of alias's session shows a
// question it has not consumed (Session.AwaitQuestion consumes it).
func NewQuestion(alias, conn string) Expectation {
	return onSessionIn(alias, fmt.Sprintf("connection %s of session %s shows a new question", conn, alias), func(st *State, s *SessionState) (Verdict, string) {
		if _, ok := s.nextQuestion(conn, st.consumed(alias, conn)); ok {
			return Met, ""
		}
		if why, closed := s.closed(conn); closed {
			return Unmeetable, why
		}
		if s.altered != "" {
			return Unmeetable, s.altered
		}
		// Not unmeetable when the agent exits: a bridge that persists
		// questions still shows one whose agent died with it. An MCP
		// call's question lives only while the call does.
		if s.mcp && s.exit != nil {
			why := fmt.Sprintf("the agent of session %s exited with status %d before a question showed", alias, *s.exit)
			if len(s.failures) > 0 {
				why += ": " + strings.Join(s.failures, "; ")
			}
			return Unmeetable, why
		}
		if why, ok := s.answeredBehindSurfaces(); ok {
			return Unmeetable, why
		}
		return Unmet, ""
	})
}

// answeredBehindSurfaces reports, once the agent has exited, that nothing
// is left for a surface to show: the agent received a response to every
// request it made, and the harness answered none of its questions (a
// bridge that answered or denied by itself, or a policy). A bridge may
// still show a question whose agent died waiting, or withdrew it as it
// died; not one the agent got a response to. why says what the agent got, and what it said of it.
func (s *SessionState) answeredBehindSurfaces() (why string, ok bool) {
	if s.exit == nil || len(s.requests) == 0 || len(s.answered) > 0 {
		return "", false
	}
	var got []string
	for i, r := range s.requests {
		if len(r.Responses) == 0 {
			// It died waiting (or withdrew it as it died): a bridge that
			// keeps questions may show it yet.
			return "", false
		}
		resp := r.Responses[0]
		got = append(got, fmt.Sprintf("request %d (%s) got %s %v after the ask", i+1, r.ID, responseSummary(resp), resp.T.Sub(r.T).Round(time.Millisecond)))
	}
	why = fmt.Sprintf("no surface can show it: the agent of session %s was answered where no surface answered, and exited with status %d. ", s.alias, *s.exit) + strings.Join(got, "; ")
	if f := s.failures[s.failuresFrom:]; len(f) > 0 {
		why += ". The agent said: " + strings.Join(f, "; ")
	}
	return why, true
}

// responseSummary is a permission response as a bridge author reads it:
// the behaviour, and the answers or the message, cut to a line.
func responseSummary(r Response) string {
	if len(r.Result) == 0 {
		return "the error " + clip.Quote(r.peeked.Response.Error, 200)
	}
	switch g := r.granted; g.Behavior {
	case protocol.BehaviorAllow:
		if g.AnswersRaw != nil {
			return "allow with the answers " + clip.String(string(g.AnswersRaw), 200)
		}
		return "allow with no answers"
	case protocol.BehaviorDeny:
		return "deny " + clip.Quote(g.Message, 200)
	default:
		return clip.String(string(r.Result), 200)
	}
}

// SurfaceSaw is met when connection conn ("" any) of alias's session saw
// an event of type typ about question qid ("" any).
func SurfaceSaw(alias, conn, typ, qid string) Expectation {
	return SurfaceSawTimes(alias, conn, typ, qid, 1)
}

// SurfaceSawTimes is SurfaceSaw told at least n times (negated, it checks
// a surface is not told twice what it must be told once).
func SurfaceSawTimes(alias, conn, typ, qid string, n int) Expectation {
	where := "a connection"
	if conn != "" {
		where = "connection " + conn
	}
	what := fmt.Sprintf("%s of session %s is told %s for question %s", where, alias, typ, qid)
	if n != 1 {
		what += fmt.Sprintf(" %d times", n)
	}
	return onSession(alias, what, func(s *SessionState) (Verdict, string) {
		seen := 0
		for _, ev := range s.told {
			if (conn == "" || ev.Conn == conn) && ev.Type == typ && (qid == "" || ev.QuestionID == qid || (ev.QuestionID == "" && typ == surface.EventTaken)) {
				seen++
			}
		}
		if seen >= n {
			return Met, ""
		}
		return Unmet, ""
	})
}

// endEvents are the surface's events that end a question.
var endEvents = map[string]bool{surface.EventAnswered: true, surface.EventSkipped: true, surface.EventExpired: true, surface.EventWithdrawn: true, surface.EventResumed: true}

// SurfaceSawWhileAlive is SurfaceSaw of an event that must happen while
// the agent still runs: because of something the agent did, not because it
// went away. The event's own time (the bridge's, when it gives one; else
// when it was heard) is compared with the agent's exit record.
func SurfaceSawWhileAlive(alias, conn, typ, qid string) Expectation {
	return onSession(alias, fmt.Sprintf("session %s's surface is told %s for question %s while its agent still runs", alias, typ, qid), func(s *SessionState) (Verdict, string) {
		var exitT time.Time
		ended := "exited"
		// The agent process that asked it is the one that withdraws it:
		// the end that counts is that process's (the latest one's, when
		// the request is not known).
		var asked time.Time
		if req, ok := s.requestOf(qid); ok {
			asked = req.T
		}
		for _, r := range s.agent {
			switch {
			case r.Event == events.EventHello && !exitT.IsZero() && !asked.IsZero() && asked.Before(exitT):
				// A later process: the asking one ended before it.
			case r.Event == events.EventHello:
				exitT, ended = time.Time{}, "exited"
			case r.Event == "exit" && exitT.IsZero():
				exitT = r.T
			case s.mcp && exitT.IsZero() && r.Dir == transcript.FromCLI && protocol.Peek(r.Msg).Type == protocol.TypeResult:
				// A print-mode agent (route mcp) ends its turn, then
				// closes its MCP servers, which a bridge hears before the
				// process is gone: its turn's end is what counts.
				exitT, ended = r.T, "ended its turn"
			}
		}
		for _, ev := range s.told {
			if (conn == "" || ev.Conn == conn) && ev.Type == typ && ev.QuestionID == qid {
				at := ev.At
				if at.IsZero() {
					at = ev.T
				}
				if exitT.IsZero() {
					// The exit record may be on its way: the agent must
					// still run a second after the surface was told.
					if time.Since(ev.T) < time.Second {
						return Unmet, ""
					}
					return Met, ""
				}
				if at.Before(exitT) {
					return Met, ""
				}
				return Unmeetable, fmt.Sprintf("it was told at %s, %v after the agent %s: the bridge reacted to the exit, not to the agent's cancel", at.Format("15:04:05.000"), at.Sub(exitT).Round(time.Microsecond), ended)
			}
		}
		// Told the question ended another way (it expired, still pending
		// after the agent gave it up): it will not be told this one.
		for _, ev := range s.told {
			if (conn == "" || ev.Conn == conn) && ev.QuestionID == qid && ev.Type != typ && endEvents[typ] && endEvents[ev.Type] {
				return Unmeetable, fmt.Sprintf("the surface was told %s for it instead, at %s", ev.Type, ev.T.Format("15:04:05.000"))
			}
		}
		return Unmet, ""
	})
}

// WaitingFor is met when connection conn of alias's session is told the
// session waits for the user on question qid.
func WaitingFor(alias, conn, qid string) Expectation {
	return onSession(alias, fmt.Sprintf("connection %s of session %s is told the session waits for the user on question %s", conn, alias, qid), func(s *SessionState) (Verdict, string) {
		for _, ev := range s.told {
			if ev.Conn == conn && ev.Type == surface.EventStatus && ev.Waiting != nil && *ev.Waiting && ev.PendingID == qid {
				return Met, ""
			}
		}
		return Unmet, ""
	})
}

// NotWaitingFor is met when connection conn of alias's session is told
// the session waits for no question, or for another than qid: a status
// after qid was settled.
func NotWaitingFor(alias, conn, qid string) Expectation {
	return onSession(alias, fmt.Sprintf("connection %s of session %s is told the session no longer waits on question %s", conn, alias, qid), func(s *SessionState) (Verdict, string) {
		for _, ev := range s.told {
			if ev.Conn == conn && ev.Type == surface.EventStatus && ev.Waiting != nil && (!*ev.Waiting || ev.PendingID != "" && ev.PendingID != qid) {
				return Met, ""
			}
		}
		return Unmet, ""
	})
}

// Repeated is met when connection conn of alias's session was told one
// event twice: two events with the same id (a surface that numbers its
// events). Negated, it checks a resumed stream sent nothing it had sent.
func Repeated(alias, conn string) Expectation {
	return onSession(alias, fmt.Sprintf("connection %s of session %s is told an event twice (the same id)", conn, alias), func(s *SessionState) (Verdict, string) {
		seen := map[int64]bool{}
		for _, ev := range s.told {
			if ev.Conn != conn || ev.Seq <= 0 {
				continue
			}
			if seen[ev.Seq] {
				return Met, fmt.Sprintf("event %d (%s)", ev.Seq, ev.Type)
			}
			seen[ev.Seq] = true
		}
		return Unmet, ""
	})
}

// Responses is met when the agent of alias's session has received at
// least n control_responses for the request behind question qid.
func Responses(alias, qid string, n int) Expectation {
	return onSession(alias, fmt.Sprintf("the agent of session %s receives %d control_response(s) for question %s", alias, n, qid), func(s *SessionState) (Verdict, string) {
		if req, ok := s.requestOf(qid); ok && len(req.Responses) >= n {
			return Met, ""
		}
		return exited(s)
	})
}

// Decided is met when the agent of alias's session has received a
// response to n of its permission prompts for tool (another tool than
// AskUserQuestion): the bridge decided them.
func Decided(alias, tool string, n int) Expectation {
	return onSession(alias, fmt.Sprintf("the agent of session %s receives a decision on %d %s permission prompt(s)", alias, n, tool), func(s *SessionState) (Verdict, string) {
		if s.decided[tool] >= n {
			return Met, ""
		}
		return exited(s)
	})
}

// Allowed is met when the agent of alias's session has received an allow
// for the request behind question qid: a person's answer reached it. A
// deny does not count: after the agent withdraws a request, an SDK may deny
// it on its own ("Permission request cancelled"), which is no answer.
func Allowed(alias, qid string) Expectation {
	return onSession(alias, fmt.Sprintf("the agent of session %s receives an allow (an answer) for question %s", alias, qid), func(s *SessionState) (Verdict, string) {
		if req, ok := s.requestOf(qid); ok {
			for _, r := range req.Responses {
				if r.granted.Behavior == protocol.BehaviorAllow {
					return Met, ""
				}
			}
			if len(req.Responses) > 0 && s.surfaceSaw(surface.EventExpired, qid) {
				// It timed out, and the bridge said so: no answer follows.
				r := req.Responses[0]
				return Unmeetable, fmt.Sprintf("question %s expired: the agent of session %s got %s %v after the ask", qid, alias, responseSummary(r), r.T.Sub(req.T).Round(time.Millisecond))
			}
		}
		return exited(s)
	})
}

// surfaceSaw reports whether any connection was told typ of question qid.
func (s *SessionState) surfaceSaw(typ, qid string) bool {
	for _, ev := range s.told {
		if ev.Type == typ && ev.QuestionID == qid {
			return true
		}
	}
	return false
}

// ToolResulted is met when the agent of alias's session has written the
// tool_result of question qid's request (route MCP: the ask_user call
// returned).
func ToolResulted(alias, qid string) Expectation {
	return onSession(alias, fmt.Sprintf("the agent of session %s writes the tool_result of question %s", alias, qid), func(s *SessionState) (Verdict, string) {
		if req, ok := s.requestOf(qid); ok && req.ToolResult != nil {
			return Met, ""
		}
		return exited(s)
	})
}

// Verdicts is met when the agent of alias's session has given its own
// verdict on every answer it received (the tool_result it wrote for it, a
// failure it reported, or its exit): what a check reads after it is the
// agent's last word, not a race with it.
func Verdicts(alias string) Expectation {
	return onSession(alias, fmt.Sprintf("the agent of session %s has received every answer the bridge took, and reacted to each", alias), func(s *SessionState) (Verdict, string) {
		for _, req := range s.requests {
			if len(req.Responses) > 0 && !req.Verdict {
				return Unmet, ""
			}
		}
		// An answer the bridge took is on its way to the agent: the
		// verdict is not in until it arrives (or the agent has exited,
		// and Check says it never came).
		if len(undelivered(s)) > 0 && s.exit == nil {
			return Unmet, ""
		}
		return Met, ""
	})
}

// undelivered lists the questions the harness answered or skipped, the
// bridge taking it, whose request the agent has not had a reply to: no
// control_response (route sdk), no tool_result (route mcp). A resumed
// session's answer reaches the new agent as its prompt, not as a reply.
func undelivered(s *SessionState) []string {
	if s.resumed {
		return nil
	}
	var out []string
	for qid := range s.answered {
		req, ok := s.requestOf(qid)
		if !ok {
			continue
		}
		if (s.mcp && !req.Verdict) || (!s.mcp && len(req.Responses) == 0) {
			out = append(out, qid)
		}
	}
	sort.Strings(out)
	return out
}

// Asked is met when the agent of alias's session has sent n requests.
func Asked(alias string, n int) Expectation {
	return onSession(alias, fmt.Sprintf("the agent of session %s asks %d question(s)", alias, n), func(s *SessionState) (Verdict, string) {
		if len(s.requests) >= n {
			return Met, ""
		}
		return exited(s)
	})
}

// Turns is met when the agent of alias's session has ended n turns
// (written n results).
func Turns(alias string, n int) Expectation {
	return onSession(alias, fmt.Sprintf("the agent of session %s ends turn %d", alias, n), func(s *SessionState) (Verdict, string) {
		if s.turns >= n {
			return Met, ""
		}
		return exited(s)
	})
}

// Resumed is met when an agent started with --resume for alias's session
// has ended a turn.
func Resumed(alias string) Expectation {
	return onSession(alias, fmt.Sprintf("the agent of session %s is resumed (--resume) and ends a turn", alias), func(s *SessionState) (Verdict, string) {
		if s.resumed && s.resumedTurns > 0 {
			return Met, ""
		}
		return Unmet, s.latestAgent(time.Now())
	})
}

// Exited is met when the agent of alias's session has exited, with status
// code (any when code < 0).
func Exited(alias string, code int) Expectation {
	d := fmt.Sprintf("the agent of session %s exits", alias)
	if code >= 0 {
		d += fmt.Sprintf(" with status %d", code)
	}
	return onSession(alias, d, func(s *SessionState) (Verdict, string) {
		if s.exit == nil {
			return Unmet, ""
		}
		if code < 0 || *s.exit == code {
			return Met, ""
		}
		return Unmeetable, s.exitText()
	})
}
