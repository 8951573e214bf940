// Package sdk is the SDK side of a Claude Code session: what the official
// Agent SDKs do over the CLI's stdin and stdout, and what a bridge does.
//
// A [Session] writes initialize and the prompts, reads every line the agent
// writes, and hands each can_use_tool request to a [Source] — where answers
// come from. A scenario's plan is one source (askctl replay); the reference
// bridge, where a person answers through a surface, is another. The session
// keeps the one rule every source relies on: exactly one control_response per
// request, ever. A second answer, an answer to a withdrawn request, or to one
// the agent never made is refused with an error, and nothing reaches the
// agent.
//
//	s, err := sdk.Start(ctx, stdin, stdout, src, sdk.Options{})
//	s.Prompt("Set up storage for the app.")
//	err = s.Wait() // the agent closed its stdout
//
// It is public: a bridge written in Go can drive the CLI with it, as the
// reference bridge does.
package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/askctl/askctl/protocol"
	"github.com/askctl/askctl/transcript"
)

// Request is one can_use_tool request from the agent.
type Request struct {
	ID    string // the request_id, which the response must carry
	Turn  int    // 0-based turn it came in (results seen before it)
	Index int    // 0-based among the turn's can_use_tool requests
	At    time.Time
	protocol.CanUseTool
}

// Source decides what happens to each can_use_tool request. Ask is called on
// the session's read loop and must not block: it answers through
// [Session.Respond] at once or later, interrupts the turn, or never answers
// (the agent then withdraws the request, or the session ends).
type Source interface {
	Ask(s *Session, r Request)
}

// SourceFunc adapts a function to a Source.
type SourceFunc func(s *Session, r Request)

// Ask calls f.
func (f SourceFunc) Ask(s *Session, r Request) { f(s, r) }

// Options tune a session. The zero value is what the TypeScript SDK does with
// a canUseTool callback.
type Options struct {
	// Init is the initialize control_request; nil sends
	// protocol.InitializeRequest("req_1").
	Init json.RawMessage
	// Sink receives every line both ways as it is written or read.
	Sink transcript.Sink
	// OnMessage is called for every line the agent writes, after the
	// session has handled it.
	OnMessage func(s *Session, l protocol.Line)
	// OnCancel is called when the agent withdraws a pending request.
	OnCancel func(s *Session, requestID string)
	// OnResult is called when a turn ends.
	OnResult func(s *Session, l protocol.Line)
}

// Errors of Respond.
var (
	ErrUnknownRequest  = errors.New("no such request")
	ErrAlreadyAnswered = errors.New("request already answered")
	ErrWithdrawn       = errors.New("request withdrawn by the agent")
	ErrClosed          = errors.New("session input closed")
)

type reqState int

const (
	statePending reqState = iota
	stateAnswered
	stateWithdrawn
)

// Session is the SDK side of one running agent.
type Session struct {
	opts Options
	src  Source
	ctx  context.Context
	stop context.CancelFunc
	done chan struct{}
	err  error

	wmu    sync.Mutex // serializes writes to the agent
	in     io.WriteCloser
	closed bool

	timers sync.WaitGroup // answers scheduled with After
	ended  bool           // the read loop has ended: After schedules nothing more

	mu        sync.Mutex
	requests  map[string]*Request
	state     map[string]reqState
	sessionID string
	turn      int
	inTurn    int
	interrupt int
}

// Start writes the initialize request and starts reading the agent's lines.
// The session ends when the agent closes its stdout or ctx is done; its
// context (Context) is cancelled then, which stops any answer a source has
// scheduled.
func Start(ctx context.Context, stdin io.WriteCloser, stdout io.Reader, src Source, opts Options) (*Session, error) {
	sctx, stop := context.WithCancelCause(ctx)
	s := &Session{opts: opts, src: src, ctx: sctx, stop: func() { stop(nil) }, done: make(chan struct{}), in: stdin,
		requests: map[string]*Request{}, state: map[string]reqState{}, sessionID: protocol.DefaultSessionID}
	init := opts.Init
	if init == nil {
		init = protocol.InitializeRequest("req_1")
	}
	if err := s.write(init); err != nil {
		stop(err)
		close(s.done)
		s.err = fmt.Errorf("writing initialize: %w", err)
		return s, s.err
	}
	go s.read(stdout)
	return s, nil
}

