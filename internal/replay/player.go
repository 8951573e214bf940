// Package replay plays the SDK side of a scenario against an agent — the
// real claude CLI or fakeclaude — and reports where the agent's messages
// differ from what the scenario says they should be.
//
// The SDK side is what a bridge would write to the agent's stdin: initialize,
// the prompt of each turn, and the person's part (answers, skips, or silence)
// as control_responses to the agent's can_use_tool requests. A [Plan] holds it;
// [PlanFor] takes it from a recorded session's wire lines or from a
// hand-written scenario's steps, and [Play] runs it through an [sdk.Session],
// the plan being the session's source of answers.
package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/askctl/askctl/protocol"
	"github.com/askctl/askctl/scenarios"
	"github.com/askctl/askctl/sdk"
	"github.com/askctl/askctl/transcript"
)

// Plan is the SDK side of a session.
type Plan struct {
	Init  json.RawMessage // the initialize control_request
	Turns []Turn
}

// Turn is one prompt and the answers to the requests the agent makes in it,
// in order.
type Turn struct {
	Prompt  json.RawMessage
	Answers []Answer
}

// Answer is the SDK side's reaction to one can_use_tool request: a reply, a
// recorded response, an interrupt, an end of the agent, or nothing.
type Answer struct {
	// Reply is the person's part, built into a control_response for the
	// request (hand-written scenarios).
	Reply *protocol.Reply
	// Response is a recorded control_response, rebound to the request.
	Response json.RawMessage
	// After is how long to wait before answering.
	After time.Duration
	// InterruptAfter, with no reply, sends an interrupt control_request
	// this long after the request: how a scenario's cancel_after is played
	// against the real CLI, which withdraws requests only when interrupted.
	InterruptAfter time.Duration
	// KillAfter, with no reply, ends the agent process this long after the
	// request: how a scenario's exit_after is played against the real CLI.
	KillAfter time.Duration
	// CloseInput, with no reply, closes the agent's stdin: a silent user
	// with neither cancel_after nor exit_after (a bridge with no deny path).
	CloseInput bool
}

// PlanFor returns the SDK side of sc: from its wire lines when it is recorded,
// else from its steps. agentCancels says the agent withdraws requests by
// itself (fakeclaude plays cancel_after and exit_after); when false the plan
// interrupts or kills the agent at those times instead.
func PlanFor(sc *scenarios.Scenario, agentCancels bool) (Plan, error) {
	if sc.Route == scenarios.RouteMCP {
		// Print mode: the prompt is an argument, and the scripted MCP
		// server plays the person (see MCPScript).
		for _, st := range sc.Steps {
			if st.Kind == scenarios.KindMCP && len(sc.Wire) == 0 {
				if _, err := scriptedResult(&st); err != nil {
					return Plan{}, fmt.Errorf("%s:%w", sc.File, err)
				}
			}
		}
		return Plan{}, nil
	}
	if len(sc.Wire) > 0 {
		return planFromWire(sc.Wire)
	}
	return planFromSteps(sc, agentCancels)
}

func planFromSteps(sc *scenarios.Scenario, agentCancels bool) (Plan, error) {
	p := Plan{Init: protocol.InitializeRequest("req_1")}
	for _, turn := range sc.Turns() {
		t := Turn{Prompt: protocol.Prompt(turn[0].Prompt, protocol.DefaultSessionID)}
		for i := 1; i < len(turn); i++ {
			st := &turn[i]
			if st.Kind != scenarios.KindAsk && st.Kind != scenarios.KindTool {
				continue
			}
			u := st.User
			if u == nil {
				return Plan{}, fmt.Errorf("%s:%d: the step has no user part to play (add \"user\")", sc.File, st.Line)
			}
			a := Answer{After: time.Duration(u.After)}
			switch {
			case u.Silent && st.CancelAfter == 0 && st.ExitAfter == 0:
				a.CloseInput = true
			case u.Silent && !agentCancels:
				a.InterruptAfter, a.KillAfter = st.CancelAfter, st.ExitAfter
			case u.Silent:
			default:
				r := u.Reply()
				a.Reply = &r
			}
			t.Answers = append(t.Answers, a)
		}
		p.Turns = append(p.Turns, t)
	}
	return p, nil
}

