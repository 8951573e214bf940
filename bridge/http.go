package bridge

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/askctl/askctl/bridgeapi"
	"github.com/askctl/askctl/protocol"
)

// Server is the bridge's user surfaces over HTTP: the JSON API, the SSE
// event stream, and the WebSocket protocol. Every request but /api/health
// needs the token.
type Server struct {
	B     *Bridge
	Token string
	// OriginPatterns lists extra hosts whose pages may open the WebSocket
	// (see websocket.AcceptOptions); by default only same-origin pages may.
	OriginPatterns []string
	// Keepalive is the SSE comment interval; default 15s.
	Keepalive time.Duration
	// Hosts lists the names the bridge answers to besides loopback ones
	// (localhost, 127.0.0.0/8, ::1). A request naming another Host is
	// refused, so a web page whose name resolves to loopback (DNS
	// rebinding) cannot talk to the bridge. AnyHost answers every name
	// (askctl serve --allow-remote).
	Hosts   []string
	AnyHost bool
	// WriteTimeout bounds each write to a surface client (an SSE event, a
	// WebSocket message); a client that does not read within it is
	// dropped, and reconnects where it left off. Default 10s.
	WriteTimeout time.Duration

	// LoginTTL is how long a login link for the page works; default
	// LoginTTL.
	LoginTTL time.Duration
	logins   logins // the page's one-time login codes

	// Limits bound what clients can hold, when the server is made by HTTP.
	Limits      Limits
	guard       *guard
	bodyTimeout time.Duration

	wsMu   sync.Mutex
	wsConn map[string]*wsClient // the active connection of each session (dashboards, on every session, are not kept)
}

// Handler routes the API.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/health", s.health)
	mux.HandleFunc("GET /api/sessions", s.auth(s.listSessions))
	mux.HandleFunc("POST /api/sessions", s.auth(s.startSession))
	mux.HandleFunc("GET /api/sessions/{id}", s.auth(s.getSession))
	mux.HandleFunc("DELETE /api/sessions/{id}", s.auth(s.stopSession))
	mux.HandleFunc("GET /api/sessions/{id}/log", s.auth(s.sessionLog))
	mux.HandleFunc("GET /api/questions", s.auth(s.listQuestions))
	mux.HandleFunc("GET /api/questions/{id}", s.auth(s.getQuestion))
	mux.HandleFunc("POST /api/questions/{id}/answer", s.auth(s.answer))
	mux.HandleFunc("POST /api/questions/{id}/skip", s.auth(s.skip))
	mux.HandleFunc("GET /api/events", s.authQuery(s.events))
	mux.HandleFunc("POST /api/mcp", s.auth(s.openMCP))
	mux.HandleFunc("POST /api/mcp/{id}/ask", s.auth(s.askMCP))
	mux.HandleFunc("GET /ws", s.authPage(s.ws))
	mux.HandleFunc("GET /control", s.authQuery(s.control))
	mux.HandleFunc("POST /api/login", s.auth(s.apiLogin))
	mux.HandleFunc("POST /api/logout", s.logout)
	mux.HandleFunc("GET /login", s.login)
	mux.HandleFunc("GET /{$}", s.page)
	mux.Handle("GET /page/", s.assets())
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no route %s %s (see the bridge package docs)", r.Method, r.URL.Path))
	})
	return s.checkHost(mux)
}

func (s *Server) writeTimeout() time.Duration {
	if s.WriteTimeout > 0 {
		return s.WriteTimeout
	}
	return 10 * time.Second
}

// IsLoopback reports whether host (a name or an address, no port) is this
// machine's loopback: localhost, 127.0.0.0/8 or ::1.
func IsLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// checkHost refuses a request whose Host the bridge does not answer to.
func (s *Server) checkHost(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.AnyHost && !s.hostAllowed(r.Host) {
			writeError(w, http.StatusForbidden, "forbidden_host", fmt.Sprintf("Host %q is not a name this bridge answers to (loopback names, and those given with --host)", r.Host))
			return
		}
		h.ServeHTTP(w, r)
	})
}

func (s *Server) hostAllowed(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if IsLoopback(host) {
		return true
	}
	for _, h := range s.Hosts {
		if strings.EqualFold(h, host) {
			return true
		}
	}
	return false
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, bridgeapi.APIError{Code: code, Error: msg})
}

