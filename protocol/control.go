package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// ParseControlResponse decodes a control_response line and checks its envelope:
// response is an object, its subtype is "success" or "error", and it names a
// request_id. It does not look inside the success payload.
func ParseControlResponse(l Line) (*ControlResponse, error) {
	var probe struct {
		Response json.RawMessage `json:"response"`
	}
	if err := l.Decode(&probe); err != nil {
		return nil, err
	}
	if len(probe.Response) == 0 || jsonKind(probe.Response) != "object" {
		return nil, &LineError{Line: l.N, Field: "response", Err: fmt.Errorf("want object, got %s", jsonKind(probe.Response))}
	}
	var cr ControlResponse
	if err := l.Decode(&cr); err != nil {
		return nil, err
	}
	b := cr.Response
	switch b.Subtype {
	case SubtypeSuccess, SubtypeError:
	case "":
		return nil, &LineError{Line: l.N, Field: "response.subtype", Err: errors.New(`missing (want "success" or "error")`)}
	default:
		return nil, &LineError{Line: l.N, Field: "response.subtype", Err: fmt.Errorf(`want "success" or "error", got %q`, b.Subtype)}
	}
	if b.RequestID == "" {
		return nil, &LineError{Line: l.N, Field: "response.request_id", Err: errors.New("missing")}
	}
	return &cr, nil
}

// ParseControlRequest decodes a control_request line and its subtype.
func ParseControlRequest(l Line) (*ControlRequest, string, error) {
	var cr ControlRequest
	if err := l.Decode(&cr); err != nil {
		return nil, "", err
	}
	if cr.RequestID == "" {
		return nil, "", &LineError{Line: l.N, Field: "request_id", Err: errors.New("missing")}
	}
	var sub struct {
		Subtype string `json:"subtype"`
	}
	if len(cr.Request) == 0 || jsonKind(cr.Request) != "object" {
		return nil, "", &LineError{Line: l.N, Field: "request", Err: fmt.Errorf("want object, got %s", jsonKind(cr.Request))}
	}
	if err := json.Unmarshal(cr.Request, &sub); err != nil {
		return nil, "", fieldError(l.N, "request", err)
	}
	if sub.Subtype == "" {
		return nil, "", &LineError{Line: l.N, Field: "request.subtype", Err: errors.New("missing")}
	}
	return &cr, sub.Subtype, nil
}

// ParsePermissionResult decodes the success payload of a can_use_tool response
// and checks it against the CLI's schema: behavior "allow" (updatedInput, if
// present, an object) or "deny" (message a string). Field paths in errors are
// relative to the control_response line ("response.response.behavior").
//
// The CLI does not fail on an invalid result: it turns it into a deny with
// [InvalidPermissionResultText]. Callers that mimic the CLI do the same.
func ParsePermissionResult(n int, payload json.RawMessage) (*PermissionResult, error) {
	const at = "response.response"
	if len(payload) == 0 || jsonKind(payload) != "object" {
		return nil, &LineError{Line: n, Field: at, Err: fmt.Errorf("want a permission result object, got %s", jsonKind(payload))}
	}
	var pr PermissionResult
	if err := json.Unmarshal(payload, &pr); err != nil {
		return nil, fieldError(n, at, err)
	}
	switch pr.Behavior {
	case BehaviorAllow:
		if pr.UpdatedInput != nil && !isNull(pr.UpdatedInput) && jsonKind(pr.UpdatedInput) != "object" {
			return nil, &LineError{Line: n, Field: at + ".updatedInput", Err: fmt.Errorf("want object, got %s", jsonKind(pr.UpdatedInput))}
		}
	case BehaviorDeny:
		if pr.Message == nil {
			return nil, &LineError{Line: n, Field: at + ".message", Err: errors.New("missing: a deny needs a message")}
		}
	case "":
		return nil, &LineError{Line: n, Field: at + ".behavior", Err: errors.New(`missing (want "allow" or "deny")`)}
	default:
		return nil, &LineError{Line: n, Field: at + ".behavior", Err: fmt.Errorf(`want "allow" or "deny", got %q`, pr.Behavior)}
	}
	return &pr, nil
}

// EffectiveInput returns the input the CLI runs the tool with after an allow:
// the updatedInput when it is a non-empty object, else the original input.
func (r *PermissionResult) EffectiveInput(original json.RawMessage) json.RawMessage {
	if r.UpdatedInput == nil || isNull(r.UpdatedInput) {
		return original
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(r.UpdatedInput, &m) != nil || len(m) == 0 {
		return original
	}
	return r.UpdatedInput
}

// ParseAskInput decodes AskUserQuestion input (or an updatedInput) and checks
// it against the parts of the tool's schema that decide what the CLI does. The
// problem text of a missing questions array is the CLI's own.
func ParseAskInput(raw json.RawMessage) (*AskInput, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("want an object, got %s", jsonKind(raw))
	}
	if q, ok := m["questions"]; !ok || isNull(q) {
		return nil, &SchemaError{Field: "questions", Problem: "The required parameter `questions` is missing"}
	} else if jsonKind(q) != "array" {
		return nil, &SchemaError{Field: "questions", Problem: fmt.Sprintf("The parameter `questions` type is expected as `array` but provided as `%s`", jsonKind(q))}
	}
	if a, ok := m["answers"]; ok && !isNull(a) && jsonKind(a) != "object" {
		return nil, &SchemaError{Field: "answers", Problem: fmt.Sprintf("The parameter `answers` type is expected as `object` but provided as `%s`", jsonKind(a))}
	}
	var in AskInput
	if err := json.Unmarshal(raw, &in); err != nil {
		var te *json.UnmarshalTypeError
		field := ""
		if errors.As(err, &te) {
			field = te.Field
		}
		return nil, &SchemaError{Field: field, Problem: err.Error()}
	}
	return &in, nil
}

// SchemaError is an input that fails a tool's input schema.
type SchemaError struct {
	Field   string
	Problem string
}

func (e *SchemaError) Error() string {
	if e.Field == "" {
		return e.Problem
	}
	return fmt.Sprintf("field %q: %s", e.Field, e.Problem)
}

func isNull(raw json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(raw), []byte("null")) }
