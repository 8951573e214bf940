package surface

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/askctl/askctl/bridgeapi"
	"github.com/askctl/askctl/protocol"
	"github.com/coder/websocket"
)

// The socket adapters speak a WebSocket surface, one connection per
// session: ws is seed 003's protocol (ask_user_question, ask_user_response,
// ask_user_timeout, session_status, session_taken), control-ws forwards the
// CLI's own control_request/control_response (seed 001). Both start
// sessions through the HTTP API (POST /api/sessions) and read replies to
// what they send as ask_user_ack or error messages.

type socketSurface struct {
	spec  Spec
	kind  string
	url   string
	token func() (string, error)
	api   *httpSurface

	mu     sync.Mutex
	opened map[string]bool // sessions a connection was opened to
}

// OverseesSessions: a connection with no session hears every session
// (Overseer).
func (s *socketSurface) OverseesSessions() {}

func newSocketSurface(s Spec, token func() (string, error)) *socketSurface {
	return &socketSurface{spec: s, kind: s.Kind, url: s.URL, token: token, api: apiSurface(s, token)}
}

func (s *socketSurface) Kind() string { return s.kind }

func (s *socketSurface) Start(ctx context.Context, prompt string) (string, error) {
	return s.api.Start(ctx, prompt)
}

// Stop stops a session through the HTTP API, as Start starts one.
func (s *socketSurface) Stop(ctx context.Context, session string) error {
	return s.api.Stop(ctx, session)
}

func (s *socketSurface) Close() error { return nil }

func (s *socketSurface) Open(ctx context.Context, session string, sink func(Event)) (Conn, error) {
	u, err := url.Parse(s.url)
	if err != nil {
		return nil, fmt.Errorf("surface url: %w", err)
	}
	q := u.Query()
	if session != "" {
		q.Set("session_id", session)
	}
	u.RawQuery = q.Encode()
	hdr := http.Header{}
	tok, err := s.token()
	if err != nil {
		return nil, err
	}
	if tok != "" {
		hdr.Set("Authorization", "Bearer "+tok)
	}
	// A session's second connection is a person reconnecting (or taking
	// over): within the profile's limits.reconnect; the first, within
	// limits.start, as the surface may still be coming up.
	limit := s.spec.StartLimit()
	s.mu.Lock()
	if session != "" && s.opened[session] {
		limit = s.spec.ReconnectLimit()
	}
	if s.opened == nil {
		s.opened = map[string]bool{}
	}
	s.opened[session] = true
	s.mu.Unlock()
	dctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	ws, resp, err := websocket.Dial(dctx, u.String(), &websocket.DialOptions{HTTPHeader: hdr})
	if err != nil {
		if resp != nil {
			return nil, &Rejected{Code: fmt.Sprint(resp.StatusCode), Message: fmt.Sprintf("opening %s: %v", s.url, err)}
		}
		return nil, fmt.Errorf("opening %s: %w", s.url, err)
	}
	ws.SetReadLimit(16 << 20)
	c := &socketConn{s: s, ws: ws, session: session, sink: sink, replies: make(chan json.RawMessage, 1),
		shown: map[string]Pending{}, done: make(chan struct{})}
	go c.read()
	return c, nil
}

type socketConn struct {
	s       *socketSurface
	ws      *websocket.Conn
	session string
	sink    func(Event)
	replies chan json.RawMessage
	reqMu   sync.Mutex // one message awaiting its reply at a time
	done    chan struct{}
	closed  error // why the read loop ended, once done is closed

	mu    sync.Mutex
	shown map[string]Pending // questions this connection shows
	order []string
}

