package bridgeapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/askctl/askctl/protocol"
)

// Client talks to a bridge's HTTP API: what askctl session, answer, skip,
// pending and watch use.
type Client struct {
	URL   string // http://127.0.0.1:7474
	Token string
	HTTP  *http.Client
}

// ErrUnreachable wraps errors reaching the bridge at all.
var ErrUnreachable = errors.New("bridge unreachable")

// ErrUnauthorized is a wrong or missing token.
var ErrUnauthorized = errors.New("unauthorized")

// RemoteError is an error response of the bridge.
type RemoteError struct {
	Status int
	APIError
}

func (e *RemoteError) Error() string { return e.APIError.Error }

// Is maps the bridge's error codes to the package's errors.
func (e *RemoteError) Is(target error) bool {
	t := ErrorOf(e.Code)
	return t != nil && t == target
}

// ErrorOf is the package error a bridge's error code names (on any surface:
// an HTTP error body, a WebSocket error message), or nil for a code that
// names none (internal, or one this package does not know).
func ErrorOf(code string) error {
	switch code {
	case "not_found":
		return ErrNotFound
	case "resolved", "session_taken":
		return ErrResolved
	case "invalid", "bad_request", "too_large":
		return ErrInvalid
	case "unauthorized", "forbidden_host":
		return ErrUnauthorized
	}
	return nil
}

// remoteError reads an error response's body; a body that is not the
// bridge's {"code","error"} becomes an internal error saying fallback.
func remoteError(status int, body []byte, fallback string) *RemoteError {
	re := &RemoteError{Status: status}
	if json.Unmarshal(body, &re.APIError) != nil || re.Code == "" {
		re.Code, re.APIError.Error = "internal", fallback
	}
	return re
}

func (c *Client) httpClient() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return &http.Client{Timeout: 30 * time.Second}
}

func (c *Client) do(ctx context.Context, method, path string, body, out any) (int, error) {
	var raw []byte
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		raw = b
	}
	return c.doRaw(ctx, method, path, raw, out)
}

// doRaw sends body as it is (nil: none).
func (c *Client) doRaw(ctx context.Context, method, path string, body []byte, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(c.URL, "/")+path, rd)
	if err != nil {
		return 0, fmt.Errorf("%w: %v", ErrUnreachable, err)
	}
	req.Header.Set("Authorization", "Bearer "+c.Token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.httpClient().Do(req)
	if err != nil {
		return 0, fmt.Errorf("%w at %s: %v", ErrUnreachable, c.URL, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return resp.StatusCode, fmt.Errorf("%w: reading the response: %v", ErrUnreachable, err)
	}
	if resp.StatusCode >= 400 {
		return resp.StatusCode, remoteError(resp.StatusCode, data, fmt.Sprintf("%s %s: %s", method, path, resp.Status))
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return resp.StatusCode, fmt.Errorf("%s %s: reading the answer: %w", method, path, err)
		}
	}
	return resp.StatusCode, nil
}

// Sessions lists the bridge's sessions.
func (c *Client) Sessions(ctx context.Context) ([]*Session, error) {
	var out []*Session
	_, err := c.do(ctx, http.MethodGet, "/api/sessions", nil, &out)
	return out, err
}

// StartSession starts a session.
func (c *Client) StartSession(ctx context.Context, o StartOptions) (*Session, error) {
	var out Session
	_, err := c.do(ctx, http.MethodPost, "/api/sessions", o, &out)
	return &out, err
}

// StopSession stops a session and returns it.
func (c *Client) StopSession(ctx context.Context, id string) (*Session, error) {
	var out Session
	_, err := c.do(ctx, http.MethodDelete, "/api/sessions/"+url.PathEscape(id), nil, &out)
	return &out, err
}

// LoginURL makes a one-time link that logs a browser in to the bridge's
// page (GET /login?code=…): it works once, within the bridge's login TTL
// (10 minutes unless configured).
func (c *Client) LoginURL(ctx context.Context) (string, time.Time, error) {
	var out Login
	if _, err := c.do(ctx, http.MethodPost, "/api/login", nil, &out); err != nil {
		return "", time.Time{}, err
	}
	return strings.TrimRight(c.URL, "/") + out.Path, out.ExpiresAt, nil
}

// Pending lists pending questions; session filters when set.
func (c *Client) Pending(ctx context.Context, session string) ([]*Question, error) {
	var out []*Question
	_, err := c.do(ctx, http.MethodGet, "/api/questions?session="+url.QueryEscape(session), nil, &out)
	return out, err
}

// Session returns one session.
func (c *Client) Session(ctx context.Context, id string) (*Session, error) {
	var out Session
	_, err := c.do(ctx, http.MethodGet, "/api/sessions/"+url.PathEscape(id), nil, &out)
	return &out, err
}

// SessionLog returns what happened in session id: its events, and the end
// of its agent's stderr.
func (c *Client) SessionLog(ctx context.Context, id string) (*SessionLog, error) {
	var out SessionLog
	_, err := c.do(ctx, http.MethodGet, "/api/sessions/"+url.PathEscape(id)+"/log", nil, &out)
	return &out, err
}

