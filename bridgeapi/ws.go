package bridgeapi

import (
	"time"

	"github.com/askctl/askctl/protocol"
)

// Message types of the socket surfaces that are not events.
const (
	MsgAskResponse  = "ask_user_response" // client → server: an answer or a skip
	MsgAck          = "ask_user_ack"      // the bridge took the message (Status)
	MsgError        = "error"             // the bridge refused it (Code)
	MsgSessionTaken = "session_taken"     // another connection took the session over
)

// AckHeld is an ack's status for part of a multi-question answer, kept
// until the rest come.
const AckHeld = "held"

// WSMessage is a message from a client: ask_user_response, with the
// response in Data or at the top level.
type WSMessage struct {
	Type string      `json:"type"`
	Data *WSResponse `json:"data,omitempty"`
	WSResponse
}

// WSResponse answers (or, Cancelled, skips) one question.
type WSResponse struct {
	QuestionID string            `json:"question_id,omitempty"`
	Answers    map[string]Answer `json:"answers,omitempty"`
	Cancelled  bool              `json:"cancelled,omitempty"`
	Reason     string            `json:"reason,omitempty"`
}

// WSReply is what the bridge sends a client that is not an event: its
// reply to a message (MsgAck or MsgError), or MsgSessionTaken.
type WSReply struct {
	Type       string   `json:"type"`
	QuestionID string   `json:"question_id,omitempty"`
	SessionID  string   `json:"session_id,omitempty"`
	Status     string   `json:"status,omitempty"`
	Missing    []string `json:"missing,omitempty"`
	Code       string   `json:"code,omitempty"`
	Error      string   `json:"error,omitempty"`
}

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
//	{"type":"control_cancel_request","request_id":"q_…","status":"expired"|"answered"|"skipped"|"withdrawn","reason":"…","rule":"…"}
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

// ControlMessage is what the control surface sends for an event: a
// question's control_request, or the control_cancel_request that ends it.
type ControlMessage struct {
	Type      string      `json:"type"`
	RequestID string      `json:"request_id"`
	SessionID string      `json:"session_id,omitempty"`
	Request   *ControlAsk `json:"request,omitempty"`
	Status    string      `json:"status,omitempty"`
	Reason    string      `json:"reason,omitempty"`
	Rule      string      `json:"rule,omitempty"` // answered or skipped by a policy's rule, not a person
	Time      time.Time   `json:"time,omitzero"`
}

// ControlAsk is a forwarded can_use_tool request.
type ControlAsk struct {
	Subtype  string `json:"subtype"`
	ToolName string `json:"tool_name"`
	Input    struct {
		Questions []protocol.Question `json:"questions"`
	} `json:"input"`
}