// errorCode is the one mapping of the bridge's errors to an HTTP status and
// the code every surface names them by.
func errorCode(err error) (int, string) {
	var mbe *http.MaxBytesError
	switch {
	case errors.Is(err, bridgeapi.ErrNotFound):
		return http.StatusNotFound, "not_found"
	case errors.Is(err, bridgeapi.ErrResolved):
		return http.StatusConflict, "resolved"
	case errors.Is(err, bridgeapi.ErrInvalid):
		return http.StatusUnprocessableEntity, "invalid"
	case errors.As(err, &mbe):
		return http.StatusRequestEntityTooLarge, "too_large"
	case errors.Is(err, errBadRequest):
		return http.StatusBadRequest, "bad_request"
	}
	return http.StatusInternalServerError, "internal"
}

// fail answers a request with the error's status and code.
func fail(w http.ResponseWriter, err error) {
	status, code := errorCode(err)
	msg := err.Error()
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		msg = fmt.Sprintf("request body over %d bytes", mbe.Limit)
	}
	writeError(w, status, code, msg)
}

var errBadRequest = errors.New("bad request")

// auth takes the token from the Authorization header only.
func (s *Server) auth(h http.HandlerFunc) http.HandlerFunc { return s.checkToken(h, false, false) }

// authQuery also takes ?token=: browsers cannot set headers on a WebSocket
// or an EventSource, the only routes that take it.
func (s *Server) authQuery(h http.HandlerFunc) http.HandlerFunc { return s.checkToken(h, true, false) }

// authPage is authQuery that also takes a page's key, offered as a
// WebSocket subprotocol: the page's socket (/ws) is all a key opens.
func (s *Server) authPage(h http.HandlerFunc) http.HandlerFunc { return s.checkToken(h, true, true) }

func (s *Server) checkToken(h http.HandlerFunc, query, page bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		// The scheme is case-insensitive (RFC 9110): "bearer" is Bearer.
		scheme, tok, ok := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
		ok = ok && strings.EqualFold(scheme, "Bearer")
		tok = strings.TrimSpace(tok)
		if !ok {
			tok = ""
		}
		if !ok && query {
			if page && s.pageKey(r) {
				s.admitted(h, query)(w, r)
				return
			}
			tok = r.URL.Query().Get("token")
		}
		if s.Token == "" || subtle.ConstantTimeCompare([]byte(tok), []byte(s.Token)) != 1 {
			// A stranger gets a short answer and keeps no connection.
			w.Header().Set("Connection", "close")
			writeError(w, http.StatusUnauthorized, "unauthorized", "missing or wrong token: send Authorization: Bearer TOKEN (the token is in the bridge's token file)")
			return
		}
		s.admitted(h, query)(w, r)
	}
}

// admitted runs h for a client that showed the token: its connection is
// not taken back while it serves it (see Limits), and its body must come
// within the body timeout. stream: h keeps the connection (SSE, WebSocket).
func (s *Server) admitted(h http.HandlerFunc, stream bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.guard.admit(r, stream) {
			w.Header().Set("Connection", "close")
			writeError(w, http.StatusServiceUnavailable, "busy", "too many connections: the bridge keeps the rest for new requests; close some and try again")
			return
		}
		if s.bodyTimeout > 0 && r.ContentLength != 0 && r.Header.Get("Upgrade") == "" {
			_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(s.bodyTimeout))
		}
		h(w, r)
	}
}

// decode reads a JSON body strictly: known fields, one value, bounded size.
func decode(w http.ResponseWriter, r *http.Request, v any) error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, bridgeapi.MaxBody))
	if err != nil {
		return err
	}
	return decodeStrict(body, v)
}

func decodeStrict(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return fmt.Errorf("%w: field %q: want %s, got %s", errBadRequest, te.Field, protocol.KindName(te.Type.Kind()), te.Value)
		}
		return fmt.Errorf("%w: %v", errBadRequest, err)
	}
	if dec.More() && !defect("trailing-json-accepted") {
		return fmt.Errorf("%w: more than one JSON value", errBadRequest)
	}
	return nil
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"ok": true})
}

func (s *Server) listSessions(w http.ResponseWriter, r *http.Request) {
	ss, err := s.B.Sessions(r.Context())
	if err != nil {
		fail(w, err)
		return
	}
	if ss == nil {
		ss = []*bridgeapi.Session{}
	}
	writeJSON(w, http.StatusOK, ss)
}

func (s *Server) startSession(w http.ResponseWriter, r *http.Request) {
	var o bridgeapi.StartOptions
	if err := decode(w, r, &o); err != nil {
		fail(w, err)
		return
	}
	replied := make(chan struct{})
	defer close(replied)
	ss, err := s.B.StartSession(WithStartReply(r.Context(), replied), o)
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, ss)
	if f, ok := w.(http.Flusher); ok {
		f.Flush() // given: in the kernel's hands, whatever ends the process next
	}
}

