package protocol

import (
	"encoding/json"
	"errors"
	"fmt"
)

// This file builds the messages the SDK side writes, and the permission
// results a person's reply becomes. Everything in askctl that writes one of
// these goes through here.

// DefaultSessionID is the session_id the SDKs put on prompts before the CLI
// has announced one.
const DefaultSessionID = "default"

func mustMarshal(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("protocol: marshalling %T: %v", v, err)) // only fixed, marshallable types reach here
	}
	return b
}

// InitializeRequest is the initialize control_request the SDKs send first.
func InitializeRequest(requestID string) json.RawMessage {
	return mustMarshal(struct {
		Type      string `json:"type"`
		RequestID string `json:"request_id"`
		Request   struct {
			Subtype string `json:"subtype"`
			Hooks   any    `json:"hooks"`
		} `json:"request"`
	}{Type: TypeControlRequest, RequestID: requestID, Request: struct {
		Subtype string `json:"subtype"`
		Hooks   any    `json:"hooks"`
	}{Subtype: SubtypeInitialize}})
}

// InterruptRequest asks the CLI to abort the current turn.
func InterruptRequest(requestID string) json.RawMessage {
	return mustMarshal(ControlRequest{Type: TypeControlRequest, RequestID: requestID, Request: mustMarshal(Envelope{Subtype: SubtypeInterrupt})})
}

// CancelRequest withdraws the sender's own pending request.
func CancelRequest(requestID string) json.RawMessage {
	return mustMarshal(ControlCancelRequest{Type: TypeControlCancelRequest, RequestID: requestID})
}

// Prompt is the user message that starts a turn, as the SDKs write it.
func Prompt(text, sessionID string) json.RawMessage {
	return mustMarshal(UserInput{Type: TypeUser, Message: UserContent{Role: "user", Content: mustMarshal(text)}, SessionID: sessionID})
}

// SuccessResponse answers requestID with payload.
func SuccessResponse(requestID string, payload any) json.RawMessage {
	return mustMarshal(ControlResponse{Type: TypeControlResponse, Response: ResponseBody{Subtype: SubtypeSuccess, RequestID: requestID, Response: mustMarshal(payload)}})
}

// ErrorResponse answers requestID with an error.
func ErrorResponse(requestID, text string) json.RawMessage {
	return mustMarshal(ControlResponse{Type: TypeControlResponse, Response: ResponseBody{Subtype: SubtypeError, RequestID: requestID, Error: text}})
}

// Rebind returns the control_response resp answering requestID instead; a
// recorded response is replayed this way. Every other byte of the response
// body is kept.
func Rebind(resp json.RawMessage, requestID string) (json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(resp, &m); err != nil {
		return nil, fmt.Errorf("rebinding a control_response: %w", err)
	}
	var body map[string]json.RawMessage
	if err := json.Unmarshal(m["response"], &body); err != nil || body == nil {
		return nil, errors.New("rebinding a control_response: no response object")
	}
	body["request_id"] = mustMarshal(requestID)
	m["response"] = mustMarshal(body)
	return mustMarshal(m), nil
}

// Allow is an allow that runs the tool with updatedInput.
func Allow(updatedInput json.RawMessage) PermissionResult {
	return PermissionResult{Behavior: BehaviorAllow, UpdatedInput: updatedInput}
}

// Deny declines the tool use with a reason for the model; interrupt also
// aborts the turn.
func Deny(message string, interrupt bool) PermissionResult {
	return PermissionResult{Behavior: BehaviorDeny, Message: &message, Interrupt: &interrupt}
}

// Reply is a person's reaction to one can_use_tool request, in a person's
// terms. It is the one mapping between what a person does and the permission
// result on the wire: [Reply.Result] builds the result, [ReadReply] reads a
// control_response back into a Reply.
type Reply struct {
	// Answers maps each question's full text to its answer: an option label,
	// free text, or multiSelect labels joined with ", " ([JoinLabels]).
	Answers map[string]string `json:"answers,omitempty"`
	// Annotations maps question text to notes or the selected preview.
	Annotations map[string]Annotation `json:"annotations,omitempty"`
	// Allow, with no Answers, approves as asked: a tool runs with its own
	// input; an AskUserQuestion gets an allow with no answers (what a broken
	// bridge sends — kept so recordings of one replay).
	Allow bool `json:"allow,omitempty"`
	// Skip declines, with Message as the reason the model reads.
	Skip    bool   `json:"skip,omitempty"`
	Message string `json:"message,omitempty"`
	// Interrupt makes a skip also abort the turn.
	Interrupt bool `json:"interrupt,omitempty"`
	// Error is set when the SDK side answered with an error response
	// instead of a permission result (ReadReply only).
	Error string `json:"error,omitempty"`
}

// Result is the permission result that carries r for a request to use tool
// with input. For AskUserQuestion the questions are passed back unchanged,
// byte for byte, with the answers.
func (r Reply) Result(tool string, input json.RawMessage) (PermissionResult, error) {
	switch {
	case r.Skip:
		return Deny(r.Message, r.Interrupt), nil
	case tool != ToolAskUserQuestion:
		return Allow(input), nil
	}
	var in struct {
		Questions json.RawMessage `json:"questions"`
	}
	if err := json.Unmarshal(input, &in); err != nil || len(in.Questions) == 0 {
		return PermissionResult{}, errors.New("the AskUserQuestion input has no questions")
	}
	answers := r.Answers
	if answers == nil {
		answers = map[string]string{}
	}
	upd := struct {
		Questions   json.RawMessage       `json:"questions"`
		Answers     map[string]string     `json:"answers"`
		Annotations map[string]Annotation `json:"annotations,omitempty"`
	}{in.Questions, answers, r.Annotations}
	return Allow(mustMarshal(upd)), nil
}

// Response is the control_response that carries r for the request.
func (r Reply) Response(requestID, tool string, input json.RawMessage) (json.RawMessage, error) {
	if r.Error != "" {
		return ErrorResponse(requestID, r.Error), nil
	}
	pr, err := r.Result(tool, input)
	if err != nil {
		return nil, err
	}
	return SuccessResponse(requestID, pr), nil
}

// ReplyOf reads a permission result back into a person's reply.
func ReplyOf(pr *PermissionResult) Reply {
	if !pr.Allow() {
		return Reply{Skip: true, Message: pr.DenyMessage(), Interrupt: pr.Interrupts()}
	}
	var in AskInput
	if pr.UpdatedInput != nil && json.Unmarshal(pr.UpdatedInput, &in) == nil && len(in.Answers) > 0 {
		r := Reply{Answers: make(map[string]string, len(in.Answers)), Annotations: in.Annotations}
		for q, a := range in.Answers {
			r.Answers[q] = string(a)
		}
		return r
	}
	return Reply{Allow: true}
}

// ReadReply reads the control_response on line l back into a person's
// reply: an error response, a deny, or an allow with its answers.
func ReadReply(l Line) (Reply, *ControlResponse, error) {
	cr, err := ParseControlResponse(l)
	if err != nil {
		return Reply{}, nil, err
	}
	if cr.Response.Subtype == SubtypeError {
		return Reply{Error: cr.Response.Error}, cr, nil
	}
	pr, err := ParsePermissionResult(l.N, cr.Response.Response)
	if err != nil {
		return Reply{}, cr, err
	}
	return ReplyOf(pr), cr, nil
}
