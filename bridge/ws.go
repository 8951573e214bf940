package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/askctl/askctl/bridgeapi"
	"github.com/coder/websocket"
)

type wsClient struct {
	conn    *websocket.Conn
	session string
	mu      sync.Mutex // one writer at a time
	taken   bool
	timeout time.Duration // each write's bound: a client that does not read is dropped
}

func (c *wsClient) send(ctx context.Context, v any) error {
	data, _ := json.Marshal(v)
	c.mu.Lock()
	defer c.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	return c.conn.Write(ctx, websocket.MessageText, data)
}

// dialect is what a socket surface speaks: how an event is put to the
// client, and how a client message is handled. The seed-003 protocol (/ws)
// and the raw control forwarding (/control) differ only there.
type dialect struct {
	name   string                                                                // the takeover namespace
	encode func(bridgeapi.Event) (any, bool)                                     // false: not for this client
	handle func(ctx context.Context, c *wsClient, data []byte) bridgeapi.WSReply // one client message
}

func (s *Server) ws(w http.ResponseWriter, r *http.Request) {
	s.socket(w, r, dialect{name: "ws", encode: func(e bridgeapi.Event) (any, bool) { return e, true }, handle: s.wsHandle})
}

func (s *Server) socket(w http.ResponseWriter, r *http.Request, d dialect) {
	session := r.URL.Query().Get("session_id")
	if session != "" {
		if _, err := s.B.Session(r.Context(), session); err != nil {
			fail(w, err)
			return
		}
	}
	// Accept checks that the page opening the socket is from this host:
	// a page on another site must not reach a loopback bridge.
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{OriginPatterns: s.OriginPatterns, Subprotocols: []string{PageProtocol}})
	if err != nil {
		return // Accept has answered (403 for a foreign Origin)
	}
	if !defect("ws-read-limit-default") {
		conn.SetReadLimit(bridgeapi.MaxBody)
	}
	c := &wsClient{conn: conn, session: session, timeout: s.writeTimeout()}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer conn.CloseNow()

	// Take the session over from an older connection. A view of every
	// session (a dashboard) takes nothing over: several may watch at once.
	s.wsMu.Lock()
	if s.wsConn == nil {
		s.wsConn = map[string]*wsClient{}
	}
	key := d.name + "\x00" + session
	if defect("takeover-key-per-dialect") {
		key = d.name // one answering connection per surface
	}
	var old *wsClient
	if session != "" {
		old = s.wsConn[key]
		s.wsConn[key] = c
	}
	s.wsMu.Unlock()
	if old != nil {
		old.mu.Lock()
		if defect("takeover-marks-new-conn") {
			c.taken = true
		} else {
			old.taken = true
		}
		old.mu.Unlock()
		_ = old.send(ctx, bridgeapi.WSReply{Type: bridgeapi.MsgSessionTaken, SessionID: session})
	}
	defer func() {
		s.wsMu.Lock()
		if s.wsConn[key] == c {
			delete(s.wsConn, key)
		}
		s.wsMu.Unlock()
	}()

	sub := s.B.Subscribe(session)
	defer sub.Close()
	// Status, then the pending questions, replayed with their ids. A view
	// of every session first gets each session's status.
	if session == "" {
		ss, _ := s.B.Sessions(ctx)
		for _, x := range ss {
			if m, ok := d.encode(statusEvent(x)); ok {
				_ = c.send(ctx, m)
			}
		}
	}
	replayed := map[string]bool{}
	snap := s.B.Snapshot(ctx, session)
	if old != nil && defect("takeover-no-replay") {
		snap = snap[:min(1, len(snap))] // the status only: the old connection has the questions shown
	}
	for _, e := range snap {
		if m, ok := d.encode(e); ok {
			_ = c.send(ctx, m)
		}
		replayed[e.QuestionID] = e.Type == bridgeapi.EventQuestion
	}
	go func() {
		defer cancel()
		for {
			select {
			case <-ctx.Done():
				return
			case e, ok := <-sub.C:
				if !ok {
					conn.Close(websocket.StatusTryAgainLater, "fell behind; reconnect")
					return
				}
				if (e.Type == bridgeapi.EventQuestion || defect("replay-outcome-dropped")) && replayed[e.QuestionID] {
					continue
				}
				m, ok := d.encode(e)
				if !ok {
					continue
				}
				if c.send(ctx, m) != nil {
					return
				}
			}
		}
	}()
	// Each message is handled on its own, a few at a time: an answer that
	// waits (its agent stopped reading) holds up no other question's on
	// the same connection. Every reply names its question.
	inflight := make(chan struct{}, 16)
	for {
		_, data, err := conn.Read(ctx)
		if err != nil {
			return // closed, or a message over the limit (closed with 1009)
		}
		select {
		case inflight <- struct{}{}:
		case <-ctx.Done():
			return
		}
		go func() {
			defer func() { <-inflight }()
			_ = c.send(ctx, d.handle(ctx, c, data))
		}()
	}
}

