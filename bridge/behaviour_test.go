//go:build !mutation

package bridge_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/askctl/askctl/bridge"
	"github.com/askctl/askctl/bridgeapi"
	"github.com/askctl/askctl/fakeclaude"
	"github.com/askctl/askctl/policy"
	"github.com/coder/websocket"
	"github.com/tidwall/gjson"
)

var bg = context.Background()

func TestSkipIsADeny(t *testing.T) {
	e := newEnv(t, bridge.Config{})
	s := e.start("ask-skip", "Ask me how to format.")
	q := e.pending(s.ID, 1)[0]
	if _, err := e.c.Skip(bg, q.ID, "User skipped this question", false); err != nil {
		t.Fatal(err)
	}
	ended := e.ended(s.ID)
	sent := answersSent(e.transcript(ended.ClaudeSessionID))
	if *ended.ExitCode != 0 || len(sent) != 1 || gjson.Get(sent[0], "behavior").String() != "deny" || gjson.Get(sent[0], "message").String() != "User skipped this question" {
		t.Errorf("exit %d (%s), the agent received %v", *ended.ExitCode, ended.Detail, sent)
	}
	got, _ := e.c.Question(bg, q.ID)
	if got.Status != bridgeapi.QuestionSkipped {
		t.Errorf("status %s, want skipped", got.Status)
	}
}

func TestTimeout(t *testing.T) {
	e := newEnv(t, bridge.Config{Timeout: 300 * time.Millisecond})
	sub := e.b.Subscribe("")
	defer sub.Close()
	s := e.start("ask-skip", "Ask me how to format.")
	q := e.pending(s.ID, 1)[0]
	if q.TimeoutSeconds != 1 || q.Deadline.Sub(q.CreatedAt) != 300*time.Millisecond { // rounded up: never 0
		t.Errorf("timeout_seconds %d, deadline %v after", q.TimeoutSeconds, q.Deadline.Sub(q.CreatedAt))
	}
	ended := e.ended(s.ID)
	sent := answersSent(e.transcript(ended.ClaudeSessionID))
	if len(sent) != 1 || gjson.Get(sent[0], "behavior").String() != "deny" || !strings.Contains(gjson.Get(sent[0], "message").String(), "timed out") {
		t.Fatalf("the agent received %v, want a deny saying it timed out", sent)
	}
	if _, err := e.c.Answer(bg, q.ID, map[string]bridgeapi.Answer{"1": {"Summary"}, "2": {"Intro"}}); !errors.Is(err, bridgeapi.ErrResolved) || !strings.Contains(err.Error(), "expired") {
		t.Errorf("a late answer: %v, want bridgeapi.ErrResolved naming the expiry", err)
	}
	if n := len(answersSent(e.transcript(ended.ClaudeSessionID))); n != 1 {
		t.Errorf("the agent received %d responses, want 1", n)
	}
	waitEvent(t, sub, func(ev bridgeapi.Event) bool {
		return ev.Type == bridgeapi.EventTimeout && ev.QuestionID == q.ID && ev.Error != ""
	})
}

func waitEvent(t *testing.T, sub *bridge.Subscription, ok func(bridgeapi.Event) bool) bridgeapi.Event {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev, open := <-sub.C:
			if !open {
				t.Fatal("subscription closed")
			}
			if ok(ev) {
				return ev
			}
		case <-timeout:
			t.Fatal("no such event within 10s")
		}
	}
}

// TestPartialAnswersAreHeld: answers to part of a multi-question request are
// held; the agent gets one response, with every answer, when the last comes.
func TestPartialAnswersAreHeld(t *testing.T) {
	e := newEnv(t, bridge.Config{})
	s := e.start("ask-multi", "Ask me how to format.")
	q := e.pending(s.ID, 1)[0]
	res, err := e.c.Answer(bg, q.ID, map[string]bridgeapi.Answer{"1": {"Summary"}})
	if err != nil || !res.Held || len(res.Missing) != 1 || res.Missing[0] != "Which sections?" {
		t.Fatalf("first part: %+v, %v", res, err)
	}
	if res, err = e.c.Answer(bg, q.ID, map[string]bridgeapi.Answer{"Which sections?": {"Intro", "Outro"}}); err != nil || res.Held {
		t.Fatalf("second part: %+v, %v", res, err)
	}
	ended := e.ended(s.ID)
	sent := answersSent(e.transcript(ended.ClaudeSessionID))
	if *ended.ExitCode != 0 || len(sent) != 1 || gjson.Get(sent[0], "updatedInput.answers").Raw != `{"How should I format the output?":"Summary","Which sections?":"Intro, Outro"}` {
		t.Errorf("exit %d, the agent received %v", *ended.ExitCode, sent)
	}
}

