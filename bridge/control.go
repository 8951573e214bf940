package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/askctl/askctl/protocol"
)

// The control surface (GET /control?session_id=ID) forwards the CLI's own
// messages, as seed 001 does: a question reaches the client as the
// can_use_tool control_request the agent sent, and the client answers with a
// control_response, as an SDK would. The request_id the client sees is the
// question's id (q_…), stable across reconnects and restarts; the bridge
// maps it to the agent's request.
//
// Server → client:
//
//	{"type":"control_request","request_id":"q_…","session_id":"s_…","request":{"subtype":"can_use_tool","tool_name":"AskUserQuestion","input":{"questions":[…]}}}
//	{"type":"control_cancel_request","request_id":"q_…","status":"expired"|"answered"|"skipped"|"withdrawn","reason":"…"}
//	{"type":"session_taken","session_id":"s_…"}
//	{"type":"session_status",…}                     as on /ws, on connect and on change
//	{"type":"ask_user_ack",…} and {"type":"error",…}, as on /ws
//
// Client → server (request_id inside response as on the CLI's wire, or at
// the top level as in seed 001; updatedInput or updated_input):
//
//	{"type":"control_response","response":{"subtype":"success","request_id":"q_…","response":{"behavior":"allow","updatedInput":{"questions":[…],"answers":{"<question text>":"<label>"}}}}}
//	{"type":"control_response","response":{"subtype":"success","request_id":"q_…","response":{"behavior":"deny","message":"User skipped"}}}
//
// The answers go through the same checks as on every surface: an allow
// without an answer to every question is refused with code invalid, and the
// question stays pending. A deny skips the question with its message.

func (s *Server) control(w http.ResponseWriter, r *http.Request) {
	s.socket(w, r, dialect{name: "control", encode: controlEvent, handle: s.controlHandle})
}

type controlOut struct {
	Type      string          `json:"type"`
	RequestID string          `json:"request_id"`
	SessionID string          `json:"session_id,omitempty"`
	Request   *controlRequest `json:"request,omitempty"`
	Status    string          `json:"status,omitempty"`
	Reason    string          `json:"reason,omitempty"`
	Time      time.Time       `json:"time,omitzero"`
}

type controlRequest struct {
	Subtype  string `json:"subtype"`
	ToolName string `json:"tool_name"`
	Input    struct {
		Questions []protocol.Question `json:"questions"`
	} `json:"input"`
}

// controlEvent puts an event as the CLI's messages: a question is its
// control_request, and its end a control_cancel_request saying how it ended.
func controlEvent(e Event) (any, bool) {
	switch e.Type {
	case EventQuestion:
		req := &controlRequest{Subtype: protocol.SubtypeCanUseTool, ToolName: protocol.ToolAskUserQuestion}
		req.Input.Questions = e.Questions
		return controlOut{Type: protocol.TypeControlRequest, RequestID: e.QuestionID, SessionID: e.SessionID, Request: req}, true
	case EventTimeout:
		return controlOut{Type: protocol.TypeControlCancelRequest, RequestID: e.QuestionID, Status: QuestionExpired, Reason: e.Error, Time: e.Time}, true
	case EventAnswered:
		return controlOut{Type: protocol.TypeControlCancelRequest, RequestID: e.QuestionID, Status: QuestionAnswered, Time: e.Time}, true
	case EventSkipped:
		return controlOut{Type: protocol.TypeControlCancelRequest, RequestID: e.QuestionID, Status: QuestionSkipped, Reason: e.Reason, Time: e.Time}, true
	case EventWithdrawn:
		return controlOut{Type: protocol.TypeControlCancelRequest, RequestID: e.QuestionID, Status: QuestionWithdrawn, Reason: e.Reason, Time: e.Time}, true
	case EventStatus:
		return e, true // not a CLI message: the session's state, as on /ws
	}
	return nil, false
}

// controlIn is a client's control_response, in either placement of
// request_id and either spelling of updatedInput.
type controlIn struct {
	Type      string `json:"type"`
	RequestID string `json:"request_id"`
	Response  struct {
		Subtype   string `json:"subtype"`
		RequestID string `json:"request_id"`
		Error     string `json:"error"`
		Response  struct {
			Behavior       string          `json:"behavior"`
			Message        string          `json:"message"`
			Interrupt      bool            `json:"interrupt"`
			UpdatedInput   json.RawMessage `json:"updatedInput"`
			UpdatedInputSC json.RawMessage `json:"updated_input"`
		} `json:"response"`
	} `json:"response"`
}

func (s *Server) controlHandle(ctx context.Context, c *wsClient, data []byte) wsReply {
	var m controlIn
	if err := json.Unmarshal(data, &m); err != nil {
		return wsReply{Type: "error", Code: "bad_request", Error: err.Error()}
	}
	if m.Type != protocol.TypeControlResponse {
		return wsReply{Type: "error", Code: "bad_request", Error: fmt.Sprintf("unknown message type %q (want control_response)", m.Type)}
	}
	qid := m.Response.RequestID
	if qid == "" {
		qid = m.RequestID
	}
	if qid == "" {
		return wsReply{Type: "error", Code: "bad_request", Error: "request_id is missing"}
	}
	if r, ok := s.mayAnswer(ctx, c, qid); !ok {
		return r
	}
	res := m.Response.Response
	switch {
	case m.Response.Subtype == "error":
		return wsReply{Type: "error", QuestionID: qid, Code: "invalid", Error: "an error response does not answer a question: send a deny to skip it"}
	case m.Response.Subtype != "success":
		return wsReply{Type: "error", QuestionID: qid, Code: "bad_request", Error: fmt.Sprintf("response.subtype %q: want success", m.Response.Subtype)}
	case res.Behavior == "deny":
		if _, err := s.B.Skip(ctx, qid, res.Message, res.Interrupt); err != nil {
			return wsError(qid, err)
		}
		return wsReply{Type: "ask_user_ack", QuestionID: qid, Status: QuestionSkipped}
	case res.Behavior != "allow":
		return wsReply{Type: "error", QuestionID: qid, Code: "bad_request", Error: fmt.Sprintf("response.response.behavior %q: want allow or deny", res.Behavior)}
	}
	in := res.UpdatedInput
	if len(in) == 0 {
		in = res.UpdatedInputSC
	}
	var ui struct {
		Answers map[string]Answer `json:"answers"`
	}
	if len(in) > 0 {
		if err := json.Unmarshal(in, &ui); err != nil {
			return wsReply{Type: "error", QuestionID: qid, Code: "bad_request", Error: "updatedInput: " + err.Error()}
		}
	}
	if len(ui.Answers) == 0 {
		return wsReply{Type: "error", QuestionID: qid, Code: "invalid", Error: "an allow must carry updatedInput.answers with an answer to every question; send a deny to skip"}
	}
	r, err := s.B.Answer(ctx, qid, ui.Answers)
	if err != nil {
		return wsError(qid, err)
	}
	if r.Held {
		return wsReply{Type: "ask_user_ack", QuestionID: qid, Status: "held", Missing: r.Missing}
	}
	return wsReply{Type: "ask_user_ack", QuestionID: qid, Status: QuestionAnswered}
}