// planFromWire takes the SDK side from a recording: every to_cli line, with
// each control_response tied to the can_use_tool request it answered.
func planFromWire(wire []transcript.Record) (Plan, error) {
	var p Plan
	askedAt := map[string]time.Time{} // request_id → when the agent asked
	var order []string                // request ids in the order asked
	for i, r := range wire {
		if !r.IsWire() {
			continue
		}
		l, err := protocol.DecodeLine(i+1, r.Msg)
		if err != nil {
			continue // kept byte-exact in the recording; not a line the SDK side can replay
		}
		if r.Dir == transcript.FromCLI {
			if l.Type == protocol.TypeControlRequest {
				if cr, sub, err := protocol.ParseControlRequest(l); err == nil && sub == protocol.SubtypeCanUseTool {
					askedAt[cr.RequestID] = r.T
					order = append(order, cr.RequestID)
				}
			}
			continue
		}
		switch l.Type {
		case protocol.TypeUser:
			p.Turns = append(p.Turns, Turn{Prompt: r.Msg})
		case protocol.TypeControlResponse:
			if len(p.Turns) == 0 {
				return Plan{}, fmt.Errorf("wire record %d: a control_response before any prompt", i+1)
			}
			cr, err := protocol.ParseControlResponse(l)
			if err != nil {
				return Plan{}, fmt.Errorf("wire record %d: %w", i+1, err)
			}
			t := &p.Turns[len(p.Turns)-1]
			a := Answer{Response: r.Msg}
			if at, ok := askedAt[cr.Response.RequestID]; ok && !r.T.IsZero() && !at.IsZero() {
				a.After = r.T.Sub(at)
			}
			t.Answers = append(t.Answers, a)
		case protocol.TypeControlRequest:
			_, sub, err := protocol.ParseControlRequest(l)
			switch {
			case err != nil:
			case sub == protocol.SubtypeInitialize && p.Init == nil:
				p.Init = r.Msg
			case sub == protocol.SubtypeInterrupt && len(p.Turns) > 0 && len(order) > 0:
				t := &p.Turns[len(p.Turns)-1]
				a := Answer{InterruptAfter: time.Millisecond}
				if at := askedAt[order[len(order)-1]]; !r.T.IsZero() && !at.IsZero() {
					a.InterruptAfter = max(r.T.Sub(at), time.Millisecond)
				}
				t.Answers = append(t.Answers, a)
			}
		}
	}
	if p.Init == nil {
		return Plan{}, errors.New("the recording has no initialize request")
	}
	if len(p.Turns) == 0 {
		return Plan{}, errors.New("the recording has no prompt")
	}
	return p, nil
}

// PlayOptions tunes Play.
type PlayOptions struct {
	// Timeout bounds the whole session; zero means one minute.
	Timeout time.Duration
	// Kill ends the agent process, for answers with KillAfter.
	Kill func()
	// Sink receives every line both ways as it happens.
	Sink transcript.Sink
	// NoDelays answers at once instead of waiting Answer.After.
	NoDelays bool
}

// ErrSessionTimeout is the cause when a session outlasts PlayOptions.Timeout.
var ErrSessionTimeout = errors.New("session timed out")

// Play runs plan against an agent: it writes to stdin, reads stdout until the
// agent closes it, and returns every line both ways. It closes stdin after the
// last turn's result, as the SDKs do with a one-shot prompt.
func Play(ctx context.Context, plan Plan, stdin io.WriteCloser, stdout io.Reader, opts PlayOptions) ([]transcript.Record, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = time.Minute
	}
	if len(plan.Turns) == 0 {
		return nil, errors.New("the plan has no turn to play (route \"mcp\" scenarios are played in print mode, with PlayPrint)")
	}
	ctx, cancel := context.WithTimeoutCause(ctx, opts.Timeout, ErrSessionTimeout)
	defer cancel()
	var (
		mu   sync.Mutex
		recs []transcript.Record
	)
	sink := transcript.Func(func(r transcript.Record) error {
		mu.Lock()
		recs = append(recs, r)
		mu.Unlock()
		if opts.Sink != nil {
			_ = opts.Sink.Write(r)
		}
		return nil
	})
	snapshot := func() []transcript.Record {
		mu.Lock()
		defer mu.Unlock()
		return append([]transcript.Record(nil), recs...)
	}
	src := &planSource{plan: plan, opts: opts, sink: sink}
	s, err := sdk.Start(ctx, stdin, stdout, src, sdk.Options{Init: plan.Init, Sink: sink, OnResult: src.result})
	if err != nil {
		return snapshot(), err
	}
	if err := s.Send(plan.Turns[0].Prompt); err != nil {
		s.CloseInput()
		return snapshot(), err
	}
	err = s.Wait()
	s.CloseInput()
	if err != nil && opts.Kill != nil {
		opts.Kill()
	}
	return snapshot(), err
}

// planSource answers each request with the plan's next answer for its turn,
// and sends the next prompt when a turn ends.
type planSource struct {
	plan Plan
	opts PlayOptions
	sink transcript.Sink
}

func (p *planSource) event(kind, text string) {
	_ = p.sink.Write(transcript.Record{T: time.Now(), Event: kind, Text: text})
}

func (p *planSource) Ask(s *sdk.Session, r sdk.Request) {
	if r.Turn >= len(p.plan.Turns) || r.Index >= len(p.plan.Turns[r.Turn].Answers) {
		p.event(transcript.EventError, "the agent asked, and the scenario has no answer for it: leaving it unanswered")
		return
	}
	a := p.plan.Turns[r.Turn].Answers[r.Index]
	delay := a.After
	if p.opts.NoDelays {
		delay = 0
	}
	switch {
	case a.Reply != nil:
		reply := *a.Reply
		s.After(delay, func() { _ = s.Respond(r.ID, reply) })
	case a.Response != nil:
		s.After(delay, func() { _ = s.RespondRaw(r.ID, a.Response) })
	case a.CloseInput:
		s.CloseInput()
	case a.InterruptAfter > 0:
		s.After(a.InterruptAfter, func() { _ = s.Interrupt() })
	case a.KillAfter > 0 && p.opts.Kill != nil:
		s.After(a.KillAfter, func() {
			p.event(transcript.EventNote, "ending the agent process (exit_after)")
			p.opts.Kill()
		})
	}
	// Otherwise silent: the agent withdraws the request itself.
}

// result sends the next turn's prompt, or closes stdin after the last.
func (p *planSource) result(s *sdk.Session, _ protocol.Line) {
	if n := s.Turn(); n < len(p.plan.Turns) {
		_ = s.Send(p.plan.Turns[n].Prompt)
	} else {
		s.CloseInput()
	}
}