// TestBadAnswersLeaveItPending: every malformed answer gets a clear error,
// and the question stays pending and answerable.
func TestBadAnswersLeaveItPending(t *testing.T) {
	e := newEnv(t, bridge.Config{})
	s := e.start("ask-multi", "Ask me how to format.")
	q := e.pending(s.ID, 1)[0]
	tests := []struct {
		id      string
		answers map[string]bridgeapi.Answer
		want    error
		text    string
	}{
		{"q_nosuch", map[string]bridgeapi.Answer{"1": {"Summary"}}, bridgeapi.ErrNotFound, "not found"},
		{q.ID, nil, bridgeapi.ErrInvalid, "no answers given"},
		{q.ID, map[string]bridgeapi.Answer{"What colour?": {"Red"}}, bridgeapi.ErrInvalid, `no question "What colour?" here`},
		{q.ID, map[string]bridgeapi.Answer{"9": {"Red"}}, bridgeapi.ErrInvalid, `no question "9"`},
		{q.ID, map[string]bridgeapi.Answer{"1": {"  "}}, bridgeapi.ErrInvalid, "blank answer"},
		{q.ID, map[string]bridgeapi.Answer{"1": {}}, bridgeapi.ErrInvalid, "empty answer"},
		{q.ID, map[string]bridgeapi.Answer{"1": {"Summary", "Detailed"}}, bridgeapi.ErrInvalid, "takes one answer"},
		{q.ID, map[string]bridgeapi.Answer{"2": {"Intro", "Intro"}}, bridgeapi.ErrInvalid, "selected twice"},
		{q.ID, map[string]bridgeapi.Answer{"1": {"Summary"}, "How should I format the output?": {"Detailed"}}, bridgeapi.ErrInvalid, "answered twice"},
	}
	for _, tt := range tests {
		if _, err := e.c.Answer(bg, tt.id, tt.answers); !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.text) {
			t.Errorf("Answer(%s, %v) = %v, want %v containing %q", tt.id, tt.answers, err, tt.want, tt.text)
		}
	}
	// Raw bodies: malformed JSON, wrong types, unknown fields, too large.
	for _, body := range []string{`{"answers":`, `{"answers":{"1":5}}`, `{"answers":{"1":"A"},"extra":1}`, `[]`, `{"answers":{"1":"` + strings.Repeat("x", bridgeapi.MaxBody) + `"}}`} {
		resp := post(t, e, "/api/questions/"+q.ID+"/answer", body, "test-token")
		if resp.StatusCode < 400 || resp.StatusCode >= 500 {
			t.Errorf("body %.40q: status %d, want a 4xx", body, resp.StatusCode)
		}
	}
	got, _ := e.c.Question(bg, q.ID)
	if got.Status != bridgeapi.QuestionPending || len(got.Draft) != 0 {
		t.Fatalf("after bad answers: status %s, draft %v", got.Status, got.Draft)
	}
	if _, err := e.c.Answer(bg, q.ID, map[string]bridgeapi.Answer{"1": {"Summary"}, "2": {"Intro", "Outro"}}); err != nil {
		t.Fatalf("a good answer after bad ones: %v", err)
	}
	if ended := e.ended(s.ID); *ended.ExitCode != 0 {
		t.Errorf("exit %d: %s", *ended.ExitCode, ended.Detail)
	}
}

type response struct {
	StatusCode int
	Body       string
}

func post(t *testing.T, e *env, path, body, token string) response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL+path, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	bufio.NewReader(resp.Body).WriteTo(&b)
	return response{resp.StatusCode, b.String()}
}

// TestFirstAnswerWins: many answers race for one question, many times: one
// wins, every other gets ErrResolved, the agent gets exactly one response.
func TestFirstAnswerWins(t *testing.T) {
	e := newEnv(t, bridge.Config{})
	for round := 0; round < 5; round++ {
		s := e.start("ask-single", "Set up storage.")
		q := e.pending(s.ID, 1)[0]
		var wg sync.WaitGroup
		var mu sync.Mutex
		won, lost := 0, 0
		for i := 0; i < 16; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := e.c.Answer(bg, q.ID, map[string]bridgeapi.Answer{"1": {"Postgres"}})
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					won++
				case errors.Is(err, bridgeapi.ErrResolved):
					lost++
				default:
					t.Errorf("Answer: %v", err)
				}
			}()
		}
		wg.Wait()
		ended := e.ended(s.ID)
		if won != 1 || lost != 15 || len(answersSent(e.transcript(ended.ClaudeSessionID))) != 1 || *ended.ExitCode != 0 {
			t.Fatalf("round %d: %d won, %d lost, exit %d", round, won, lost, *ended.ExitCode)
		}
	}
}

// TestCancelWithdraws: the agent withdraws the question (cancel_after); the
// surfaces are told and a later answer is refused.
func TestCancelWithdraws(t *testing.T) {
	e := newEnv(t, bridge.Config{})
	sub := e.b.Subscribe("")
	defer sub.Close()
	s := e.start("cancel-pending", "Set up storage.")
	q := e.pending(s.ID, 1)[0]
	waitEvent(t, sub, func(ev bridgeapi.Event) bool { return ev.Type == bridgeapi.EventWithdrawn && ev.QuestionID == q.ID })
	if _, err := e.c.Answer(bg, q.ID, map[string]bridgeapi.Answer{"1": {"Postgres"}}); !errors.Is(err, bridgeapi.ErrResolved) || !strings.Contains(err.Error(), "withdrawn") {
		t.Errorf("answer after cancel: %v", err)
	}
	ended := e.ended(s.ID)
	if n := len(answersSent(e.transcript(ended.ClaudeSessionID))); n != 0 {
		t.Errorf("the agent received %d responses, want none", n)
	}
}

