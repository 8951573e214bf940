package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/askctl/askctl/bridge"
	"github.com/askctl/askctl/protocol"
	"github.com/coder/websocket"
	"github.com/tidwall/gjson"
)

// The socket adapters speak a WebSocket surface, one connection per
// session: ws is seed 003's protocol (ask_user_question, ask_user_response,
// ask_user_timeout, session_status, session_taken), control-ws forwards the
// CLI's own control_request/control_response (seed 001). Both start
// sessions through the HTTP API (POST /api/sessions) and read replies to
// what they send as ask_user_ack or error messages.

type socketSurface struct {
	kind  string
	url   string
	token func() (string, error)
	api   *httpSurface
}

func newSocketSurface(s SurfaceSpec, token func() (string, error)) *socketSurface {
	return &socketSurface{kind: s.Kind, url: s.URL, token: token, api: newHTTPSurface(SurfaceSpec{URL: s.API}, token)}
}

func (s *socketSurface) Kind() string { return s.kind }

func (s *socketSurface) Start(ctx context.Context, prompt string) (string, error) {
	return s.api.Start(ctx, prompt)
}

func (s *socketSurface) Close() error { return nil }

// replyTimeout bounds the wait for the bridge's reply to a message.
const replyTimeout = 10 * time.Second

func (s *socketSurface) Open(ctx context.Context, session string, sink func(SurfaceEvent)) (Conn, error) {
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
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
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
	sink    func(SurfaceEvent)
	replies chan json.RawMessage
	reqMu   sync.Mutex // one message awaiting its reply at a time
	done    chan struct{}

	mu    sync.Mutex
	shown map[string]Pending // questions this connection shows
	order []string
}