func (s *Server) openMCP(w http.ResponseWriter, r *http.Request) {
	var o bridgeapi.MCPOpen
	if r.ContentLength != 0 {
		if err := decode(w, r, &o); err != nil {
			fail(w, err)
			return
		}
	}
	ss, err := s.B.OpenMCP(r.Context(), o.Label)
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, ss)
}

// askMCP holds the request until the question is resolved; a client that
// goes away withdraws it.
func (s *Server) askMCP(w http.ResponseWriter, r *http.Request) {
	var a bridgeapi.MCPAsk
	if err := decode(w, r, &a); err != nil {
		fail(w, err)
		return
	}
	q, err := s.B.AskMCP(r.Context(), r.PathValue("id"), a.Questions)
	if err != nil {
		if r.Context().Err() != nil {
			return // the client is gone
		}
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, q)
}

func (s *Server) getSession(w http.ResponseWriter, r *http.Request) {
	ss, err := s.B.Session(r.Context(), r.PathValue("id"))
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, ss)
}

func (s *Server) sessionLog(w http.ResponseWriter, r *http.Request) {
	l, err := s.B.SessionLog(r.Context(), r.PathValue("id"))
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, l)
}

func (s *Server) stopSession(w http.ResponseWriter, r *http.Request) {
	if err := s.B.StopSession(r.Context(), r.PathValue("id")); err != nil {
		fail(w, err)
		return
	}
	s.getSession(w, r)
}

func (s *Server) listQuestions(w http.ResponseWriter, r *http.Request) {
	status := r.URL.Query().Get("status")
	if status == "" && defect("pending-list-unfiltered") {
		status = "all"
	}
	switch status {
	case "":
		status = bridgeapi.QuestionPending
	case "all":
		status = ""
	case bridgeapi.QuestionPending, bridgeapi.QuestionAnswered, bridgeapi.QuestionSkipped, bridgeapi.QuestionExpired, bridgeapi.QuestionCancelled, bridgeapi.QuestionWithdrawn:
	default:
		writeError(w, http.StatusBadRequest, "bad_request", fmt.Sprintf("status %q: want pending, answered, skipped, expired, cancelled, withdrawn or all", status))
		return
	}
	session := r.URL.Query().Get("session")
	if defect("pending-filter-param") {
		session = r.URL.Query().Get("session_id")
	}
	qs, err := s.B.Questions(r.Context(), status, session)
	if err != nil {
		fail(w, err)
		return
	}
	if qs == nil {
		qs = []*bridgeapi.Question{}
	}
	writeJSON(w, http.StatusOK, qs)
}

func (s *Server) getQuestion(w http.ResponseWriter, r *http.Request) {
	q, err := s.B.Question(r.Context(), r.PathValue("id"))
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, q)
}

func (s *Server) answer(w http.ResponseWriter, r *http.Request) {
	var req bridgeapi.AnswerRequest
	if err := decode(w, r, &req); err != nil {
		fail(w, err)
		return
	}
	if err := s.inSession(r); err != nil {
		fail(w, err)
		return
	}
	res, err := s.B.Answer(r.Context(), r.PathValue("id"), req.Answers)
	if err != nil {
		fail(w, err)
		return
	}
	status := http.StatusOK
	if res.Held {
		status = http.StatusAccepted
	}
	writeJSON(w, status, res)
}

// inSession refuses an answer or skip sent from one session's view
// (?session=ID) to a question of another.
func (s *Server) inSession(r *http.Request) error {
	return s.questionIn(r.Context(), r.PathValue("id"), r.URL.Query().Get("session"))
}

// questionIn refuses question qid when it is not in session (a surface that
// shows one session cannot answer another's questions by mistake); with no
// session, or no such question (the answer says so), there is nothing to
// refuse.
func (s *Server) questionIn(ctx context.Context, qid, session string) error {
	if session == "" || defect("sessions-crossed") {
		return nil
	}
	if q, err := s.B.Question(ctx, qid); err == nil && q.SessionID != session {
		return fmt.Errorf("%w: question %s is not in session %s", bridgeapi.ErrNotFound, qid, session)
	}
	return nil
}

func (s *Server) skip(w http.ResponseWriter, r *http.Request) {
	var req bridgeapi.SkipRequest
	if r.ContentLength != 0 {
		if err := decode(w, r, &req); err != nil {
			fail(w, err)
			return
		}
	}
	if err := s.inSession(r); err != nil {
		fail(w, err)
		return
	}
	q, err := s.B.Skip(r.Context(), r.PathValue("id"), req.Reason, req.Interrupt)
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, q)
}

