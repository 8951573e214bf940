package harness

import (
	"fmt"
	"strings"

	"github.com/askctl/askctl/protocol"
	"github.com/askctl/askctl/transcript"
	"github.com/tidwall/gjson"
)

// The expectations conformance cases await. Each is unmeetable once the
// agent it depends on has exited without meeting it.

func exited(s *Session) (Verdict, string) {
	if s.Exit != nil {
		return Unmeetable, fmt.Sprintf("the agent of session %s exited with status %d", s.Alias, *s.Exit)
	}
	return Unmet, ""
}

func lookup(st *State, alias string) (*Session, Verdict, string) {
	s := st.Sessions[alias]
	if s == nil {
		return nil, Unmeetable, fmt.Sprintf("no session %q", alias)
	}
	return s, Unmet, ""
}

// NewQuestion is met when connection conn of alias's session shows a
// question it has not consumed; *qid receives its id.
func NewQuestion(alias, conn string, qid *string) Expectation {
	return Expectation{Description: fmt.Sprintf("connection %s of session %s shows a new question", conn, alias), Check: func(st *State) (Verdict, string) {
		s, v, why := lookup(st, alias)
		if s == nil {
			return v, why
		}
		for _, ev := range s.Surface {
			if ev.Conn == conn && ev.Type == SurfQuestion && !s.consumed[conn][ev.QuestionID] {
				*qid = ev.QuestionID
				return Met, ""
			}
		}
		for _, ev := range s.Surface {
			if ev.Conn == conn && ev.Type == SurfClosed {
				return Unmeetable, "the connection closed: " + ev.Reason
			}
		}
		// Not unmeetable when the agent exits: a bridge that persists
		// questions still shows one whose agent died with it. An MCP
		// call's question lives only while the call does.
		if s.MCP && s.Exit != nil {
			why := fmt.Sprintf("the agent of session %s exited with status %d before a question showed", alias, *s.Exit)
			if f := s.Failures(); len(f) > 0 {
				why += ": " + strings.Join(f, "; ")
			}
			return Unmeetable, why
		}
		return Unmet, ""
	}}
}

// SurfaceSaw is met when connection conn ("" any) of alias's session saw
// an event of type typ about question qid ("" any).
func SurfaceSaw(alias, conn, typ, qid string) Expectation {
	where := "a connection"
	if conn != "" {
		where = "connection " + conn
	}
	return Expectation{Description: fmt.Sprintf("%s of session %s is told %s for question %s", where, alias, typ, qid), Check: func(st *State) (Verdict, string) {
		s, v, why := lookup(st, alias)
		if s == nil {
			return v, why
		}
		for _, ev := range s.Surface {
			if (conn == "" || ev.Conn == conn) && ev.Type == typ && (qid == "" || ev.QuestionID == qid || (ev.QuestionID == "" && typ == SurfTaken)) {
				return Met, ""
			}
		}
		return Unmet, ""
	}}
}

// Responses is met when the agent of alias's session has received at
// least n control_responses for the request behind question qid.
func Responses(alias, qid string, n int) Expectation {
	return Expectation{Description: fmt.Sprintf("the agent of session %s receives %d control_response(s) for question %s", alias, n, qid), Check: func(st *State) (Verdict, string) {
		s, v, why := lookup(st, alias)
		if s == nil {
			return v, why
		}
		if req, ok := s.RequestOf(qid); ok && len(s.Responses(req.ID)) >= n {
			return Met, ""
		}
		return exited(s)
	}}
}

// Asked is met when the agent of alias's session has sent n AskUserQuestion
// requests.
func Asked(alias string, n int) Expectation {
	return Expectation{Description: fmt.Sprintf("the agent of session %s asks %d question(s)", alias, n), Check: func(st *State) (Verdict, string) {
		s, v, why := lookup(st, alias)
		if s == nil {
			return v, why
		}
		if len(s.AgentRequests()) >= n {
			return Met, ""
		}
		return exited(s)
	}}
}

// Turns is met when the agent of alias's session has ended n turns
// (written n results).
func Turns(alias string, n int) Expectation {
	return Expectation{Description: fmt.Sprintf("the agent of session %s ends turn %d", alias, n), Check: func(st *State) (Verdict, string) {
		s, v, why := lookup(st, alias)
		if s == nil {
			return v, why
		}
		got := 0
		for _, r := range s.Agent {
			if r.Dir == transcript.FromCLI && gjson.GetBytes(r.Msg, "type").String() == protocol.TypeResult {
				got++
			}
		}
		if got >= n {
			return Met, ""
		}
		return exited(s)
	}}
}

// Exited is met when the agent of alias's session has exited, with status
// code (any when code < 0).
func Exited(alias string, code int) Expectation {
	d := fmt.Sprintf("the agent of session %s exits", alias)
	if code >= 0 {
		d += fmt.Sprintf(" with status %d", code)
	}
	return Expectation{Description: d, Check: func(st *State) (Verdict, string) {
		s, v, why := lookup(st, alias)
		if s == nil {
			return v, why
		}
		if s.Exit == nil {
			return Unmet, ""
		}
		if code < 0 || *s.Exit == code {
			return Met, ""
		}
		return Unmeetable, fmt.Sprintf("it exited with status %d", *s.Exit)
	}}
}