func (c *socketConn) read() {
	defer close(c.done)
	for {
		_, data, err := c.ws.Read(context.Background())
		if err != nil {
			c.sink(SurfaceEvent{T: time.Now(), Type: SurfClosed, Session: c.session, Reason: err.Error()})
			return
		}
		m := gjson.ParseBytes(data)
		typ := m.Get("type").String()
		if typ == "ask_user_ack" || typ == "error" {
			select {
			case c.replies <- json.RawMessage(data):
			default: // nobody waits: an unsolicited error, shown as an event
				c.sink(SurfaceEvent{T: time.Now(), Type: SurfOther, QuestionID: m.Get("question_id").String(), Reason: m.Get("error").String(), Raw: data})
			}
			continue
		}
		var e SurfaceEvent
		if c.s.kind == "control-ws" {
			e = controlToEvent(m)
		} else {
			var be bridge.Event
			if json.Unmarshal(data, &be) != nil {
				be = bridge.Event{Type: typ}
			}
			e = fromBridgeEvent(be)
			if typ == "session_taken" {
				e.Type = SurfTaken
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
func controlToEvent(m gjson.Result) SurfaceEvent {
	id := m.Get("request_id").String()
	switch m.Get("type").String() {
	case protocol.TypeControlRequest:
		if m.Get("request.tool_name").String() != protocol.ToolAskUserQuestion {
			return SurfaceEvent{Type: SurfOther, QuestionID: id}
		}
		var qs []protocol.Question
		_ = json.Unmarshal([]byte(m.Get("request.input.questions").Raw), &qs)
		return SurfaceEvent{Type: SurfQuestion, QuestionID: id, Session: m.Get("session_id").String(), Questions: qs}
	case protocol.TypeControlCancelRequest:
		t := SurfWithdrawn
		switch m.Get("status").String() {
		case "expired":
			t = SurfExpired
		case "answered":
			t = SurfAnswered
		case "skipped":
			t = SurfSkipped
		}
		return SurfaceEvent{Type: t, QuestionID: id, Reason: m.Get("reason").String(), At: m.Get("time").Time()}
	case "session_taken":
		return SurfaceEvent{Type: SurfTaken, Session: m.Get("session_id").String()}
	case "session_status":
		var be bridge.Event
		_ = json.Unmarshal([]byte(m.Raw), &be)
		return fromBridgeEvent(be)
	}
	return SurfaceEvent{Type: SurfOther, QuestionID: id}
}

// track keeps what this connection shows: questions come, and go when they
// end.
func (c *socketConn) track(e SurfaceEvent) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch e.Type {
	case SurfQuestion:
		if _, ok := c.shown[e.QuestionID]; !ok {
			c.order = append(c.order, e.QuestionID)
		}
		c.shown[e.QuestionID] = Pending{QuestionID: e.QuestionID, Session: e.Session, Questions: e.Questions}
	case SurfExpired, SurfAnswered, SurfSkipped, SurfWithdrawn, SurfResumed:
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
func (c *socketConn) roundTrip(ctx context.Context, qid string, msg []byte) (gjson.Result, error) {
	c.reqMu.Lock()
	defer c.reqMu.Unlock()
	for drained := false; !drained; {
		select {
		case <-c.replies:
		default:
			drained = true
		}
	}
	wctx, cancel := context.WithTimeout(ctx, replyTimeout)
	defer cancel()
	if err := c.ws.Write(wctx, websocket.MessageText, msg); err != nil {
		return gjson.Result{}, fmt.Errorf("sending: %w", err)
	}
	for {
		select {
		case r := <-c.replies:
			m := gjson.ParseBytes(r)
			if id := m.Get("question_id").String(); id != "" && qid != "" && id != qid {
				continue
			}
			if m.Get("type").String() == "error" {
				return m, &Rejected{Code: m.Get("code").String(), Message: m.Get("error").String()}
			}
			return m, nil
		case <-c.done:
			return gjson.Result{}, errClosed
		case <-wctx.Done():
			return gjson.Result{}, fmt.Errorf("no reply from the bridge within %v", replyTimeout)
		}
	}
}

func (c *socketConn) Answer(ctx context.Context, qid string, answers map[string][]string) (Ack, error) {
	var msg any
	if c.s.kind == "control-ws" {
		// The surface builds the answer as an SDK would: one string per
		// question, multiSelect labels joined with ", ".
		joined := map[string]string{}
		for k, v := range answers {
			joined[k] = joinLabels(v)
		}
		c.mu.Lock()
		qs := c.shown[qid].Questions
		c.mu.Unlock()
		msg = map[string]any{"type": protocol.TypeControlResponse, "response": map[string]any{"subtype": "success", "request_id": qid,
			"response": map[string]any{"behavior": "allow", "updatedInput": map[string]any{"questions": qs, "answers": joined}}}}
	} else {
		vals := map[string]any{}
		for k, v := range answers {
			if len(v) == 1 {
				vals[k] = v[0]
			} else {
				vals[k] = v
			}
		}
		msg = map[string]any{"type": "ask_user_response", "data": map[string]any{"question_id": qid, "answers": vals, "cancelled": false}}
	}
	data, _ := json.Marshal(msg)
	r, err := c.roundTrip(ctx, qid, data)
	if err != nil {
		return Ack{}, err
	}
	var missing []string
	for _, m := range r.Get("missing").Array() {
		missing = append(missing, m.String())
	}
	return Ack{Status: r.Get("status").String(), Missing: missing}, nil
}

func (c *socketConn) Skip(ctx context.Context, qid, reason string) error {
	var msg any
	if c.s.kind == "control-ws" {
		msg = map[string]any{"type": protocol.TypeControlResponse, "response": map[string]any{"subtype": "success", "request_id": qid,
			"response": map[string]any{"behavior": "deny", "message": reason}}}
	} else {
		msg = map[string]any{"type": "ask_user_response", "data": map[string]any{"question_id": qid, "cancelled": true, "reason": reason}}
	}
	data, _ := json.Marshal(msg)
	_, err := c.roundTrip(ctx, qid, data)
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