// TestAgentExitWithdraws: the agent exits while a question is pending; the
// question is withdrawn and the bridge goes on serving other sessions.
func TestAgentExitWithdraws(t *testing.T) {
	e := newEnv(t, bridge.Config{})
	sub := e.b.Subscribe("")
	defer sub.Close()
	s := e.start("exit-pending", "Set up storage.")
	q := e.pending(s.ID, 1)[0]
	// The first read of the session as exited (read as often as it can
	// be) finds its end whole: the question withdrawn, and the exit the
	// last event of the session's log (askctl session ls, then session
	// logs, once missed it: CI).
	for deadline := time.Now().Add(15 * time.Second); ; {
		ss, err := e.b.Session(bg, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		if ss.Status == bridgeapi.StatusExited {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("session %s still %s after 15s", s.ID, ss.Status)
		}
	}
	got, _ := e.c.Question(bg, q.ID)
	if got.Status != bridgeapi.QuestionWithdrawn || got.Reason != "the agent exited" {
		t.Errorf("question %s: %s (%s), want withdrawn", q.ID, got.Status, got.Reason)
	}
	if l, err := e.b.SessionLog(bg, s.ID); err != nil {
		t.Fatal(err)
	} else if last := l.Events[len(l.Events)-1]; last.Type != bridgeapi.EventStatus || last.Status != bridgeapi.StatusExited || last.ExitCode == nil {
		t.Errorf("the last event logged of an exited session: %+v, want its exit", last)
	}
	waitEvent(t, sub, func(ev bridgeapi.Event) bool { return ev.Type == bridgeapi.EventWithdrawn && ev.QuestionID == q.ID })
	s2 := e.start("ask-single", "Set up storage.")
	q2 := e.pending(s2.ID, 1)[0]
	if _, err := e.c.Answer(bg, q2.ID, map[string]bridgeapi.Answer{"1": {"Postgres"}}); err != nil {
		t.Fatal(err)
	}
	if ended := e.ended(s2.ID); *ended.ExitCode != 0 {
		t.Errorf("the next session exited %d", *ended.ExitCode)
	}
}

// TestOtherToolsPolicy: can_use_tool for other tools follows the policy at
// once and makes no question.
func TestOtherToolsPolicy(t *testing.T) {
	for _, policy := range []string{"allow", "deny"} {
		t.Run(policy, func(t *testing.T) {
			e := newEnv(t, bridge.Config{OtherTools: policy})
			s := e.start("other-tool", "Write the file.")
			// The scenario's Bash call is decided at once; its question
			// after it is the only question made.
			q := e.pending(s.ID, 1)[0]
			if _, err := e.c.Answer(bg, q.ID, map[string]bridgeapi.Answer{"1": {"Postgres"}}); err != nil {
				t.Fatal(err)
			}
			ended := e.ended(s.ID)
			sent := answersSent(e.transcript(ended.ClaudeSessionID))
			if len(sent) != 2 || gjson.Get(sent[0], "behavior").String() != policy {
				t.Errorf("the agent received %v, want %s first", sent, policy)
			}
			if qs, _ := e.b.Questions(bg, "", s.ID); len(qs) != 1 {
				t.Errorf("%d questions, want 1 (none for the other tool)", len(qs))
			}
		})
	}
}

func TestAuth(t *testing.T) {
	e := newEnv(t, bridge.Config{})
	for _, tok := range []string{"", "wrong"} {
		if r := post(t, e, "/api/sessions", `{"prompt":"x"}`, tok); r.StatusCode != http.StatusUnauthorized || !strings.Contains(r.Body, "token") {
			t.Errorf("token %q: %d %s", tok, r.StatusCode, r.Body)
		}
	}
	if _, err := (&bridgeapi.Client{URL: e.srv.URL, Token: "wrong"}).Pending(bg, ""); !errors.Is(err, bridgeapi.ErrUnauthorized) {
		t.Errorf("client with a wrong token: %v", err)
	}
	resp, err := http.Get(e.srv.URL + "/api/health")
	if err != nil || resp.StatusCode != 200 {
		t.Errorf("health without a token: %v %v", resp, err)
	}
	// The scheme is case-insensitive; the token is not.
	get := func(host, auth string) int {
		req, _ := http.NewRequest(http.MethodGet, e.srv.URL+"/api/sessions", nil)
		if host != "" {
			req.Host = host
		}
		req.Header.Set("Authorization", auth)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, auth := range []string{"bearer test-token", "BEARER  test-token", "Bearer test-token"} {
		if code := get("", auth); code != http.StatusOK {
			t.Errorf("Authorization %q: %d, want 200", auth, code)
		}
	}
	if code := get("", "Bearer TEST-TOKEN"); code != http.StatusUnauthorized {
		t.Errorf("a token in other case: %d, want 401", code)
	}
	// Only loopback names, or those configured: a page whose name resolves
	// to 127.0.0.1 (DNS rebinding) is refused, token or not.
	for host, want := range map[string]int{"localhost:1234": 200, "127.0.0.2": 200, "[::1]:80": 200, "evil.example:7474": 403, "evil.example": 403, "bridge.lan": 403} {
		if code := get(host, "Bearer test-token"); code != want {
			t.Errorf("Host %s: %d, want %d", host, code, want)
		}
	}
	e.server.Hosts = []string{"bridge.lan"}
	if code := get("bridge.lan", "Bearer test-token"); code != 200 {
		t.Errorf("a configured Host: %d, want 200", code)
	}
}

// TestEmptyDatabaseIsNoted: a database file that is there but empty (a
// truncated one) starts the bridge empty, and says so.
func TestEmptyDatabaseIsNoted(t *testing.T) {
	db := filepath.Join(t.TempDir(), "bridge.db")
	if err := os.WriteFile(db, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var logged []string
	b, err := bridge.New(bridge.Config{DB: db, Logf: func(f string, a ...any) { logged = append(logged, fmt.Sprintf(f, a...)) }})
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	if !strings.Contains(strings.Join(logged, "\n"), "empty file") {
		t.Errorf("an empty database file: logged %q", logged)
	}
}

// wsDial opens the WebSocket surface of a session.
func wsDial(t *testing.T, e *env, session string) *websocket.Conn {
	t.Helper()
	return socketDial(t, e, "/ws", session)
}

func socketDial(t *testing.T, e *env, path, session string) *websocket.Conn {
	t.Helper()
	url := strings.Replace(e.srv.URL, "http", "ws", 1) + path + "?session_id=" + session
	ctx, cancel := context.WithTimeout(bg, 5*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer test-token"}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.CloseNow() })
	return c
}

func wsRead(t *testing.T, c *websocket.Conn, typ string) gjson.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(bg, 10*time.Second)
	defer cancel()
	for {
		_, data, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("waiting for %s: %v", typ, err)
		}
		m := gjson.ParseBytes(data)
		if m.Get("type").String() == typ {
			return m
		}
	}
}

// wsReadEach reads until a message of each type has come, in any order.
func wsReadEach(t *testing.T, c *websocket.Conn, types ...string) map[string]gjson.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(bg, 10*time.Second)
	defer cancel()
	got := map[string]gjson.Result{}
	for len(got) < len(types) {
		_, data, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("waiting for %v (got %v): %v", types, got, err)
		}
		m := gjson.ParseBytes(data)
		if typ := m.Get("type").String(); contains(types, typ) {
			got[typ] = m
		}
	}
	return got
}