func (c *socketConn) read() {
	defer close(c.done)
	for {
		_, data, err := c.ws.Read(context.Background())
		if err != nil {
			c.closed = err
			c.sink(Event{T: time.Now(), Type: EventClosed, Session: c.session, Reason: err.Error()})
			return
		}
		var head struct {
			Type       string `json:"type"`
			QuestionID string `json:"question_id"`
			Error      string `json:"error"`
		}
		_ = json.Unmarshal(data, &head)
		if head.Type == bridgeapi.MsgAck || head.Type == bridgeapi.MsgError {
			select {
			case c.replies <- json.RawMessage(data):
			default: // nobody waits: an unsolicited error, shown as an event
				c.sink(Event{T: time.Now(), Type: EventOther, QuestionID: head.QuestionID, Reason: head.Error, Raw: data})
			}
			continue
		}
		var e Event
		if c.s.kind == "control-ws" {
			e = controlToEvent(data)
		} else {
			var be bridgeapi.Event
			if json.Unmarshal(data, &be) != nil {
				be = bridgeapi.Event{Type: head.Type}
			}
			e = fromBridgeEvent(be)
			if head.Type == bridgeapi.MsgSessionTaken {
				e.Type = EventTaken
			}
		}
		e.T, e.Raw = time.Now(), json.RawMessage(data)
		if e.Session == "" {
			e.Session = c.session
		}
		c.track(e)
		c.sink(e)
	}
}

// controlToEvent reads the control surface's messages.
func controlToEvent(data []byte) Event {
	var m bridgeapi.ControlMessage
	if json.Unmarshal(data, &m) != nil {
		return Event{Type: EventOther}
	}
	switch m.Type {
	case protocol.TypeControlRequest:
		if m.Request == nil || m.Request.ToolName != protocol.ToolAskUserQuestion {
			return Event{Type: EventOther, QuestionID: m.RequestID}
		}
		return Event{Type: EventQuestion, QuestionID: m.RequestID, Session: m.SessionID, Questions: m.Request.Input.Questions}
	case protocol.TypeControlCancelRequest:
		t := EventWithdrawn
		switch m.Status {
		case bridgeapi.QuestionExpired:
			t = EventExpired
		case bridgeapi.QuestionAnswered:
			t = EventAnswered
		case bridgeapi.QuestionSkipped:
			t = EventSkipped
		}
		return Event{Type: t, QuestionID: m.RequestID, Reason: m.Reason, At: m.Time, By: m.Rule}
	case bridgeapi.MsgSessionTaken:
		return Event{Type: EventTaken, Session: m.SessionID}
	case bridgeapi.EventStatus:
		var be bridgeapi.Event
		_ = json.Unmarshal(data, &be)
		return fromBridgeEvent(be)
	}
	return Event{Type: EventOther, QuestionID: m.RequestID}
}

// track keeps what this connection shows: questions come, and go when they
// end.
func (c *socketConn) track(e Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch e.Type {
	case EventQuestion:
		if _, ok := c.shown[e.QuestionID]; !ok {
			c.order = append(c.order, e.QuestionID)
		}
		c.shown[e.QuestionID] = Pending{QuestionID: e.QuestionID, Session: e.Session, Questions: e.Questions, TimeoutSeconds: e.Timeout, CreatedAt: e.At}
	case EventExpired, EventAnswered, EventSkipped, EventWithdrawn, EventResumed:
		delete(c.shown, e.QuestionID)
	}
}

func (c *socketConn) Pending(context.Context) ([]Pending, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Pending
	for _, id := range c.order {
		if p, ok := c.shown[id]; ok {
			out = append(out, p)
		}
	}
	return out, nil
}

