package fakeclaude

import (
	"encoding/json"
	"slices"
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
	outAborted                        // another call of its model response aborted the turn
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
	// askAll puts calls that run at once, and blocks until each is
	// resolved; react hears each as it ends.
	askAll(cs []toolCall, announce func(toolCall) bool, react func(toolCall, outcome))
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

// ask puts one call to the other side and blocks until it is resolved.
func (r *sdkRoute) ask(c toolCall) outcome {
	out := outcome{kind: outStopped}
	r.askAll([]toolCall{c}, func(toolCall) bool { return true }, func(_ toolCall, o outcome) { out = o })
	return out
}

// askAll puts calls that run at once to the other side, as the CLI runs
// the calls of one model response to tools it may run concurrently: each
// is announced (announce writes its tool_use; false: it needs no
// request) and its control_request sent, all before any answer; then each
// ends on its own, and react hears each as it ends, in the order they end.
// A call that aborts the turn (an interrupt, a withdrawal) withdraws the
// others still pending.
func (r *sdkRoute) askAll(cs []toolCall, announce func(toolCall) bool, react func(toolCall, outcome)) {
	f := r.f
	var pend []*live
	for _, c := range cs {
		if !announce(c) || f.stopped {
			if f.stopped {
				return
			}
			continue
		}
		id, ok := r.send(c)
		if !ok {
			react(c, outcome{kind: outStopped, requestID: id})
			return
		}
		l := &live{c: c, id: id}
		if d := c.step.CancelAfter; d > 0 && c.step.Kind != scenarios.KindMCP {
			l.cancel = time.Now().Add(d) // (an mcp step's ends its tools/call: toolTimeout)
		}
		if d := c.step.ExitAfter; d > 0 {
			l.exit = time.Now().Add(d)
		}
		pend = append(pend, l)
	}
	take := func(i int) *live { // call i is no longer pending
		l := pend[i]
		pend = slices.Delete(pend, i, i+1)
		return l
	}
	end := func(i int, kind outcomeKind) {
		l := take(i)
		if kind != outAnswered && kind != outStopped {
			r.requests[l.id].state = cancelled
		}
		react(l.c, outcome{kind: kind, requestID: l.id})
	}
	endAll := func(kind outcomeKind) {
		for len(pend) > 0 {
			end(0, kind)
		}
	}
	for len(pend) > 0 {
		if f.stopped {
			endAll(outStopped)
			return
		}
		if f.aborted {
			endAll(outAborted)
			return
		}
		// The next step timer of the calls pending: only it can fire first.
		which, exit := -1, false
		var at time.Time
		for i, l := range pend {
			if !l.cancel.IsZero() && (which < 0 || l.cancel.Before(at)) {
				which, exit, at = i, false, l.cancel
			}
			if !l.exit.IsZero() && (which < 0 || l.exit.Before(at)) {
				which, exit, at = i, true, l.exit
			}
		}
		var cancelC, exitC <-chan time.Time
		var timer *time.Timer
		if which >= 0 {
			timer = time.NewTimer(time.Until(at))
			if exit {
				exitC = timer.C
			} else {
				cancelC = timer.C
			}
		}
		ids := make([]string, len(pend))
		for i, l := range pend {
			ids[i] = l.id
		}
		got, interrupted := -1, false
		var answer outcome
		w := f.wait(f.timeout, cancelC, exitC, func(l protocol.Line) bool {
			switch l.Type {
			case protocol.TypeControlResponse:
				f.echoResponse(l)
				cr, err := protocol.ParseControlResponse(l)
				if err != nil {
					f.fail(ExitProtocol, "protocol", "%v", err)
					return false
				}
				i := slices.Index(ids, cr.Response.RequestID)
				if i < 0 {
					r.stray(cr)
					return false
				}
				r.requests[ids[i]].state = answered
				got, answer = i, outcome{kind: outAnswered, requestID: ids[i], line: l, response: cr}
				return true
			case protocol.TypeControlRequest:
				if f.sdkRequest(l, ids) {
					interrupted = true
					return true
				}
			default:
				f.other(l)
			}
			return false
		})
		if timer != nil {
			timer.Stop()
		}
		switch w {
		case waitDone:
			if interrupted {
				endAll(outInterrupted)
				continue
			}
			l := take(got)
			if interrupts(answer) {
				r.withdraw(pend) // before its own result, as the CLI does
			}
			react(l.c, answer)
		case waitEOF:
			endAll(outEOF)
		case waitCancel:
			l := take(which)
			r.requests[l.id].state = cancelled
			f.send(protocol.CancelRequest(l.id))
			r.withdraw(pend)
			react(l.c, outcome{kind: outCancelled, requestID: l.id})
		case waitExit:
			end(which, outExit)
		case waitDeadline:
			f.fail(ExitTimeout, "timeout", "no answer to %s request %s within %v", pend[0].c.tool, pend[0].id, f.timeout)
			f.stopped = true
			endAll(outStopped)
		case waitStopped:
			endAll(outStopped)
		}
	}
}

// live is a call whose request is pending.
type live struct {
	c            toolCall
	id           string
	cancel, exit time.Time // the step's cancel_after and exit_after, from its ask
}

// withdraw sends a control_cancel_request for each call still pending:
// another call of the model response aborted the turn (react then writes
// their results, as outAborted).
func (r *sdkRoute) withdraw(pend []*live) {
	for _, l := range pend {
		r.f.send(protocol.CancelRequest(l.id))
	}
}

// interrupts reports whether an answer aborts the turn: a deny with
// interrupt.
func interrupts(o outcome) bool {
	if o.response == nil || o.response.Response.Subtype == protocol.SubtypeError {
		return false
	}
	pr, err := protocol.ParsePermissionResult(o.line.N, o.response.Response.Response)
	return err == nil && pr.Interrupts()
}

// send writes c's control_request; false when the run stops.
func (r *sdkRoute) send(c toolCall) (string, bool) {
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
				return "", false
			}
			payload = append(payload, extra...)
		}
		payload = append(payload, kv{"tool_use_id", c.toolUseID})
	}
	id := uuid.New()
	r.requests[id] = &request{step: st.N}
	f.send(obj{{"type", protocol.TypeControlRequest}, {"request_id", id}, {"request", payload}})
	return id, !f.stopped
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
