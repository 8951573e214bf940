package protocol

import (
	"encoding/json"
	"fmt"
	"strings"
)

// CLIVersion is the Claude Code release whose wire behaviour this package
// reproduces. Tool-result texts change between releases; assert on them only
// with this version pinned.
const CLIVersion = "2.1.330"

// Values of the "type" field of a line.
const (
	TypeUser                 = "user"
	TypeAssistant            = "assistant"
	TypeSystem               = "system"
	TypeResult               = "result"
	TypeControlRequest       = "control_request"
	TypeControlResponse      = "control_response"
	TypeControlCancelRequest = "control_cancel_request"
	TypeKeepAlive            = "keep_alive"
	TypeStreamEvent          = "stream_event"
)

// Subtypes of control requests, control responses and system messages.
const (
	SubtypeInitialize = "initialize"
	SubtypeCanUseTool = "can_use_tool"
	SubtypeInterrupt  = "interrupt"
	SubtypeSuccess    = "success"
	SubtypeError      = "error"
	SubtypeInit       = "init"

	// Result subtypes.
	ResultSuccess              = "success"
	ResultErrorDuringExecution = "error_during_execution"
)

// Permission behaviours.
const (
	BehaviorAllow = "allow"
	BehaviorDeny  = "deny"
)

// ToolAskUserQuestion is the built-in tool that asks the person questions.
const ToolAskUserQuestion = "AskUserQuestion"

// Envelope is the part of every line used to dispatch it.
type Envelope struct {
	Type    string `json:"type"`
	Subtype string `json:"subtype,omitempty"`
}

// ControlRequest is a request from either side. Request holds the subtype's
// payload ({"subtype": …, …}).
type ControlRequest struct {
	Type      string          `json:"type"`
	RequestID string          `json:"request_id"`
	Request   json.RawMessage `json:"request"`
}

// ControlResponse answers a ControlRequest. The request_id sits inside Response.
type ControlResponse struct {
	Type     string       `json:"type"`
	Response ResponseBody `json:"response"`
}

// ResponseBody is the body of a ControlResponse: subtype "success" with a
// Response payload, or subtype "error" with an Error text.
type ResponseBody struct {
	Subtype   string          `json:"subtype"`
	RequestID string          `json:"request_id"`
	Response  json.RawMessage `json:"response,omitempty"`
	Error     string          `json:"error,omitempty"`

	// The CLI adds these two to its initialize response only.
	PendingPermissionRequests *[]json.RawMessage `json:"pending_permission_requests,omitempty"`
	PendingUserDialogRequests *[]json.RawMessage `json:"pending_user_dialog_requests,omitempty"`
}

// ControlCancelRequest withdraws an in-flight request the sender originated.
// It gets no reply.
type ControlCancelRequest struct {
	Type      string `json:"type"`
	RequestID string `json:"request_id"`
}

// CanUseTool is the payload of a can_use_tool control request, field for field
// as the CLI writes it. AskUserQuestion requests carry RequiresUserInteraction;
// requests for tools such as Bash carry Description, PermissionSuggestions and
// BlockedPath instead.
type CanUseTool struct {
	Subtype                 string          `json:"subtype"`
	ToolName                string          `json:"tool_name"`
	DisplayName             string          `json:"display_name"`
	Input                   json.RawMessage `json:"input"`
	Description             string          `json:"description,omitempty"`
	PermissionSuggestions   json.RawMessage `json:"permission_suggestions,omitempty"`
	BlockedPath             string          `json:"blocked_path,omitempty"`
	ToolUseID               string          `json:"tool_use_id"`
	RequiresUserInteraction bool            `json:"requires_user_interaction,omitempty"`
}

// PermissionResult is the success payload of a can_use_tool response: allow
// (optionally with UpdatedInput) or deny (with Message, and Interrupt to abort
// the turn). The casing (updatedInput, toolUseID) is the CLI's; snake_case forms
// are not recognised by it.
type PermissionResult struct {
	Behavior           string          `json:"behavior"`
	UpdatedInput       json.RawMessage `json:"updatedInput,omitempty"`
	UpdatedPermissions json.RawMessage `json:"updatedPermissions,omitempty"`
	Message            *string         `json:"message,omitempty"`
	Interrupt          *bool           `json:"interrupt,omitempty"`
	ToolUseID          string          `json:"toolUseID,omitempty"`
}

// Allow reports whether r allows the tool use.
func (r *PermissionResult) Allow() bool { return r.Behavior == BehaviorAllow }

// Interrupts reports whether r is a deny that also aborts the turn.
func (r *PermissionResult) Interrupts() bool {
	return r.Behavior == BehaviorDeny && r.Interrupt != nil && *r.Interrupt
}

// DenyMessage returns the deny message, or "" if there is none.
func (r *PermissionResult) DenyMessage() string {
	if r.Message == nil {
		return ""
	}
	return *r.Message
}

// AskInput is the input of the AskUserQuestion tool, and the updatedInput a
// host answers it with.
type AskInput struct {
	Questions   []Question             `json:"questions"`
	Answers     map[string]AnswerValue `json:"answers,omitempty"`
	Annotations map[string]Annotation  `json:"annotations,omitempty"`
	Metadata    *Metadata              `json:"metadata,omitempty"`
}

// Question is one AskUserQuestion question.
type Question struct {
	Question    string   `json:"question"`
	Header      string   `json:"header"`
	Options     []Option `json:"options"`
	MultiSelect bool     `json:"multiSelect"`
}

// Option is one choice of a Question.
type Option struct {
	Label       string `json:"label"`
	Description string `json:"description"`
	Preview     string `json:"preview,omitempty"`
}

// Annotation carries per-question notes or the preview the person selected.
type Annotation struct {
	Preview string `json:"preview,omitempty"`
	Notes   string `json:"notes,omitempty"`
}

// Metadata is AskUserQuestion's optional metadata.
type Metadata struct {
	Source string `json:"source,omitempty"`
}

// AnswerValue is one answer: a string, or (CLI 2.1.330 only) an array of
// labels, which the CLI joins with ", " as it reads it.
type AnswerValue string

// UnmarshalJSON accepts a string or an array of strings.
func (a *AnswerValue) UnmarshalJSON(b []byte) error {
	labels, _, err := DecodeLabels(b)
	if err != nil {
		return err
	}
	*a = AnswerValue(JoinLabels(labels))
	return nil
}

// DecodeLabels reads an answer as people and bridges write it: a JSON
// string (one label, or free text) or an array of labels; isList says which.
func DecodeLabels(b []byte) (labels []string, isList bool, err error) {
	var s string
	if json.Unmarshal(b, &s) == nil {
		return []string{s}, false, nil
	}
	if err := json.Unmarshal(b, &labels); err != nil {
		return nil, false, fmt.Errorf("an answer must be a string or an array of strings, got %s", jsonKind(b))
	}
	return labels, true, nil
}

// MultiSelectSeparator joins the labels of a multiSelect answer.
const MultiSelectSeparator = ", "

// JoinLabels joins multiSelect labels the way the CLI expects: in the order
// selected, separated by ", " (comma and space).
func JoinLabels(labels []string) string { return strings.Join(labels, MultiSelectSeparator) }

// jsonKind names the JSON kind of a raw value for error messages.
func jsonKind(b []byte) string {
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "nothing"
	}
	switch s[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	default:
		return "number"
	}
}
