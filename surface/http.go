package surface

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/askctl/askctl/bridgeapi"
)

// The http adapter speaks the reference bridge's HTTP API (bridge/doc.go),
// the shape of seed 002: sessions and answers by JSON requests, events by
// SSE.

type httpSurface struct {
	url          string
	token        func() (string, error)
	http         *http.Client
	resumeWindow time.Duration // limits.reconnect
}

func newHTTPSurface(s Spec, token func() (string, error)) *httpSurface {
	return &httpSurface{url: strings.TrimRight(s.URL, "/"), token: token, http: &http.Client{Timeout: s.OpLimit()}, resumeWindow: s.ReconnectLimit()}
}

// client is the API client with the token as it is now.
func (h *httpSurface) client() (*bridgeapi.Client, error) {
	tok, err := h.token()
	if err != nil {
		return nil, err
	}
	return &bridgeapi.Client{URL: h.url, Token: tok, HTTP: h.http}, nil
}

func (h *httpSurface) Kind() string { return "http" }

func (h *httpSurface) Start(ctx context.Context, prompt string) (string, error) {
	c, err := h.client()
	if err != nil {
		return "", err
	}
	s, err := c.StartSession(ctx, bridgeapi.StartOptions{Prompt: prompt})
	if err != nil {
		return "", Rejection(err)
	}
	return s.ID, nil
}

// Stop stops a session through the API (Stopper).
func (h *httpSurface) Stop(ctx context.Context, session string) error {
	c, err := h.client()
	if err != nil {
		return err
	}
	if _, err := c.StopSession(ctx, session); err != nil {
		var re *bridgeapi.RemoteError
		if errors.As(err, &re) && (re.Status == http.StatusNotFound || re.Status == http.StatusMethodNotAllowed || re.Status == http.StatusNotImplemented) {
			// The contract asks for POST /api/sessions only: a bridge
			// without DELETE has no stop operation.
			return &Unsupported{Op: "stop", Message: fmt.Sprintf("the bridge's API stops no session (DELETE /api/sessions/ID: %d %s)", re.Status, re.APIError.Error)}
		}
		return Rejection(err)
	}
	return nil
}

func (h *httpSurface) Close() error { return nil }

func (h *httpSurface) Open(ctx context.Context, session string, sink func(Event)) (Conn, error) {
	return h.open(ctx, session, -1, sink)
}

// OpenAfter opens the stream with Last-Event-ID lastID on its first
// request, as an EventSource that heard that id before.
func (h *httpSurface) OpenAfter(ctx context.Context, session string, lastID int64, sink func(Event)) (Conn, error) {
	return h.open(ctx, session, lastID, sink)
}

func (h *httpSurface) open(ctx context.Context, session string, after int64, sink func(Event)) (Conn, error) {
	api, err := h.client()
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithCancel(context.Background())
	c := &httpConn{window: h.resumeWindow, c: api, session: session, cancel: cancel, done: make(chan struct{}),
		down: make(chan struct{}, 1), resumed: make(chan error, 1), resumeNow: make(chan struct{})}
	ready := make(chan error, 1)
	go func() {
		defer close(c.done)
		opened := false
		last := after // a new client first (-1); after a drop, resume after the last event seen
		var err error
		// wentDown: the stream ended by itself (the bridge stopped or the
		// network failed), and the connection says so, and says when it
		// is back (EventOther events, which no check reads; watch prints
		// them).
		wentDown := false
		for {
			c.mu.Lock()
			if c.dropped {
				// Dropped: nothing more reaches sink until Resume asks
				// for what was missed (Drop may also come between two
				// streams, while a dropped one is being retried).
				c.mu.Unlock()
				if !c.parkDropped(cctx) {
					break
				}
				continue
			}
			sctx, cut := context.WithCancel(cctx)
			c.cut = cut
			c.mu.Unlock()
			openedNow := false
			err = api.EventsOpened(sctx, session, last, func() {
				openedNow = true
				if !opened {
					opened = true
					ready <- nil
					return
				}
				if wentDown {
					wentDown = false
					sink(Event{T: time.Now(), Type: EventOther, Session: session, Reason: "the bridge is back: its events go on from where they stopped"})
				}
				c.signalResumed(nil)
			}, func(e bridgeapi.Event) error {
				if e.Seq > 0 {
					last = e.Seq
				}
				sink(fromBridgeEvent(e))
				return nil
			})
			cut()
			if !opened {
				ready <- err
				return
			}
			if cctx.Err() != nil {
				break
			}
			if c.wasDropped() {
				continue // Drop cut the stream: the loop's top parks it
			}
			if !openedNow {
				c.signalResumed(err)
			}
			if !errors.Is(err, bridgeapi.ErrUnreachable) {
				break
			}
			if !wentDown {
				wentDown = true
				sink(Event{T: time.Now(), Type: EventOther, Session: session, Reason: fmt.Sprintf("the bridge is down (%v); waiting up to %v for it to come back", err, c.window)})
			}
			if !c.resume(cctx) {
				break
			}
			// With no event seen yet (last -1), it comes back as a new
			// client (the pending questions again), not from the start of
			// the log.
		}
		if cctx.Err() == nil {
			sink(Event{T: time.Now(), Type: EventClosed, Session: session, Reason: fmt.Sprint(err)})
		}
	}()
	// Open returns once the bridge has accepted the stream, so no event
	// after it is missed.
	select {
	case err := <-ready:
		if err != nil {
			cancel()
			<-c.done
			return nil, Rejection(err)
		}
	case <-ctx.Done():
		cancel()
		<-c.done
		return nil, ctx.Err()
	}
	return c, nil
}