// Context is cancelled when the session ends.
func (s *Session) Context() context.Context { return s.ctx }

// Done is closed when the session has ended.
func (s *Session) Done() <-chan struct{} { return s.done }

// Wait waits for the session to end: nil when the agent closed its stdout,
// else why it ended (ctx's cause, a read error).
func (s *Session) Wait() error {
	<-s.done
	return s.err
}

// SessionID is the session id the agent announced, or "default" before it
// has.
func (s *Session) SessionID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessionID
}

func (s *Session) record(r transcript.Record) {
	if s.opts.Sink == nil {
		return
	}
	if r.T.IsZero() {
		r.T = time.Now()
	}
	_ = s.opts.Sink.Write(r)
}

// write sends one line to the agent.
func (s *Session) write(msg json.RawMessage) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.closed {
		return ErrClosed
	}
	s.record(transcript.Record{Dir: transcript.ToCLI, Msg: msg})
	_, err := s.in.Write(append(append(make([]byte, 0, len(msg)+1), msg...), '\n'))
	return err
}

// Send writes a raw line to the agent: a prompt or request the session has
// no constructor for. Responses to can_use_tool go through Respond.
func (s *Session) Send(msg json.RawMessage) error { return s.write(msg) }

// Prompt starts a turn with a user message.
func (s *Session) Prompt(text string) error {
	return s.write(protocol.Prompt(text, s.SessionID()))
}

// Interrupt asks the agent to abort the current turn. The agent withdraws a
// pending request with control_cancel_request.
func (s *Session) Interrupt() error {
	s.mu.Lock()
	s.interrupt++
	id := fmt.Sprintf("%s%d", InterruptIDPrefix, s.interrupt)
	s.mu.Unlock()
	return s.write(protocol.InterruptRequest(id))
}

// InterruptIDPrefix starts the request_id of every interrupt a Session sends,
// so a transcript tells its replies apart.
const InterruptIDPrefix = "req_interrupt_"

// CloseInput closes the agent's stdin, as the SDKs do after a one-shot
// prompt. Later writes fail with ErrClosed.
func (s *Session) CloseInput() {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if !s.closed {
		s.closed = true
		s.in.Close()
	}
}

// Turn is the number of turns that have ended (results seen).
func (s *Session) Turn() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.turn
}

// Pending reports whether request id is waiting for its answer.
func (s *Session) Pending(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.state[id]
	return ok && st == statePending
}

// claim marks request id answered, if it is pending; the first caller wins.
func (s *Session) claim(id string) (*Request, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.state[id]
	switch {
	case !ok:
		return nil, fmt.Errorf("%w: %q", ErrUnknownRequest, id)
	case st == stateAnswered:
		return nil, fmt.Errorf("%w: %s", ErrAlreadyAnswered, id)
	case st == stateWithdrawn:
		return nil, fmt.Errorf("%w: %s", ErrWithdrawn, id)
	}
	s.state[id] = stateAnswered
	return s.requests[id], nil
}

// Respond answers request id with a person's reply. Only the first answer to
// a pending request is sent; any other gets an error and sends nothing.
func (s *Session) Respond(id string, r protocol.Reply) error {
	s.mu.Lock()
	req := s.requests[id]
	s.mu.Unlock()
	if req == nil {
		return fmt.Errorf("%w: %q", ErrUnknownRequest, id)
	}
	// Build the message first: a reply that cannot be built leaves the
	// request as it was, pending or withdrawn.
	msg, err := r.Response(id, req.ToolName, req.Input)
	if err != nil {
		return err
	}
	if _, err := s.claim(id); err != nil {
		return err
	}
	return s.write(msg)
}

// RespondRaw answers request id with a recorded control_response, rebound to
// id. The same first-wins rule holds.
func (s *Session) RespondRaw(id string, resp json.RawMessage) error {
	msg, err := protocol.Rebind(resp, id)
	if err != nil {
		return err
	}
	if _, err := s.claim(id); err != nil {
		return err
	}
	return s.write(msg)
}