// roundTrip sends one message about question qid and waits for the
// bridge's ack or error about it; a stale reply (about another question,
// to a message whose wait ran out) is skipped.
func (c *socketConn) roundTrip(ctx context.Context, qid string, msg []byte) (bridgeapi.WSReply, error) {
	c.reqMu.Lock()
	defer c.reqMu.Unlock()
	for drained := false; !drained; {
		select {
		case <-c.replies:
		default:
			drained = true
		}
	}
	wctx, cancel := context.WithTimeout(ctx, c.s.spec.OpLimit())
	defer cancel()
	if err := c.ws.Write(wctx, websocket.MessageText, msg); err != nil {
		return bridgeapi.WSReply{}, fmt.Errorf("sending: %w", err)
	}
	for {
		select {
		case raw := <-c.replies:
			var r bridgeapi.WSReply
			_ = json.Unmarshal(raw, &r)
			if r.QuestionID != "" && qid != "" && r.QuestionID != qid {
				continue
			}
			if r.Type == bridgeapi.MsgError {
				return r, &Rejected{Code: r.Code, Message: r.Error}
			}
			return r, nil
		case <-c.done:
			// What the bridge said as it closed (a WebSocket close code:
			// 1009, a message too big for its read limit) is what its
			// author can act on.
			return bridgeapi.WSReply{}, fmt.Errorf("%w with no reply to the %d-byte message: %v", errClosed, len(msg), c.closed)
		case <-wctx.Done():
			return bridgeapi.WSReply{}, fmt.Errorf("no reply from the bridge within %v (the profile's limits.op)", c.s.spec.OpLimit())
		}
	}
}

func (c *socketConn) Answer(ctx context.Context, qid string, answers map[string][]string) (Ack, error) {
	var msg []byte
	if c.s.kind == "control-ws" {
		// The surface builds the answer as an SDK would: one string per
		// question, multiSelect labels joined with ", ".
		joined := map[string]protocol.AnswerValue{}
		for k, v := range answers {
			joined[k] = protocol.AnswerValue(protocol.JoinLabels(v))
		}
		c.mu.Lock()
		qs := c.shown[qid].Questions
		c.mu.Unlock()
		in, err := json.Marshal(protocol.AskInput{Questions: qs, Answers: joined})
		if err != nil {
			return Ack{}, err
		}
		msg = protocol.SuccessResponse(qid, protocol.Allow(in))
	} else {
		vals := map[string]bridgeapi.Answer{}
		for k, v := range answers {
			vals[k] = bridgeapi.Answer(v)
		}
		msg, _ = json.Marshal(bridgeapi.WSMessage{Type: bridgeapi.MsgAskResponse, Data: &bridgeapi.WSResponse{QuestionID: qid, Answers: vals}})
	}
	r, err := c.roundTrip(ctx, qid, msg)
	if err != nil {
		return Ack{}, err
	}
	return Ack{Status: r.Status, Missing: r.Missing}, nil
}

func (c *socketConn) Skip(ctx context.Context, qid, reason string) error {
	var msg []byte
	if c.s.kind == "control-ws" {
		msg = protocol.SuccessResponse(qid, protocol.Deny(reason, false))
	} else {
		msg, _ = json.Marshal(bridgeapi.WSMessage{Type: bridgeapi.MsgAskResponse, Data: &bridgeapi.WSResponse{QuestionID: qid, Cancelled: true, Reason: reason}})
	}
	_, err := c.roundTrip(ctx, qid, msg)
	return err
}

// Sync sends a message the bridge must refuse and waits for the refusal:
// a socket surface replays what is pending before it reads any message, so
// once the reply is here the replay is too. A bridge that does not answer
// an unknown message is given a moment (2s, times the slow factor), then
// taken as it is.
func (c *socketConn) Sync(ctx context.Context) error {
	sctx, cancel := context.WithTimeout(ctx, c.s.spec.Scaled(2*time.Second))
	defer cancel()
	_, err := c.roundTrip(sctx, "", []byte(`{"type":"askctl_sync"}`))
	var rj *Rejected
	switch {
	case err == nil, errors.As(err, &rj):
		return nil
	case ctx.Err() == nil && sctx.Err() != nil:
		return nil // no reply to an unknown message: nothing more to wait for
	}
	return err
}

func (c *socketConn) SendRaw(ctx context.Context, _ string, raw []byte) error {
	// A malformed message may get an error naming no question, or the
	// question it names: take whichever reply comes.
	_, err := c.roundTrip(ctx, "", raw)
	return err
}

func (c *socketConn) Close() error {
	err := c.ws.Close(websocket.StatusNormalClosure, "")
	select {
	case <-c.done:
	case <-time.After(2 * time.Second):
		c.ws.CloseNow()
	}
	return err
}
