// Package replay plays the SDK side of a scenario against an agent — the
// real claude CLI or fakeclaude — and reports where the agent's messages
// differ from what the scenario says they should be.
//
// The SDK side is what a bridge would write to the agent's stdin: initialize,
// the prompt of each turn, and the person's part (answers, skips, or silence)
// as control_responses to the agent's can_use_tool requests. A [Plan] holds it;
// [PlanFor] takes it from a recorded session's wire lines or from a
// hand-written scenario's steps, and [Play] runs it.
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
	"github.com/askctl/askctl/transcript"
	"github.com/tidwall/gjson"
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

// Answer is the SDK side's reaction to one can_use_tool request.
type Answer struct {
	// Response is the control_response to send; its request_id is replaced by
	// the agent's. Nil means no answer.
	Response json.RawMessage
	// After is how long to wait before answering.
	After time.Duration
	// InterruptAfter, with no Response, sends an interrupt control_request
	// this long after the request: how a scenario's cancel_after is played
	// against the real CLI, which withdraws requests only when interrupted.
	InterruptAfter time.Duration
	// KillAfter, with no Response, ends the agent process this long after the
	// request: how a scenario's exit_after is played against the real CLI.
	KillAfter time.Duration
}

const sdkSessionID = "default"

// PlanFor returns the SDK side of sc: from its wire lines when it is recorded,
// else from its steps. agentCancels says the agent withdraws requests by
// itself (fakeclaude plays cancel_after and exit_after); when false the plan
// interrupts or kills the agent at those times instead.
func PlanFor(sc *scenarios.Scenario, agentCancels bool) (Plan, error) {
	if len(sc.Wire) > 0 {
		return planFromWire(sc.Wire)
	}
	return planFromSteps(sc, agentCancels)
}

func planFromSteps(sc *scenarios.Scenario, agentCancels bool) (Plan, error) {
	p := Plan{Init: mustJSON(map[string]any{"type": "control_request", "request_id": "req_1", "request": map[string]any{"subtype": "initialize", "hooks": nil}})}
	for _, turn := range sc.Turns() {
		t := Turn{Prompt: userMessage(turn[0].Prompt)}
		for i := 1; i < len(turn); i++ {
			st := &turn[i]
			if st.Kind != scenarios.KindAsk && st.Kind != scenarios.KindTool {
				continue
			}
			a, err := answerFor(st, agentCancels)
			if err != nil {
				return Plan{}, fmt.Errorf("%s:%d: %w", sc.File, st.Line, err)
			}
			t.Answers = append(t.Answers, a)
		}
		p.Turns = append(p.Turns, t)
	}
	return p, nil
}