func wsSend(t *testing.T, c *websocket.Conn, v any) {
	t.Helper()
	data, _ := json.Marshal(v)
	if err := c.Write(bg, websocket.MessageText, data); err != nil {
		t.Fatal(err)
	}
}

// TestWebSocket: a question asked while no surface was connected is
// replayed on connect, with its id; the answer lands. A newer connection
// takes the session over: the old one is told, and its answers rejected.
func TestWebSocket(t *testing.T) {
	e := newEnv(t, bridge.Config{})
	s := e.start("ask-multi", "Ask me how to format.")
	q := e.pending(s.ID, 1)[0]

	old := wsDial(t, e, s.ID)
	st := wsRead(t, old, "session_status")
	if !st.Get("waiting_for_user").Bool() || st.Get("pending_question_id").String() != q.ID {
		t.Errorf("session_status %s", st.Raw)
	}
	m := wsRead(t, old, "ask_user_question")
	if m.Get("question_id").String() != q.ID || m.Get("questions.1.options.2.description").String() != "c" || m.Get("timeout_seconds").Int() != 300 {
		t.Errorf("replayed question %s", m.Raw)
	}

	// Malformed messages get errors and change nothing.
	for _, bad := range []string{`{`, `{"type":"ask_user_response","data":{"question_id":"` + q.ID + `","answers":{"1":7}}}`, `{"type":"hello"}`, `{"type":"ask_user_response","data":{"question_id":"` + q.ID + `","answers":{"Nope?":"x"}}}`} {
		if err := old.Write(bg, websocket.MessageText, []byte(bad)); err != nil {
			t.Fatal(err)
		}
		if r := wsRead(t, old, "error"); r.Get("error").String() == "" {
			t.Errorf("%s: %s", bad, r.Raw)
		}
	}

	neu := wsDial(t, e, s.ID)
	wsRead(t, neu, "ask_user_question")
	if r := wsRead(t, old, "session_taken"); r.Get("session_id").String() != s.ID {
		t.Errorf("session_taken %s", r.Raw)
	}
	wsSend(t, old, map[string]any{"type": "ask_user_response", "data": map[string]any{"question_id": q.ID, "answers": map[string]string{"How should I format the output?": "Detailed", "Which sections?": "Body"}}})
	if r := wsRead(t, old, "error"); r.Get("code").String() != "session_taken" {
		t.Errorf("the old connection's answer: %s", r.Raw)
	}
	wsSend(t, neu, map[string]any{"type": "ask_user_response", "data": map[string]any{"question_id": q.ID, "answers": map[string]string{"How should I format the output?": "Summary", "Which sections?": "Intro, Outro"}, "cancelled": false}})
	if r := wsRead(t, neu, "ask_user_ack"); r.Get("status").String() != "answered" {
		t.Errorf("ack %s", r.Raw)
	}
	ended := e.ended(s.ID)
	sent := answersSent(e.transcript(ended.ClaudeSessionID))
	if len(sent) != 1 || gjson.Get(sent[0], "updatedInput.answers").Raw != `{"How should I format the output?":"Summary","Which sections?":"Intro, Outro"}` {
		t.Errorf("the agent received %v", sent)
	}
}

