package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// The WebSocket surface speaks seed 003's protocol, one connection per
// session (GET /ws?session_id=ID; without it, every session).
//
// Server → client:
//
//	{"type":"ask_user_question","question_id":"q_…","session_id":"s_…","questions":[…],"timeout_seconds":300}
//	{"type":"ask_user_timeout","question_id":"q_…","error":"User response timed out"}
//	{"type":"session_status","session_id":"s_…","status":"running","waiting_for_user":true,"pending_question_id":"q_…"}
//	{"type":"session_taken","session_id":"s_…"}      this connection was taken over
//	{"type":"ask_user_ack","question_id":"q_…","status":"answered"|"held"|"skipped","missing":[…]}
//	{"type":"error","question_id":"q_…","code":"invalid"|"resolved"|"not_found"|"session_taken"|"bad_request","error":"…"}
//
// and the bridge's other events (ask_user_answered, ask_user_skipped,
// ask_user_withdrawn, ask_user_held, ask_user_resumed) as they happen.
//
// Client → server:
//
//	{"type":"ask_user_response","data":{"question_id":"q_…","answers":{"<question text>":"<label>"},"cancelled":false}}
//
// (the fields may also stand at the top level). answers values are strings
// (multiSelect labels joined with ", ") or arrays of labels; cancelled true
// skips the question. On connect the bridge sends the session's status and
// replays its pending questions, with the same ids. A newer connection to
// the same session takes it over: the old one gets session_taken, and its
// answers are rejected. A connection to every session (no session_id, a
// dashboard) takes nothing over.

type wsClient struct {
	conn    *websocket.Conn
	session string
	mu      sync.Mutex // one writer at a time
	taken   bool
}

func (c *wsClient) send(ctx context.Context, v any) error {
	data, _ := json.Marshal(v)
	c.mu.Lock()
	defer c.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return c.conn.Write(ctx, websocket.MessageText, data)
}

// wsMessage is a message from the client.
type wsMessage struct {
	Type string      `json:"type"`
	Data *wsResponse `json:"data,omitempty"`
	wsResponse
}

type wsResponse struct {
	QuestionID string            `json:"question_id,omitempty"`
	Answers    map[string]Answer `json:"answers,omitempty"`
	Cancelled  bool              `json:"cancelled,omitempty"`
	Reason     string            `json:"reason,omitempty"`
}

type wsReply struct {
	Type       string   `json:"type"`
	QuestionID string   `json:"question_id,omitempty"`
	SessionID  string   `json:"session_id,omitempty"`
	Status     string   `json:"status,omitempty"`
	Missing    []string `json:"missing,omitempty"`
	Code       string   `json:"code,omitempty"`
	Error      string   `json:"error,omitempty"`
}

// dialect is what a socket surface speaks: how an event is put to the
// client, and how a client message is handled. The seed-003 protocol (/ws)
// and the raw control forwarding (/control) differ only there.
type dialect struct {
	name   string                                                      // the takeover namespace
	encode func(Event) (any, bool)                                     // false: not for this client
	handle func(ctx context.Context, c *wsClient, data []byte) wsReply // one client message
}

func (s *Server) ws(w http.ResponseWriter, r *http.Request) {
	s.socket(w, r, dialect{name: "ws", encode: func(e Event) (any, bool) { return e, true }, handle: s.wsHandle})
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
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{OriginPatterns: s.OriginPatterns})
	if err != nil {
		return // Accept has answered (403 for a foreign Origin)
	}
	conn.SetReadLimit(MaxBody)
	c := &wsClient{conn: conn, session: session}
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
	var old *wsClient
	if session != "" {
		old = s.wsConn[key]
		s.wsConn[key] = c
	}
	s.wsMu.Unlock()
	if old != nil {
		old.mu.Lock()
		old.taken = true
		old.mu.Unlock()
		_ = old.send(ctx, wsReply{Type: "session_taken", SessionID: session})
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
	// Status, then the pending questions, replayed with their ids.
	replayed := map[string]bool{}
	for _, e := range s.B.Snapshot(ctx, session) {
		if m, ok := d.encode(e); ok {
			_ = c.send(ctx, m)
		}
		replayed[e.QuestionID] = e.Type == EventQuestion
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
				if e.Type == EventQuestion && replayed[e.QuestionID] {
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
	for {
		_, data, err := conn.Read(ctx)
		if err != nil {
			return // closed, or a message over the limit (closed with 1009)
		}
		_ = c.send(ctx, d.handle(ctx, c, data))
	}
}

// wsHandle answers one client message.
func (s *Server) wsHandle(ctx context.Context, c *wsClient, data []byte) wsReply {
	var m wsMessage
	if err := decodeStrict(data, &m); err != nil {
		return wsReply{Type: "error", Code: "bad_request", Error: err.Error()}
	}
	if m.Type != "ask_user_response" {
		return wsReply{Type: "error", Code: "bad_request", Error: fmt.Sprintf("unknown message type %q (want ask_user_response)", m.Type)}
	}
	resp := m.wsResponse
	if m.Data != nil {
		resp = *m.Data
	}
	if resp.QuestionID == "" {
		return wsReply{Type: "error", Code: "bad_request", Error: "question_id is missing"}
	}
	if r, ok := s.mayAnswer(ctx, c, resp.QuestionID); !ok {
		return r
	}
	if resp.Cancelled {
		if _, err := s.B.Skip(ctx, resp.QuestionID, resp.Reason, false); err != nil {
			return wsError(resp.QuestionID, err)
		}
		return wsReply{Type: "ask_user_ack", QuestionID: resp.QuestionID, Status: QuestionSkipped}
	}
	res, err := s.B.Answer(ctx, resp.QuestionID, resp.Answers)
	if err != nil {
		return wsError(resp.QuestionID, err)
	}
	if res.Held {
		return wsReply{Type: "ask_user_ack", QuestionID: resp.QuestionID, Status: "held", Missing: res.Missing}
	}
	return wsReply{Type: "ask_user_ack", QuestionID: resp.QuestionID, Status: QuestionAnswered}
}

func wsError(qid string, err error) wsReply {
	_, code := errorCode(err)
	return wsReply{Type: "error", QuestionID: qid, Code: code, Error: err.Error()}
}

// mayAnswer refuses answers from a connection that was taken over, and to
// questions of other sessions.
func (s *Server) mayAnswer(ctx context.Context, c *wsClient, qid string) (wsReply, bool) {
	c.mu.Lock()
	taken := c.taken
	c.mu.Unlock()
	if taken && !defect("takeover-ignored") {
		return wsReply{Type: "error", QuestionID: qid, Code: "session_taken", Error: "another connection took this session over: its answers count, this one's do not"}, false
	}
	if err := s.questionIn(ctx, qid, c.session); err != nil {
		return wsError(qid, err), false
	}
	return wsReply{}, true
}
