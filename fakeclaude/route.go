package fakeclaude

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/askctl/askctl/internal/uuid"
	"github.com/askctl/askctl/protocol"
	"github.com/askctl/askctl/scenarios"
)

// This file is how a question is put to the other side. A route asks and
// returns what came back; react.go turns that into what the CLI writes. The
// SDK route is can_use_tool over the control protocol; an MCP route (a
// tools/call to a bridge's ask_user server) will sit beside it.

// toolCall is one tool use the scenario makes.
type toolCall struct {
	step      *scenarios.Step
	toolUseID string
	tool      string
	input     json.RawMessage
}

// outcomeKind is how a question ended.
type outcomeKind int

const (
	outAnswered    outcomeKind = iota // a response came (line, response)
	outInterrupted                    // the SDK side interrupted the turn
	outCancelled                      // the agent withdrew it (cancel_after)
	outEOF                            // stdin closed while it was pending
	outExit                           // the scenario ends the agent (exit_after)
	outStopped                        // the run stops (deadline, signal, fatal line)
)

type outcome struct {
	kind      outcomeKind
	requestID string
	line      protocol.Line
	response  *protocol.ControlResponse
}

type route interface {
	// ask puts the call to the other side and blocks until it is resolved.
	ask(c toolCall) outcome
	// stray handles a response to no question being asked now.
	stray(cr *protocol.ControlResponse)
}

// sdkRoute asks with can_use_tool control_requests, as the CLI does with
// --permission-prompt-tool stdio.
type sdkRoute struct {
	f        *fake
	requests map[string]*request // requests sent, by request_id
}

type reqState int

const (
	pending reqState = iota
	answered
	cancelled
)

type request struct {
	step  int
	state reqState
}

func (r *sdkRoute) ask(c toolCall) outcome {
	f := r.f
	st := c.step
	payload := obj{
		{"subtype", protocol.SubtypeCanUseTool},
		{"tool_name", c.tool},
		{"display_name", c.tool},
		{"input", c.input},
	}
	if c.tool == protocol.ToolAskUserQuestion {
		payload = append(payload, kv{"tool_use_id", c.toolUseID}, kv{"requires_user_interaction", true})
	} else {
		if len(st.Tool.Request) > 0 {
			extra, err := orderedObject([]byte(strings.ReplaceAll(string(st.Tool.Request), "${CWD}", f.cwd)))
			if err != nil {
				f.fail(ExitUsage, "scenario", "tool.request: %v", err)
				f.stopped = true
				return outcome{kind: outStopped}
			}
			payload = append(payload, extra...)
		}
		payload = append(payload, kv{"tool_use_id", c.toolUseID})
	}
	id := uuid.New()
	r.requests[id] = &request{step: st.N}
	f.send(obj{{"type", protocol.TypeControlRequest}, {"request_id", id}, {"request", payload}})
	if f.stopped {
		return outcome{kind: outStopped, requestID: id}
	}
	var cancel, exit <-chan time.Time
	if st.CancelAfter > 0 {
		t := time.NewTimer(st.CancelAfter)
		defer t.Stop()
		cancel = t.C
	}
	if st.ExitAfter > 0 {
		t := time.NewTimer(st.ExitAfter)
		defer t.Stop()
		exit = t.C
	}
	out := outcome{requestID: id}
	end := f.wait(f.timeout, cancel, exit, func(l protocol.Line) bool {
		switch l.Type {
		case protocol.TypeControlResponse:
			f.echoResponse(l)
			cr, err := protocol.ParseControlResponse(l)
			if err != nil {
				f.fail(ExitProtocol, "protocol", "%v", err)
				return false
			}
			if cr.Response.RequestID != id {
				r.stray(cr)
				return false
			}
			r.requests[id].state = answered
			out.kind, out.line, out.response = outAnswered, l, cr
			return true
		case protocol.TypeControlRequest:
			if f.sdkRequest(l, id) {
				out.kind = outInterrupted
				return true
			}
		default:
			f.other(l)
		}
		return false
	})
	switch end {
	case waitEOF:
		out.kind = outEOF
	case waitCancel:
		out.kind = outCancelled
	case waitExit:
		out.kind = outExit
	case waitDeadline:
		f.fail(ExitTimeout, "timeout", "no answer to %s request %s within %v", c.tool, id, f.timeout)
		f.stopped = true
		out.kind = outStopped
	case waitStopped:
		out.kind = outStopped
	}
	if out.kind != outAnswered && out.kind != outStopped {
		r.requests[id].state = cancelled
	}
	return out
}

// stray handles a control_response that is not for the request being waited on.
func (r *sdkRoute) stray(cr *protocol.ControlResponse) {
	f := r.f
	id := cr.Response.RequestID
	req, ok := r.requests[id]
	switch {
	case !ok:
		f.fail(ExitProtocol, "protocol", "control_response for unknown request_id %q", id)
	case req.state == answered:
		f.fail(ExitProtocol, "protocol", "second control_response for request %s (step %d): the agent takes exactly one", id, req.step)
	case req.state == cancelled:
		var pr protocol.PermissionResult
		_ = json.Unmarshal(cr.Response.Response, &pr)
		if pr.Allow() {
			f.fail(ExitProtocol, "protocol", "an allow arrived for request %s (step %d) after it was cancelled: late answers must not reach the agent", id, req.step)
		} else {
			f.note("late response to cancelled request %s tolerated (the TypeScript SDK sends one)", id)
		}
		req.state = answered
	}
}