func TestWebSocketSkipAndOrigin(t *testing.T) {
	e := newEnv(t, bridge.Config{})
	s := e.start("ask-skip", "Ask me how to format.")
	q := e.pending(s.ID, 1)[0]
	// A page on another site may not open the socket.
	url := strings.Replace(e.srv.URL, "http", "ws", 1) + "/ws?session_id=" + s.ID + "&token=test-token"
	_, resp, err := websocket.Dial(bg, url, &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {"https://evil.example"}}})
	if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("foreign Origin: %v, %v; want 403", resp, err)
	}
	c := wsDial(t, e, s.ID)
	wsRead(t, c, "ask_user_question")
	wsSend(t, c, map[string]any{"type": "ask_user_response", "question_id": q.ID, "cancelled": true, "reason": "User skipped this question"})
	if r := wsRead(t, c, "ask_user_ack"); r.Get("status").String() != "skipped" {
		t.Errorf("ack %s", r.Raw)
	}
	if ended := e.ended(s.ID); *ended.ExitCode != 0 {
		t.Errorf("exit %d: %s", *ended.ExitCode, ended.Detail)
	}
	// An oversized message closes the connection and changes nothing.
	c2 := wsDial(t, e, s.ID)
	_ = c2.Write(bg, websocket.MessageText, []byte(fmt.Sprintf(`{"type":"ask_user_response","question_id":"%s","answers":{"1":"%s"}}`, q.ID, strings.Repeat("x", bridgeapi.MaxBody+1))))
	ctx, cancel := context.WithTimeout(bg, 5*time.Second)
	defer cancel()
	for {
		if _, _, err := c2.Read(ctx); err != nil {
			if websocket.CloseStatus(err) != websocket.StatusMessageTooBig {
				t.Errorf("oversized message: %v, want close 1009", err)
			}
			break
		}
	}
}

// TestEventStream: the SSE stream carries each event with its sequence
// number; a client that reconnects with Last-Event-ID gets what it missed.
func TestEventStream(t *testing.T) {
	e := newEnv(t, bridge.Config{})
	s := e.start("ask-single", "Set up storage.")
	e.pending(s.ID, 1)
	// From the start of the log: the question is there, with its seq.
	ctx, cancel := context.WithCancel(bg)
	first := make(chan bridgeapi.Event, 100)
	go e.c.Events(ctx, "", 0, func(ev bridgeapi.Event) error { first <- ev; return nil })
	var asked bridgeapi.Event
	for asked.Type != bridgeapi.EventQuestion {
		select {
		case asked = <-first:
		case <-time.After(10 * time.Second):
			t.Fatal("no ask_user_question on the stream")
		}
	}
	cancel()
	if asked.Seq == 0 || asked.SessionID != s.ID {
		t.Fatalf("event %+v", asked)
	}
	// Missed while disconnected: the answer and the session's end.
	if _, err := e.c.Answer(bg, asked.QuestionID, map[string]bridgeapi.Answer{"1": {"Postgres"}}); err != nil {
		t.Fatal(err)
	}
	e.ended(s.ID)
	ctx2, cancel2 := context.WithTimeout(bg, 10*time.Second)
	defer cancel2()
	var types []string
	_ = e.c.Events(ctx2, "", asked.Seq, func(ev bridgeapi.Event) error {
		if ev.Seq <= asked.Seq {
			t.Errorf("event %d at or before Last-Event-ID %d", ev.Seq, asked.Seq)
		}
		types = append(types, ev.Type)
		if ev.Type == bridgeapi.EventStatus && ev.Status == bridgeapi.StatusExited {
			return errors.New("done")
		}
		return nil
	})
	if len(types) == 0 || !contains(types, bridgeapi.EventAnswered) {
		t.Errorf("resumed stream: %v, want the answer and the end", types)
	}
}