// replayKey is what a stream remembers it showed as pending, so that the
// live feed does not show it again: the question.
func replayKey(e bridgeapi.Event) string {
	if defect("sse-replayed-by-session") {
		return e.SessionID // the session's question is shown
	}
	return e.QuestionID
}

// events is the SSE stream: every event with its sequence number as the id.
// A client that reconnects with Last-Event-ID gets what it missed from the
// log; a new client first gets the state (Snapshot, without ids), then live
// events.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		writeError(w, http.StatusInternalServerError, "internal", "streaming unsupported")
		return
	}
	session := r.URL.Query().Get("session")
	if session != "" {
		if _, err := s.B.Session(r.Context(), session); err != nil {
			fail(w, err)
			return
		}
	}
	last := r.Header.Get("Last-Event-ID")
	if last == "" {
		last = r.URL.Query().Get("last_event_id")
	}
	if defect("resume-ignores-last-id") {
		last = "" // a resumed stream starts over, as a new one
	}
	var after int64 = -1
	if last != "" {
		n, err := strconv.ParseInt(last, 10, 64)
		if err != nil || n < 0 {
			writeError(w, http.StatusBadRequest, "bad_request", fmt.Sprintf("Last-Event-ID %q: want a sequence number", last))
			return
		}
		after = n
	}
	sub := s.B.Subscribe(session)
	defer sub.Close()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	fl.Flush() // the client knows it is connected before the first event
	rc := http.NewResponseController(w)
	send := func(e bridgeapi.Event, withID bool) error {
		// A client that stops reading is dropped, not held: the same bound
		// as on the WebSocket.
		_ = rc.SetWriteDeadline(time.Now().Add(s.writeTimeout()))
		data, _ := json.Marshal(e)
		var b strings.Builder
		if withID {
			fmt.Fprintf(&b, "id: %d\n", e.Seq)
		}
		fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", e.Type, data)
		if _, err := io.WriteString(w, b.String()); err != nil {
			return err
		}
		return rc.Flush()
	}
	ctx := r.Context()
	if after >= 0 {
		// An id ahead of the log is another log's (the database was
		// replaced, or the client heard another bridge): start over with a
		// snapshot rather than wait for a number this log may never reach.
		if head, err := s.B.Head(ctx); err != nil {
			return
		} else if after > head {
			after = -1
		}
	}
	if after >= 0 {
		if defect("resume-skips-one") {
			after++ // the stream resumes at the event after the last one heard
		}
		for {
			backlog, err := s.B.EventsAfter(ctx, after, session, 500)
			if err != nil {
				return
			}
			for _, e := range backlog {
				if send(e, true) != nil {
					return
				}
				after = e.Seq
			}
			if len(backlog) < 500 {
				break
			}
		}
	}
	replayed := map[string]bool{}
	if after < 0 {
		// The snapshot holds every event logged up to head: its last event
		// carries head as its id, so a client that heard only the
		// snapshot resumes after it (Last-Event-ID) and is not shown the
		// same pending questions again; what comes live up to head is in
		// the snapshot already.
		head, err := s.B.Head(ctx)
		if err != nil {
			return
		}
		snap := s.B.Snapshot(ctx, session)
		for i, e := range snap {
			withID := i == len(snap)-1
			if withID {
				e.Seq = head
			}
			if send(e, withID) != nil {
				return
			}
			if !defect("sse-replayed-by-session") || e.Type == bridgeapi.EventQuestion {
				replayed[replayKey(e)] = e.Type == bridgeapi.EventQuestion
			}
		}
		after = head
	}
	keep := s.Keepalive
	if keep <= 0 {
		keep = 15 * time.Second
	}
	tick := time.NewTicker(keep)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			_ = rc.SetWriteDeadline(time.Now().Add(s.writeTimeout()))
			if _, err := io.WriteString(w, ": keepalive\n\n"); err != nil {
				return
			}
			if rc.Flush() != nil {
				return
			}
		case e, ok := <-sub.C:
			if !ok {
				return // fell behind: the client reconnects with Last-Event-ID
			}
			if after >= 0 && e.Seq > 0 && e.Seq <= after {
				continue // already sent from the log
			}
			if (e.Type == bridgeapi.EventQuestion || defect("replay-outcome-dropped")) && replayed[replayKey(e)] {
				continue // already sent as pending
			}
			if send(e, true) != nil {
				return
			}
		}
	}
}