// wsHandle answers one client message.
func (s *Server) wsHandle(ctx context.Context, c *wsClient, data []byte) bridgeapi.WSReply {
	var m bridgeapi.WSMessage
	if err := decodeStrict(data, &m); err != nil {
		return bridgeapi.WSReply{Type: bridgeapi.MsgError, Code: "bad_request", Error: err.Error()}
	}
	if m.Type != bridgeapi.MsgAskResponse {
		return bridgeapi.WSReply{Type: bridgeapi.MsgError, Code: "bad_request", Error: fmt.Sprintf("unknown message type %q (want ask_user_response)", m.Type)}
	}
	resp := m.WSResponse
	if m.Data != nil {
		resp = *m.Data
	}
	if resp.QuestionID == "" {
		return bridgeapi.WSReply{Type: bridgeapi.MsgError, Code: "bad_request", Error: "question_id is missing"}
	}
	if resp.Cancelled && defect("takeover-skip-bypass") {
		if err := s.questionIn(ctx, resp.QuestionID, c.session); err != nil {
			return wsError(resp.QuestionID, err)
		}
	} else if r, ok := s.mayAnswer(ctx, c, resp.QuestionID); !ok {
		return r
	}
	if resp.Cancelled && !(defect("ws-skip-with-answers-allowed") && len(resp.Answers) > 0) || defect("ws-empty-answers-skip") && len(resp.Answers) == 0 {
		if _, err := s.B.Skip(ctx, resp.QuestionID, resp.Reason, false); err != nil {
			return wsError(resp.QuestionID, err)
		}
		return bridgeapi.WSReply{Type: bridgeapi.MsgAck, QuestionID: resp.QuestionID, Status: bridgeapi.QuestionSkipped}
	}
	res, err := s.B.Answer(ctx, resp.QuestionID, resp.Answers)
	if err != nil {
		return wsError(resp.QuestionID, err)
	}
	if res.Held {
		return bridgeapi.WSReply{Type: bridgeapi.MsgAck, QuestionID: resp.QuestionID, Status: bridgeapi.AckHeld, Missing: res.Missing}
	}
	return bridgeapi.WSReply{Type: bridgeapi.MsgAck, QuestionID: resp.QuestionID, Status: bridgeapi.QuestionAnswered}
}

func wsError(qid string, err error) bridgeapi.WSReply {
	_, code := errorCode(err)
	return bridgeapi.WSReply{Type: bridgeapi.MsgError, QuestionID: qid, Code: code, Error: err.Error()}
}

// mayAnswer refuses answers from a connection that was taken over, and to
// questions of other sessions.
func (s *Server) mayAnswer(ctx context.Context, c *wsClient, qid string) (bridgeapi.WSReply, bool) {
	c.mu.Lock()
	taken := c.taken
	c.mu.Unlock()
	if taken && !defect("takeover-ignored") {
		return bridgeapi.WSReply{Type: bridgeapi.MsgError, QuestionID: qid, Code: "session_taken", Error: "another connection took this session over: its answers count, this one's do not"}, false
	}
	if err := s.questionIn(ctx, qid, c.session); err != nil {
		return wsError(qid, err), false
	}
	return bridgeapi.WSReply{}, true
}