// Questions lists the questions with status ("all" for every status, ""
// for pending) of session ("" for every session).
func (c *Client) Questions(ctx context.Context, status, session string) ([]*Question, error) {
	q := url.Values{}
	if status != "" {
		q.Set("status", status)
	}
	if session != "" {
		q.Set("session", session)
	}
	var out []*Question
	_, err := c.do(ctx, http.MethodGet, "/api/questions?"+q.Encode(), nil, &out)
	return out, err
}

// Question returns one question.
func (c *Client) Question(ctx context.Context, id string) (*Question, error) {
	var out Question
	_, err := c.do(ctx, http.MethodGet, "/api/questions/"+url.PathEscape(id), nil, &out)
	return &out, err
}

// Answer answers a question (or part of a multi-question request).
func (c *Client) Answer(ctx context.Context, id string, answers map[string]Answer) (*AnswerResult, error) {
	return c.AnswerIn(ctx, "", id, answers)
}

// AnswerIn answers as Answer does, from the view of one session: a question
// of another session is refused (ErrNotFound).
func (c *Client) AnswerIn(ctx context.Context, session, id string, answers map[string]Answer) (*AnswerResult, error) {
	var out AnswerResult
	_, err := c.do(ctx, http.MethodPost, "/api/questions/"+url.PathEscape(id)+"/answer"+sessionQuery(session), AnswerRequest{Answers: answers}, &out)
	return &out, err
}

// AnswerRaw posts body as it is to question id's answer endpoint, from the
// view of session (when set): for a test of what the bridge makes of a
// malformed answer.
func (c *Client) AnswerRaw(ctx context.Context, session, id string, body []byte) error {
	_, err := c.doRaw(ctx, http.MethodPost, "/api/questions/"+url.PathEscape(id)+"/answer"+sessionQuery(session), body, nil)
	return err
}

// Skip declines a question.
func (c *Client) Skip(ctx context.Context, id, reason string, interrupt bool) (*Question, error) {
	return c.SkipIn(ctx, "", id, reason, interrupt)
}

// SkipIn skips as Skip does, from the view of one session.
func (c *Client) SkipIn(ctx context.Context, session, id, reason string, interrupt bool) (*Question, error) {
	var out Question
	_, err := c.do(ctx, http.MethodPost, "/api/questions/"+url.PathEscape(id)+"/skip"+sessionQuery(session), SkipRequest{Reason: reason, Interrupt: interrupt}, &out)
	return &out, err
}

func sessionQuery(session string) string {
	if session == "" {
		return ""
	}
	return "?session=" + url.QueryEscape(session)
}

// Events reads the SSE stream, calling f with each event until f returns an
// error, ctx ends, or the stream does. lastID >= 0 resumes after that event
// (0: from the start of the log); a negative lastID connects as a new
// client, which gets the current state, then live events.
func (c *Client) Events(ctx context.Context, session string, lastID int64, f func(Event) error) error {
	return c.EventsOpened(ctx, session, lastID, nil, f)
}

// EventsOpened is Events that also calls opened (when not nil) once the
// bridge has accepted the stream, before any event.
func (c *Client) EventsOpened(ctx context.Context, session string, lastID int64, opened func(), f func(Event) error) error {
	q := url.Values{}
	if session != "" {
		q.Set("session", session)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(c.URL, "/")+"/api/events?"+q.Encode(), nil)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnreachable, err)
	}
	req.Header.Set("Authorization", "Bearer "+c.Token)
	req.Header.Set("Accept", "text/event-stream")
	if lastID >= 0 {
		req.Header.Set("Last-Event-ID", strconv.FormatInt(lastID, 10))
	}
	resp, err := (&http.Client{}).Do(req)
	if err != nil {
		return fmt.Errorf("%w at %s: %v", ErrUnreachable, c.URL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return remoteError(resp.StatusCode, data, resp.Status)
	}
	if opened != nil {
		opened()
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), MaxBody*4)
	var data []byte
	var id int64
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if len(data) > 0 {
				var e Event
				if err := json.Unmarshal(data, &e); err != nil {
					return fmt.Errorf("event stream: %w", err)
				}
				if id > 0 {
					e.Seq = id
				}
				if err := f(e); err != nil {
					return err
				}
			}
			data, id = nil, 0
		case strings.HasPrefix(line, "data: "):
			data = append(data, line[len("data: "):]...)
		case strings.HasPrefix(line, "id: "):
			id, _ = strconv.ParseInt(line[len("id: "):], 10, 64)
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%w: event stream: %v", ErrUnreachable, err)
	}
	return fmt.Errorf("%w: the event stream ended", ErrUnreachable)
}

// OpenMCP opens the session of an MCP ask_user server.
func (c *Client) OpenMCP(ctx context.Context, label string) (*Session, error) {
	var out Session
	_, err := c.do(ctx, http.MethodPost, "/api/mcp", MCPOpen{Label: label}, &out)
	return &out, err
}

// AskMCP asks questions in MCP session id and waits, as long as ctx allows,
// until they are resolved; the question returned says how.
func (c *Client) AskMCP(ctx context.Context, id string, qs []protocol.Question) (*Question, error) {
	waiting := *c
	hc := *c.httpClient()
	hc.Timeout = 0 // the person takes as long as the bridge's timeout; ctx bounds it
	waiting.HTTP = &hc
	var out Question
	_, err := waiting.do(ctx, http.MethodPost, "/api/mcp/"+url.PathEscape(id)+"/ask", MCPAsk{Questions: qs}, &out)
	return &out, err
}