type httpConn struct {
	window  time.Duration // how long a dropped stream is retried
	c       *bridgeapi.Client
	session string
	cancel  context.CancelFunc
	done    chan struct{}
	once    sync.Once

	// Drop and Resume: the stream's own cut, whether Drop made it, and
	// the stream goroutine's word that it is down and that it is back.
	mu        sync.Mutex
	cut       context.CancelFunc
	dropped   bool
	resuming  bool // Resume waits for the stream's return
	down      chan struct{}
	resumeNow chan struct{}
	resumed   chan error
}

// Drop cuts the connection's event stream as a network would, and returns
// once no more of its events reach the harness. The connection keeps the
// id of the last event it heard, for Resume.
func (c *httpConn) Drop(ctx context.Context) error {
	c.mu.Lock()
	if c.dropped {
		c.mu.Unlock()
		return errors.New("the event stream is already dropped")
	}
	c.dropped = true
	if c.cut != nil {
		c.cut()
	}
	c.mu.Unlock()
	select {
	case <-c.down:
		return nil
	case <-c.done:
		return errClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// parkDropped is the stream goroutine's wait while its stream is dropped:
// it tells Drop the stream is down (a token Drop may have stopped waiting
// for), then waits for Resume. False when the connection closes.
func (c *httpConn) parkDropped(ctx context.Context) bool {
	select {
	case c.down <- struct{}{}:
	default:
	}
	select {
	case <-c.resumeNow:
		return true
	case <-ctx.Done():
		return false
	}
}

// Resume reconnects a dropped stream with Last-Event-ID, the id of the
// last event it heard: the bridge sends what it missed, and returns once
// the bridge has accepted the stream.
func (c *httpConn) Resume(ctx context.Context) error {
	c.mu.Lock()
	if !c.dropped {
		c.mu.Unlock()
		return errors.New("the event stream was not dropped")
	}
	// Tokens of an earlier Drop or reconnect that nobody took.
	select {
	case <-c.down:
	default:
	}
	select {
	case <-c.resumed:
	default:
	}
	c.dropped, c.resuming = false, true
	c.mu.Unlock()
	select {
	case c.resumeNow <- struct{}{}:
	case <-c.done:
		return errClosed
	case <-ctx.Done():
		c.mu.Lock()
		c.dropped, c.resuming = true, false
		c.mu.Unlock()
		return ctx.Err()
	}
	select {
	case err := <-c.resumed:
		return Rejection(err)
	case <-c.done:
		select {
		case err := <-c.resumed:
			return Rejection(err)
		default:
			return errClosed
		}
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *httpConn) wasDropped() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dropped
}

// signalResumed tells a Resume waiting how the stream came back; a
// reconnect no Resume asked for tells nobody.
func (c *httpConn) signalResumed(err error) {
	c.mu.Lock()
	asked := c.resuming
	c.resuming = false
	c.mu.Unlock()
	if !asked {
		return
	}
	select {
	case c.resumed <- err:
	default:
	}
}

// resume waits until the bridge answers again (its health endpoint), at
// most the resume window (limits.reconnect), as a browser's EventSource
// retries a dropped stream; false when it does not, or ctx ends.
func (c *httpConn) resume(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, c.window)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.c.URL+"/api/health", nil)
		if resp, err := c.c.HTTP.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return true
			}
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (c *httpConn) Pending(ctx context.Context) ([]Pending, error) {
	qs, err := c.c.Pending(ctx, c.session)
	if err != nil {
		return nil, Rejection(err)
	}
	out := make([]Pending, 0, len(qs))
	for _, q := range qs {
		out = append(out, Pending{QuestionID: q.ID, Session: q.SessionID, Questions: q.Questions, TimeoutSeconds: q.TimeoutSeconds,
			CreatedAt: q.CreatedAt, Deadline: q.Deadline, Draft: q.Draft, Orphaned: q.Orphaned})
	}
	return out, nil
}

