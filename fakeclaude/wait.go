package fakeclaude

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/askctl/askctl/protocol"
)

// This file is how fakeclaude waits for the SDK side: one wait helper, and
// what it does with each line that is not the one it waits for.

// waitEnd is why a wait ended.
type waitEnd int

const (
	waitDone     waitEnd = iota // handle took the line it waited for
	waitEOF                     // stdin closed
	waitDeadline                // the wait's deadline passed
	waitCancel                  // the cancel timer fired (a step's cancel_after)
	waitExit                    // the exit timer fired (a step's exit_after)
	waitStopped                 // the run stops: ctx done, a fatal line, stdout gone; f.stopped is set
)

// outputGrace is how long a wait goes on after the SDK side closed its end of
// stdout, for the stdin EOF that usually follows (a peer that died closes
// both); with none, the closed stdout is the failure.
const outputGrace = 100 * time.Millisecond

// wait reads stdin and hands each line to handle until handle returns true,
// stdin closes, d passes, one of the step timers fires, or the run stops.
// Every wait for the SDK side goes through here.
func (f *fake) wait(d time.Duration, cancel, exit <-chan time.Time, handle func(protocol.Line) bool) waitEnd {
	if f.in == nil {
		return waitEOF
	}
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	gone := f.opts.OutputGone
	var grace <-chan time.Time
	for {
		select {
		case <-f.ctx.Done():
			f.stop()
			return waitStopped
		case <-deadline.C:
			return waitDeadline
		case <-cancel:
			return waitCancel
		case <-exit:
			return waitExit
		case <-gone:
			gone, grace = nil, time.After(outputGrace)
		case <-grace:
			f.outDead = true
			f.fail(ExitEarlyEOF, "stdout", "the SDK side closed its end of stdout")
			f.stopped = true
			return waitStopped
		case in := <-f.in:
			switch {
			case in.eof:
				f.in = nil
				return waitEOF
			case in.err != nil:
				f.badLine(in.err)
				return waitStopped
			}
			if handle(in.line) {
				return waitDone
			}
			if f.stopped {
				return waitStopped
			}
		}
	}
}

// waitPrompt waits for the user message that starts turn n.
func (f *fake) waitPrompt(n int) (protocol.Line, bool) {
	if len(f.queued) > 0 {
		l := f.queued[0]
		f.queued = f.queued[1:]
		return l, true
	}
	var prompt protocol.Line
	switch f.wait(f.timeout, nil, nil, func(l protocol.Line) bool {
		if l.Type == protocol.TypeUser {
			prompt = l
			return true
		}
		f.between(l)
		return false
	}) {
	case waitDone:
		return prompt, true
	case waitEOF:
		f.fail(ExitEarlyEOF, "eof", "stdin closed before the prompt of turn %d", n)
	case waitDeadline:
		f.fail(ExitTimeout, "timeout", "no prompt for turn %d within %v", n, f.timeout)
	}
	return protocol.Line{}, false
}

// waitEOF waits, after the last turn, for stdin to close, as the real CLI does.
func (f *fake) waitEOF() {
	linger := f.opts.Linger
	if linger <= 0 {
		linger = f.timeout
	}
	// With the scenario played, a stdout the SDK side closed is no failure.
	f.opts.OutputGone = nil
	end := f.wait(linger, nil, nil, func(l protocol.Line) bool {
		if l.Type != protocol.TypeUser {
			f.between(l)
			return false
		}
		f.fail(ExitExpectation, "expectation", "unscripted prompt on stdin line %d: the scenario has no more turns", l.N)
		f.startTurn(l)
		f.send(f.errorResult("fakeclaude: the scenario has no turn for this prompt"))
		return false
	})
	if end == waitDeadline {
		f.note("stdin still open %v after the scenario ended; exiting", linger)
	}
}

// between handles a line that is not a prompt while no request is pending.
func (f *fake) between(l protocol.Line) {
	switch l.Type {
	case protocol.TypeControlRequest:
		f.sdkRequest(l, nil)
	case protocol.TypeControlResponse:
		f.echoResponse(l)
		if cr, err := protocol.ParseControlResponse(l); err != nil {
			f.fail(ExitProtocol, "protocol", "%v", err)
		} else {
			f.route.stray(cr)
		}
	default:
		f.other(l)
	}
}

// sdkRequest answers a control_request from the SDK side. It reports whether
// it was an interrupt that withdrew the pending requests.
func (f *fake) sdkRequest(l protocol.Line, pending []string) bool {
	cr, sub, err := protocol.ParseControlRequest(l)
	if err != nil {
		f.fail(ExitProtocol, "protocol", "%v", err)
		return false
	}
	ok := func(payload any) { f.send(protocol.SuccessResponse(cr.RequestID, payload)) }
	switch sub {
	case protocol.SubtypeInitialize:
		f.send(obj{{"type", protocol.TypeControlResponse}, {"response", obj{
			{"subtype", protocol.SubtypeSuccess}, {"request_id", cr.RequestID}, {"response", f.initResponse()},
			{"pending_permission_requests", []any{}}, {"pending_user_dialog_requests", []any{}},
		}}})
		return false
	case protocol.SubtypeInterrupt:
		for _, id := range pending {
			f.send(protocol.CancelRequest(id))
		}
		ok(obj{{"still_queued", []string{}}})
		return len(pending) > 0
	case "set_permission_mode":
		var m struct {
			Mode string `json:"mode"`
		}
		_ = json.Unmarshal(cr.Request, &m)
		f.flags.PermissionMode = m.Mode
		ok(obj{{"mode", m.Mode}})
	case "set_model":
		ok(obj{})
	case "mcp_status":
		ok(obj{{"mcpServers", []any{}}})
	default:
		f.note("unsupported control request %q answered with an error", sub)
		f.send(protocol.ErrorResponse(cr.RequestID, "Unsupported control request subtype: "+sub))
	}
	return false
}

// other handles lines that are neither responses nor requests while a request
// is pending or a turn runs.
func (f *fake) other(l protocol.Line) {
	switch l.Type {
	case protocol.TypeKeepAlive:
	case protocol.TypeUser:
		f.note("prompt on stdin line %d queued for the next turn", l.N)
		f.queued = append(f.queued, l)
	case protocol.TypeControlCancelRequest:
		f.note("control_cancel_request from the SDK side ignored (fakeclaude sends no requests it could cancel)")
	default:
		f.note("ignored a %s line (stdin line %d)", fmt.Sprintf("%q", l.Type), l.N)
	}
}