func userMessage(text string) json.RawMessage {
	return mustJSON(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": text}, "parent_tool_use_id": nil, "session_id": sdkSessionID})
}

// answerFor builds the control_response a correct bridge sends for the
// person's part of st.
func answerFor(st *scenarios.Step, agentCancels bool) (Answer, error) {
	u := st.User
	if u == nil {
		return Answer{}, errors.New("the step has no user part to play (add \"user\")")
	}
	a := Answer{After: time.Duration(u.After)}
	var result map[string]any
	switch {
	case u.Silent:
		if !agentCancels {
			a.InterruptAfter, a.KillAfter = st.CancelAfter, st.ExitAfter
		}
		return a, nil
	case u.Skip != nil:
		result = map[string]any{"behavior": "deny", "message": *u.Skip, "interrupt": u.Interrupt}
	case st.Kind == scenarios.KindTool:
		result = map[string]any{"behavior": "allow", "updatedInput": st.Tool.Input}
	case u.Allow:
		result = map[string]any{"behavior": "allow", "updatedInput": map[string]any{"questions": st.Questions, "answers": map[string]string{}}}
	default:
		answers := map[string]string{}
		for q, ans := range u.Answers {
			answers[q] = ans.String()
		}
		in := map[string]any{"questions": st.Questions, "answers": answers}
		if len(u.Annotations) > 0 {
			in["annotations"] = u.Annotations
		}
		result = map[string]any{"behavior": "allow", "updatedInput": in}
	}
	a.Response = mustJSON(map[string]any{"type": "control_response", "response": map[string]any{"subtype": "success", "request_id": "", "response": result}})
	return a, nil
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
		m := gjson.ParseBytes(r.Msg)
		typ := m.Get("type").String()
		if r.Dir == transcript.FromCLI {
			if typ == "control_request" && m.Get("request.subtype").String() == "can_use_tool" {
				id := m.Get("request_id").String()
				askedAt[id] = r.T
				order = append(order, id)
			}
			continue
		}
		switch {
		case typ == "control_request" && m.Get("request.subtype").String() == "initialize" && p.Init == nil:
			p.Init = r.Msg
		case typ == "user":
			p.Turns = append(p.Turns, Turn{Prompt: r.Msg})
		case typ == "control_response":
			if len(p.Turns) == 0 {
				return Plan{}, fmt.Errorf("wire record %d: a control_response before any prompt", i+1)
			}
			id := m.Get("response.request_id").String()
			t := &p.Turns[len(p.Turns)-1]
			a := Answer{Response: r.Msg}
			if at, ok := askedAt[id]; ok && !r.T.IsZero() && !at.IsZero() {
				a.After = r.T.Sub(at)
			}
			t.Answers = append(t.Answers, a)
		case typ == "control_request" && m.Get("request.subtype").String() == "interrupt":
			if len(p.Turns) == 0 || len(order) == 0 {
				continue
			}
			t := &p.Turns[len(p.Turns)-1]
			a := Answer{InterruptAfter: time.Millisecond}
			if at := askedAt[order[len(order)-1]]; !r.T.IsZero() && !at.IsZero() {
				a.InterruptAfter = max(r.T.Sub(at), time.Millisecond)
			}
			t.Answers = append(t.Answers, a)
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

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
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

// ErrTimeout is returned when the session outlasts PlayOptions.Timeout.
var ErrTimeout = errors.New("session timed out")

// Play runs plan against an agent: it writes to stdin, reads stdout until the
// agent closes it, and returns every line both ways. It closes stdin after the
// last turn's result, as the SDKs do with a one-shot prompt.
func Play(ctx context.Context, plan Plan, stdin io.WriteCloser, stdout io.Reader, opts PlayOptions) ([]transcript.Record, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = time.Minute
	}
	ctx, cancel := context.WithTimeoutCause(ctx, opts.Timeout, ErrTimeout)
	p := &player{stdin: stdin, opts: opts}
	defer func() { cancel(); p.timers.Wait() }()
	if err := p.write(plan.Init); err != nil {
		return p.recs, err
	}
	turn := 0
	if err := p.write(plan.Turns[0].Prompt); err != nil {
		return p.recs, err
	}
	answer := 0

	lines := make(chan protocol.Line)
	errc := make(chan error, 1)
	go func() {
		dec := protocol.NewDecoder(stdout).SkipNonJSON()
		for {
			l, err := dec.Next()
			if err != nil {
				var le *protocol.LineError
				if errors.As(err, &le) {
					p.add(transcript.Record{Event: transcript.EventError, Kind: "agent", Text: err.Error()})
					continue
				}
				errc <- err
				return
			}
			select {
			case lines <- l:
			case <-ctx.Done():
				return
			}
		}
	}()
	for {
		select {
		case <-ctx.Done():
			p.closeStdin()
			if opts.Kill != nil {
				opts.Kill()
			}
			return p.recs, context.Cause(ctx)
		case err := <-errc:
			p.closeStdin()
			if errors.Is(err, io.EOF) {
				return p.recs, nil
			}
			return p.recs, err
		case l := <-lines:
			p.add(transcript.Record{Dir: transcript.FromCLI, Msg: l.Raw})
			switch l.Type {
			case protocol.TypeControlRequest:
				m := gjson.ParseBytes(l.Raw)
				id := m.Get("request_id").String()
				if m.Get("request.subtype").String() != protocol.SubtypeCanUseTool {
					p.write(mustJSON(map[string]any{"type": "control_response", "response": map[string]any{"subtype": "error", "request_id": id, "error": "not supported by askctl replay"}}))
					continue
				}
				if turn >= len(plan.Turns) || answer >= len(plan.Turns[turn].Answers) {
					p.add(transcript.Record{Event: transcript.EventError, Kind: "unplanned", Text: "the agent asked, and the scenario has no answer for it: leaving it unanswered"})
					continue
				}
				p.respond(ctx, plan.Turns[turn].Answers[answer], id)
				answer++
			case protocol.TypeResult:
				turn++
				answer = 0
				if turn < len(plan.Turns) {
					p.write(plan.Turns[turn].Prompt)
				} else {
					p.closeStdin()
				}
			}
		}
	}
}

type player struct {
	mu     sync.Mutex
	stdin  io.WriteCloser
	closed bool
	recs   []transcript.Record
	opts   PlayOptions
	timers sync.WaitGroup
}

func (p *player) add(r transcript.Record) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if r.T.IsZero() {
		r.T = time.Now()
	}
	p.recs = append(p.recs, r)
	if p.opts.Sink != nil {
		_ = p.opts.Sink.Write(r)
	}
}

func (p *player) write(msg json.RawMessage) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.mu.Unlock()
	p.add(transcript.Record{Dir: transcript.ToCLI, Msg: msg})
	p.mu.Lock()
	defer p.mu.Unlock()
	_, err := p.stdin.Write(append(append([]byte(nil), msg...), '\n'))
	return err
}

func (p *player) closeStdin() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed {
		p.closed = true
		p.stdin.Close()
	}
}

// respond plays one answer to the request id, after its delay.
func (p *player) respond(ctx context.Context, a Answer, id string) {
	var delay time.Duration
	var send func()
	switch {
	case a.Response != nil:
		delay = a.After
		msg := rebind(a.Response, id)
		send = func() { p.write(msg) }
	case a.InterruptAfter > 0:
		delay = a.InterruptAfter
		send = func() {
			p.write(mustJSON(map[string]any{"type": "control_request", "request_id": interruptIDPrefix + id[:min(8, len(id))], "request": map[string]any{"subtype": "interrupt"}}))
		}
	case a.KillAfter > 0 && p.opts.Kill != nil:
		delay = a.KillAfter
		send = func() {
			p.add(transcript.Record{Event: transcript.EventNote, Text: "ending the agent process (exit_after)"})
			p.opts.Kill()
		}
	default:
		return // silent: the agent withdraws the request itself
	}
	if p.opts.NoDelays && a.Response != nil {
		delay = 0
	}
	if delay <= 0 {
		send()
		return
	}
	p.timers.Add(1)
	t := time.NewTimer(delay)
	go func() {
		defer p.timers.Done()
		select {
		case <-t.C:
			send()
		case <-ctx.Done():
			t.Stop()
		}
	}()
}

// rebind sets the control_response's request_id to id.
func rebind(resp json.RawMessage, id string) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(resp, &m) != nil {
		return resp
	}
	var body map[string]json.RawMessage
	if json.Unmarshal(m["response"], &body) != nil {
		return resp
	}
	body["request_id"] = mustJSON(id)
	m["response"] = mustJSON(body)
	return mustJSON(m)
}

// interruptIDPrefix marks the interrupts the player sends.
const interruptIDPrefix = "req_interrupt_"