// Sync: the API's listing is the bridge's state, so there is nothing to
// wait for.
func (c *httpConn) Sync(context.Context) error { return nil }

func (c *httpConn) Answer(ctx context.Context, qid string, answers map[string][]string) (Ack, error) {
	in := map[string]bridgeapi.Answer{}
	for k, v := range answers {
		in[k] = bridgeapi.Answer(v)
	}
	r, err := c.c.AnswerIn(ctx, c.session, qid, in)
	if err != nil {
		return Ack{}, Rejection(err)
	}
	if r.Held {
		return Ack{Status: bridgeapi.AckHeld, Missing: r.Missing}, nil
	}
	ack := Ack{Status: bridgeapi.QuestionAnswered, Resumed: r.Resumed}
	if r.Question != nil {
		ack.Answers = r.Question.Answers
	}
	return ack, nil
}

func (c *httpConn) Skip(ctx context.Context, qid, reason string) error {
	_, err := c.c.SkipIn(ctx, c.session, qid, reason, false)
	return Rejection(err)
}

func (c *httpConn) SkipInterrupt(ctx context.Context, qid, reason string) error {
	_, err := c.c.SkipIn(ctx, c.session, qid, reason, true)
	return Rejection(err)
}

func (c *httpConn) SendRaw(ctx context.Context, qid string, raw []byte) error {
	return Rejection(c.c.AnswerRaw(ctx, c.session, qid, raw))
}

func (c *httpConn) Close() error {
	c.once.Do(func() {
		c.cancel()
		<-c.done
	})
	return nil
}

// Rejection is err as a surface tells it: the reference bridge's refusal
// (a *bridgeapi.RemoteError) as a *Rejected, anything else as it is.
func Rejection(err error) error {
	var re *bridgeapi.RemoteError
	if errors.As(err, &re) {
		return &Rejected{Code: re.Code, Message: re.APIError.Error}
	}
	return err
}

// fromBridgeEvent maps the reference bridge's events (ws and SSE share
// them) to surface events.
func fromBridgeEvent(e bridgeapi.Event) Event {
	raw, _ := json.Marshal(e)
	se := Event{T: time.Now(), At: e.Time, QuestionID: e.QuestionID, Session: e.SessionID, Questions: e.Questions, Raw: raw, Reason: e.Reason,
		Answers: e.Answers, Timeout: e.TimeoutSeconds, Status: e.Status, By: e.Rule, Seq: e.Seq}
	switch e.Type {
	case bridgeapi.EventQuestion:
		se.Type = EventQuestion
	case bridgeapi.EventTimeout:
		se.Type, se.Reason = EventExpired, e.Error
	case bridgeapi.EventAnswered:
		se.Type = EventAnswered
	case bridgeapi.EventHeld:
		se.Type = EventHeld
	case bridgeapi.EventSkipped:
		se.Type = EventSkipped
	case bridgeapi.EventWithdrawn:
		se.Type = EventWithdrawn
	case bridgeapi.EventResumed:
		se.Type = EventResumed
	case bridgeapi.EventStatus:
		se.Type, se.Waiting, se.Exit = EventStatus, e.WaitingForUser, e.ExitCode
		if e.Detail != "" {
			se.Reason = e.Detail
		}
		if e.PendingQuestionID != nil {
			se.PendingID = *e.PendingQuestionID
		}
	default:
		se.Type = EventOther
	}
	return se
}