// read is the session's loop over the agent's stdout.
func (s *Session) read(stdout io.Reader) {
	defer func() {
		s.stop()
		s.mu.Lock()
		s.ended = true
		s.mu.Unlock()
		s.timers.Wait()
		close(s.done)
	}()
	lines := make(chan protocol.Line)
	errc := make(chan error, 1)
	go func() {
		dec := protocol.NewDecoder(stdout).SkipNonJSON()
		for {
			l, err := dec.Next()
			if err != nil {
				var le *protocol.LineError
				if errors.As(err, &le) {
					s.record(transcript.Record{Event: transcript.EventError, Kind: "agent", Text: err.Error()})
					continue
				}
				errc <- err
				return
			}
			select {
			case lines <- l:
			case <-s.ctx.Done():
				return
			}
		}
	}()
	for {
		select {
		case <-s.ctx.Done():
			s.err = context.Cause(s.ctx)
			return
		case err := <-errc:
			if !errors.Is(err, io.EOF) {
				s.err = fmt.Errorf("reading the agent's stdout: %w", err)
			}
			s.stop()
			return
		case l := <-lines:
			s.record(transcript.Record{Dir: transcript.FromCLI, Msg: l.Raw})
			s.handle(l)
			if s.opts.OnMessage != nil {
				s.opts.OnMessage(s, l)
			}
		}
	}
}

func (s *Session) handle(l protocol.Line) {
	switch l.Type {
	case protocol.TypeSystem:
		var init protocol.SystemInit
		if l.Subtype == protocol.SubtypeInit && l.Decode(&init) == nil && init.SessionID != "" {
			s.mu.Lock()
			s.sessionID = init.SessionID
			s.mu.Unlock()
		}
	case protocol.TypeControlRequest:
		cr, sub, err := protocol.ParseControlRequest(l)
		if err != nil {
			s.record(transcript.Record{Event: transcript.EventError, Kind: "agent", Text: err.Error()})
			return
		}
		if sub != protocol.SubtypeCanUseTool {
			_ = s.write(protocol.ErrorResponse(cr.RequestID, "askctl's SDK side does not support "+sub))
			return
		}
		req := Request{ID: cr.RequestID, At: time.Now()}
		if err := json.Unmarshal(cr.Request, &req.CanUseTool); err != nil {
			s.record(transcript.Record{Event: transcript.EventError, Kind: "agent", Text: fmt.Sprintf("line %d: can_use_tool: %v", l.N, err)})
			return
		}
		s.mu.Lock()
		if _, dup := s.state[req.ID]; dup {
			s.mu.Unlock()
			s.record(transcript.Record{Event: transcript.EventError, Kind: "agent", Text: fmt.Sprintf("line %d: request_id %s used twice", l.N, req.ID)})
			return
		}
		req.Turn, req.Index = s.turn, s.inTurn
		s.inTurn++
		s.requests[req.ID] = &req
		s.state[req.ID] = statePending
		s.mu.Unlock()
		if s.src != nil {
			s.src.Ask(s, req)
		}
	case protocol.TypeControlCancelRequest:
		var c protocol.ControlCancelRequest
		if l.Decode(&c) != nil {
			return
		}
		s.mu.Lock()
		st, ok := s.state[c.RequestID]
		if ok && st == statePending {
			s.state[c.RequestID] = stateWithdrawn
		}
		s.mu.Unlock()
		if ok && st == statePending && s.opts.OnCancel != nil {
			s.opts.OnCancel(s, c.RequestID)
		}
	case protocol.TypeResult:
		s.mu.Lock()
		s.turn++
		s.inTurn = 0
		s.mu.Unlock()
		if s.opts.OnResult != nil {
			s.opts.OnResult(s, l)
		}
	}
}

// After runs f after d unless the session ends first; a zero d runs it now.
// Sources use it to answer later.
func (s *Session) After(d time.Duration, f func()) {
	if d <= 0 {
		f()
		return
	}
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return
	}
	s.timers.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.timers.Done()
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			f()
		case <-s.ctx.Done():
		}
	}()
}
