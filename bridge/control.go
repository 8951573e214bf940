package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/askctl/askctl/bridgeapi"
	"github.com/askctl/askctl/protocol"
)

func (s *Server) control(w http.ResponseWriter, r *http.Request) {
	s.socket(w, r, dialect{name: "control", encode: controlEvent, handle: s.controlHandle})
}

// controlEvent puts an event as the CLI's messages: a question is its
// control_request, and its end a control_cancel_request saying how it ended.
func controlEvent(e bridgeapi.Event) (any, bool) {
	switch e.Type {
	case bridgeapi.EventQuestion:
		req := &bridgeapi.ControlAsk{Subtype: protocol.SubtypeCanUseTool, ToolName: protocol.ToolAskUserQuestion}
		req.Input.Questions = e.Questions
		return bridgeapi.ControlMessage{Type: protocol.TypeControlRequest, RequestID: e.QuestionID, SessionID: e.SessionID, Request: req}, true
	case bridgeapi.EventTimeout:
		status := bridgeapi.QuestionExpired
		if defect("control-timeout-status-cancelled") {
			status = bridgeapi.QuestionCancelled
		}
		return bridgeapi.ControlMessage{Type: protocol.TypeControlCancelRequest, RequestID: e.QuestionID, Status: status, Reason: e.Error, Time: e.Time}, true
	case bridgeapi.EventAnswered:
		return bridgeapi.ControlMessage{Type: protocol.TypeControlCancelRequest, RequestID: e.QuestionID, Status: bridgeapi.QuestionAnswered, Rule: e.Rule, Time: e.Time}, true
	case bridgeapi.EventSkipped:
		return bridgeapi.ControlMessage{Type: protocol.TypeControlCancelRequest, RequestID: e.QuestionID, Status: bridgeapi.QuestionSkipped, Reason: e.Reason, Rule: e.Rule, Time: e.Time}, true
	case bridgeapi.EventWithdrawn:
		if defect("control-withdraw-unsent") {
			return nil, false // a control_cancel_request only for what a person or the deadline settled
		}
		return bridgeapi.ControlMessage{Type: protocol.TypeControlCancelRequest, RequestID: e.QuestionID, Status: bridgeapi.QuestionWithdrawn, Reason: e.Reason, Time: e.Time}, true
	case bridgeapi.EventStatus:
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

func (s *Server) controlHandle(ctx context.Context, c *wsClient, data []byte) bridgeapi.WSReply {
	var m controlIn
	if err := json.Unmarshal(data, &m); err != nil {
		return bridgeapi.WSReply{Type: bridgeapi.MsgError, Code: "bad_request", Error: err.Error()}
	}
	if m.Type != protocol.TypeControlResponse {
		return bridgeapi.WSReply{Type: bridgeapi.MsgError, Code: "bad_request", Error: fmt.Sprintf("unknown message type %q (want control_response)", m.Type)}
	}
	qid := m.Response.RequestID
	if qid == "" {
		qid = m.RequestID
	}
	if qid == "" {
		return bridgeapi.WSReply{Type: bridgeapi.MsgError, Code: "bad_request", Error: "request_id is missing"}
	}
	if r, ok := s.mayAnswer(ctx, c, qid); !ok {
		return r
	}
	res := m.Response.Response
	switch {
	case m.Response.Subtype == "error":
		return bridgeapi.WSReply{Type: bridgeapi.MsgError, QuestionID: qid, Code: "invalid", Error: "an error response does not answer a question: send a deny to skip it"}
	case m.Response.Subtype != "success":
		return bridgeapi.WSReply{Type: bridgeapi.MsgError, QuestionID: qid, Code: "bad_request", Error: fmt.Sprintf("response.subtype %q: want success", m.Response.Subtype)}
	case res.Behavior == "deny":
		if _, err := s.B.Skip(ctx, qid, res.Message, res.Interrupt); err != nil {
			return wsError(qid, err)
		}
		return bridgeapi.WSReply{Type: bridgeapi.MsgAck, QuestionID: qid, Status: bridgeapi.QuestionSkipped}
	case res.Behavior != "allow":
		return bridgeapi.WSReply{Type: bridgeapi.MsgError, QuestionID: qid, Code: "bad_request", Error: fmt.Sprintf("response.response.behavior %q: want allow or deny", res.Behavior)}
	}
	in := res.UpdatedInput
	if len(in) == 0 {
		in = res.UpdatedInputSC
	}
	var ui struct {
		Answers map[string]bridgeapi.Answer `json:"answers"`
	}
	if len(in) > 0 {
		if err := json.Unmarshal(in, &ui); err != nil {
			return bridgeapi.WSReply{Type: bridgeapi.MsgError, QuestionID: qid, Code: "bad_request", Error: "updatedInput: " + err.Error()}
		}
	}
	if len(ui.Answers) == 0 {
		return bridgeapi.WSReply{Type: bridgeapi.MsgError, QuestionID: qid, Code: "invalid", Error: "an allow must carry updatedInput.answers with an answer to every question; send a deny to skip"}
	}
	r, err := s.B.Answer(ctx, qid, ui.Answers)
	if err != nil {
		return wsError(qid, err)
	}
	if r.Held {
		return bridgeapi.WSReply{Type: bridgeapi.MsgAck, QuestionID: qid, Status: bridgeapi.AckHeld, Missing: r.Missing}
	}
	return bridgeapi.WSReply{Type: bridgeapi.MsgAck, QuestionID: qid, Status: bridgeapi.QuestionAnswered}
}