// TestEventStreamFromAnotherLog: a Last-Event-ID ahead of this bridge's
// log (another log's: a new database, another bridge) starts the stream
// over with a snapshot, so the pending question is shown, not skipped.
func TestEventStreamFromAnotherLog(t *testing.T) {
	e := newEnv(t, bridge.Config{})
	s := e.start("ask-single", "Set up storage.")
	q := e.pending(s.ID, 1)[0]
	ctx, cancel := context.WithTimeout(bg, 10*time.Second)
	defer cancel()
	var got []bridgeapi.Event
	_ = e.c.Events(ctx, "", 1_000_000, func(ev bridgeapi.Event) error {
		got = append(got, ev)
		if ev.Type == bridgeapi.EventQuestion && ev.QuestionID == q.ID {
			return errors.New("done")
		}
		return nil
	})
	if len(got) == 0 || got[len(got)-1].QuestionID != q.ID {
		t.Errorf("from id 1000000: %+v; want a snapshot with question %s", got, q.ID)
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// TestLateAnswerThatCannotResume: a bridge that finds a question its
// predecessor left pending (it stopped: its questions stay pending, as after
// a crash), and cannot start the agent again, refuses the answer and keeps
// the question answerable.
func TestLateAnswerThatCannotResume(t *testing.T) {
	e := newEnv(t, bridge.Config{})
	s := e.start("late-answer", "Set up storage.")
	q := e.pending(s.ID, 1)[0]
	// The bridge stops; a second one opens the same database. (Two at once
	// are refused.)
	if _, err := bridge.New(e.cfg); !errors.Is(err, bridgeapi.ErrBusy) {
		t.Fatalf("a second bridge on a database in use: %v, want bridgeapi.ErrBusy", err)
	}
	e.b.Close()
	cfg := e.cfg
	cfg.Claude = "/nonexistent/claude"
	b2, err := bridge.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	got, _ := b2.Question(bg, q.ID)
	if !got.Orphaned || got.Status != bridgeapi.QuestionPending {
		t.Fatalf("after the restart: %+v", got)
	}
	if _, err := b2.Answer(bg, q.ID, map[string]bridgeapi.Answer{"1": {"Postgres"}}); err == nil || !strings.Contains(err.Error(), "resuming session") {
		t.Fatalf("answer: %v, want the resume's failure", err)
	}
	if got, _ := b2.Question(bg, q.ID); got.Status != bridgeapi.QuestionPending || len(got.Answers) != 0 {
		t.Errorf("after the failed resume: %s %v, want pending", got.Status, got.Answers)
	}
}

// TestStopAndBadRequests: a stopped session's question is withdrawn saying
// so; an unknown scenario and an unknown status filter are refused.
func TestStopAndBadRequests(t *testing.T) {
	e := newEnv(t, bridge.Config{})
	s := e.start("ask-single", "Set up storage.")
	q := e.pending(s.ID, 1)[0]
	if _, err := e.c.StopSession(bg, s.ID); err != nil {
		t.Fatal(err)
	}
	got, _ := e.c.Question(bg, q.ID)
	if got.Status != bridgeapi.QuestionWithdrawn || got.Reason != "the session was stopped" {
		t.Errorf("after stop: %s (%s)", got.Status, got.Reason)
	}
	if _, err := e.c.StopSession(bg, "s_nope"); !errors.Is(err, bridgeapi.ErrNotFound) || !strings.Contains(err.Error(), "s_nope") {
		t.Errorf("stop of an unknown session: %v", err)
	}
	if _, err := e.c.StartSession(bg, bridgeapi.StartOptions{Prompt: "x", Scenario: "no-such"}); !errors.Is(err, bridgeapi.ErrInvalid) || !strings.Contains(err.Error(), "no-such") {
		t.Errorf("unknown scenario: %v", err)
	}
	req, _ := http.NewRequest(http.MethodGet, e.srv.URL+"/api/questions?status=bogus", nil)
	req.Header.Set("Authorization", "Bearer test-token")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusBadRequest {
		t.Errorf("status=bogus: %v %v", resp.StatusCode, err)
	}
}

// TestControlSocket: the control surface forwards the agent's request as a
// control_request under the question's id, takes a control_response back
// (request_id inside response, or at the top level as in seed 001), refuses
// an allow without answers, and tells the client how a question ended.
func TestControlSocket(t *testing.T) {
	e := newEnv(t, bridge.Config{})
	s := e.start("ask-multi", "Ask me how to format.")
	q := e.pending(s.ID, 1)[0]
	c := socketDial(t, e, "/control", s.ID)
	m := wsRead(t, c, "control_request")
	if m.Get("request_id").String() != q.ID || m.Get("request.tool_name").String() != "AskUserQuestion" ||
		m.Get("request.input.questions.1.options.2.description").String() != "c" || !m.Get("request.input.questions.1.multiSelect").Bool() {
		t.Errorf("control_request %s", m.Raw)
	}
	for _, bad := range []string{
		`{"type":"control_response","response":{"subtype":"success","request_id":"` + q.ID + `","response":{"behavior":"allow","updatedInput":{"questions":[]}}}}`,
		`{"type":"control_response","response":{"subtype":"success","request_id":"` + q.ID + `","response":{"behavior":"maybe"}}}`,
		`{"type":"control_response","response":{"subtype":"success","response":{"behavior":"deny"}}}`,
		`{"type":"control_request"}`, `[`,
	} {
		if err := c.Write(bg, websocket.MessageText, []byte(bad)); err != nil {
			t.Fatal(err)
		}
		if r := wsRead(t, c, "error"); r.Get("error").String() == "" {
			t.Errorf("%s: %s", bad, r.Raw)
		}
	}
	if got := e.pending(s.ID, 1); got[0].ID != q.ID {
		t.Fatalf("after bad messages: %v", got)
	}
	wsSend(t, c, map[string]any{"type": "control_response", "request_id": q.ID, "response": map[string]any{"subtype": "success",
		"response": map[string]any{"behavior": "allow", "updated_input": map[string]any{"answers": map[string]string{"How should I format the output?": "Summary", "Which sections?": "Intro, Outro"}}}}})
	// The ack and the end of the question come in either order.
	got := wsReadEach(t, c, "ask_user_ack", "control_cancel_request")
	if r := got["ask_user_ack"]; r.Get("status").String() != "answered" {
		t.Errorf("ack %s", r.Raw)
	}
	if r := got["control_cancel_request"]; r.Get("request_id").String() != q.ID || r.Get("status").String() != "answered" {
		t.Errorf("end of the question: %s", r.Raw)
	}
	ended := e.ended(s.ID)
	sent := answersSent(e.transcript(ended.ClaudeSessionID))
	if len(sent) != 1 || gjson.Get(sent[0], "updatedInput.answers").Raw != `{"How should I format the output?":"Summary","Which sections?":"Intro, Outro"}` {
		t.Errorf("the agent received %v", sent)
	}

	// A deny skips, with its message.
	s2 := e.start("ask-skip", "Ask me how to format.")
	q2 := e.pending(s2.ID, 1)[0]
	c2 := socketDial(t, e, "/control", s2.ID)
	wsRead(t, c2, "control_request")
	wsSend(t, c2, map[string]any{"type": "control_response", "response": map[string]any{"subtype": "success", "request_id": q2.ID,
		"response": map[string]any{"behavior": "deny", "message": "User skipped this question"}}})
	if r := wsRead(t, c2, "ask_user_ack"); r.Get("status").String() != "skipped" {
		t.Errorf("ack %s", r.Raw)
	}
	if ended := e.ended(s2.ID); *ended.ExitCode != 0 {
		t.Errorf("exit %d: %s", *ended.ExitCode, ended.Detail)
	}
}

// TestCloseStopsHungAgentsTogether: agents that ignore their stdin closing
// are stopped together, so closing the bridge takes one grace period, not
// one per agent; and each agent runs in a process group of its own, so a
// terminal's Ctrl-C reaches the bridge (which keeps their questions), not
// the agents.
func TestCloseStopsHungAgentsTogether(t *testing.T) {
	dir := t.TempDir()
	cli := filepath.Join(dir, "hung-claude")
	script := "#!/bin/sh\ncut -d' ' -f5 /proc/$$/stat > " + dir + "/pgid-$$\nexec sleep 600\n"
	if err := os.WriteFile(cli, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc here to read a process group from")
	}
	const n, grace = 6, 500 * time.Millisecond
	// MaxStarting n: these agents never say system/init, and would hold
	// their start slots (TestMaxStarting is about those).
	b, err := bridge.New(bridge.Config{DB: filepath.Join(dir, "bridge.db"), Claude: cli, StopGrace: grace, MaxStarting: n})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		if _, err := b.StartSession(bg, bridgeapi.StartOptions{Prompt: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	// Every agent says its process group (a line, once written whole).
	deadline := time.Now().Add(10 * time.Second)
	var groups []string
	for len(groups) < n && time.Now().Before(deadline) {
		groups = nil
		files, _ := filepath.Glob(filepath.Join(dir, "pgid-*"))
		for _, f := range files {
			if b, _ := os.ReadFile(f); strings.HasSuffix(string(b), "\n") {
				groups = append(groups, strings.TrimSpace(string(b)))
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	if len(groups) < n {
		t.Fatalf("%d of %d agents said their process group", len(groups), n)
	}
	for _, pg := range groups {
		if pg == strconv.Itoa(syscall.Getpgrp()) {
			t.Errorf("an agent runs in the bridge's process group (%s)", pg)
		}
	}
	start := time.Now()
	b.Close()
	// One after another would take n graces at least; together, one (and
	// the rest is slack for a busy machine).
	if took := time.Since(start); took >= (n-1)*grace {
		t.Errorf("closing with %d hung agents took %v: they were stopped one after another (grace %v)", n, took, grace)
	}
}

// TestWriteErrorsStrandNothing: the database refuses writes (a full disk)
// while an agent with a pending question exits. Once writes work again,
// the state is consistent without a restart: the session has exited, its
// question is withdrawn, and the surfaces were told.
func TestWriteErrorsStrandNothing(t *testing.T) {
	e := newEnv(t, bridge.Config{})
	sub := e.b.Subscribe("")
	defer sub.Close()
	// The writes of the agent's end fail, six times: the session's exit and
	// its question's withdrawal.
	var mu sync.Mutex
	failed := 0
	full := errors.New("database or disk is full")
	e.b.FailWrites(func(op string) error {
		mu.Lock()
		defer mu.Unlock()
		if (op == "setStatus "+bridgeapi.StatusExited || op == "resolve "+bridgeapi.QuestionWithdrawn) && failed < 6 {
			failed++
			return full
		}
		return nil
	})
	s := e.start("exit-pending", "Set up storage for the app.")
	q := e.pending(s.ID, 1)[0]
	deadline := time.After(20 * time.Second)
	withdrawn := false
	for !withdrawn {
		select {
		case ev := <-sub.C:
			withdrawn = ev.Type == bridgeapi.EventWithdrawn && ev.QuestionID == q.ID
		case <-deadline:
			t.Fatalf("question %s was never withdrawn after its agent exited (writes failed %d times)", q.ID, failed)
		}
	}
	ss := e.ended(s.ID)
	if ss.Status != bridgeapi.StatusExited {
		t.Errorf("session %s: %s, want exited", s.ID, ss.Status)
	}
	if now, err := e.c.Question(bg, q.ID); err != nil || now.Status != bridgeapi.QuestionWithdrawn {
		t.Errorf("question %s: %+v, %v; want withdrawn", q.ID, now, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if failed < 6 {
		t.Errorf("only %d writes failed: the fault was not exercised", failed)
	}
}

// TestStalledAgentDelaysNoOne: an agent that stops reading its stdin, with
// an answer too big for the pipe on its way to it, stalls that answer only:
// another session's question is answered at once, and the bridge still
// stops (the stalled agent is killed after the grace).
func TestStalledAgentDelaysNoOne(t *testing.T) {
	dir := t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The stalled agent asks, then never reads; the other is fakeclaude.
	ask := `{"type":"control_request","request_id":"r1","request":{"subtype":"can_use_tool","tool_name":"AskUserQuestion","tool_use_id":"tu1","input":{"questions":[{"question":"Stall?","header":"Stall","options":[{"label":"A","description":"a"},{"label":"B","description":"b"}],"multiSelect":false}]}}}`
	cli := filepath.Join(dir, "claude")
	script := "#!/bin/sh\nif [ -n \"$STALL\" ]; then printf '%s\\n' '" + ask + "'; exec sleep 600; fi\nexec '" + self + "' \"$@\"\n"
	if err := os.WriteFile(cli, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := bridge.New(bridge.Config{DB: filepath.Join(dir, "bridge.db"), Claude: cli, StopGrace: time.Second,
		Env: fakeclaude.Env{RunAs: fakeclaude.RoleFake, Timeout: time.Minute, Linger: 2 * time.Second}.Environ(),
		SessionEnv: func(name, text string) ([]string, string, error) {
			if name == "stall" {
				return []string{"STALL=1"}, name, nil
			}
			return fakeclaude.Env{Scenario: name}.Environ(), name, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	stalled, err := b.StartSession(bg, bridgeapi.StartOptions{Prompt: "x", Scenario: "stall"})
	if err != nil {
		t.Fatal(err)
	}
	pendingOf := func(session string) *bridgeapi.Question {
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			if qs, _ := b.Pending(bg, session); len(qs) > 0 {
				return qs[0]
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Fatalf("session %s asked nothing within 10s", session)
		return nil
	}
	sq := pendingOf(stalled.ID)
	go b.Answer(bg, sq.ID, map[string]bridgeapi.Answer{"1": {strings.Repeat("much text ", 50000)}}) // 500 KB: blocks on the full pipe
	other, err := b.StartSession(bg, bridgeapi.StartOptions{Prompt: "Set up storage for the app.", Scenario: "ask-single"})
	if err != nil {
		t.Fatal(err)
	}
	oq := pendingOf(other.ID)
	answered := make(chan error, 1)
	go func() {
		_, err := b.Answer(bg, oq.ID, map[string]bridgeapi.Answer{"1": {"Postgres"}})
		answered <- err
	}()
	select {
	case err := <-answered:
		if err != nil {
			t.Errorf("the other session's answer: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("an answer to another session waited 15s behind the stalled agent's")
	}
	closed := make(chan struct{})
	go func() { b.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(15 * time.Second):
		t.Fatal("the bridge did not stop within 15s with a stalled agent (grace 1s)")
	}
}

// TestOrphanedQuestionsKeepTheirDeadlines: a question left pending by a
// bridge that stopped keeps its deadline with the next one: it expires
// then (there is no agent to tell); and a policy decides orphaned
// questions as it decides new ones (its answer resumes the session).
func TestOrphanedQuestionsKeepTheirDeadlines(t *testing.T) {
	e := newEnv(t, bridge.Config{Timeout: 2 * time.Second})
	s := e.start("late-answer", "Set up storage.")
	q := e.pending(s.ID, 1)[0]
	e.b.Close()
	b2, err := bridge.New(e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	deadline := time.Now().Add(20 * time.Second)
	for {
		got, err := b2.Question(bg, q.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status == bridgeapi.QuestionExpired {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the orphaned question is %s 20s after its 2s deadline", got.Status)
		}
		time.Sleep(20 * time.Millisecond)
	}
	b2.Close()

	p, err := policy.Parse("db.policy", []byte(`{"name":"db","answer":"Postgres"}`))
	if err != nil {
		t.Fatal(err)
	}
	e2 := newEnv(t, bridge.Config{})
	s2 := e2.start("late-answer", "Set up storage.")
	q2 := e2.pending(s2.ID, 1)[0]
	e2.b.Close()
	cfg := e2.cfg
	cfg.Policy = p
	b3, err := bridge.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b3.Close()
	deadline = time.Now().Add(20 * time.Second)
	for {
		ss, err := b3.Session(bg, s2.ID)
		if err != nil {
			t.Fatal(err)
		}
		if ss.Status == bridgeapi.StatusExited {
			if ss.ExitCode == nil || *ss.ExitCode != 0 {
				t.Errorf("the session resumed by the policy's answer ended %+v", ss)
			}
			break
		}
		if time.Now().After(deadline) {
			got, _ := b3.Question(bg, q2.ID)
			t.Fatalf("the policy did not settle the orphaned question in 20s: %+v, session %+v", got, ss)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
