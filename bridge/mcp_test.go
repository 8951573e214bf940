//go:build !mutation

package bridge_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/askctl/askctl/bridge"
	"github.com/askctl/askctl/bridgeapi"
	"github.com/askctl/askctl/protocol"
)

var mcpQuestion = []protocol.Question{{Question: "How should I format?", Options: []protocol.Option{{Label: "Summary"}, {Label: "Detailed"}}}}

// askAsync asks over the HTTP API in the background.
func askAsync(ctx context.Context, e *env, session string, qs []protocol.Question) chan any {
	out := make(chan any, 1)
	go func() {
		q, err := e.c.AskMCP(ctx, session, qs)
		if err != nil {
			out <- err
			return
		}
		out <- q
	}()
	return out
}

func result(t *testing.T, c chan any) *bridgeapi.Question {
	t.Helper()
	select {
	case v := <-c:
		if err, ok := v.(error); ok {
			t.Fatal(err)
		}
		return v.(*bridgeapi.Question)
	case <-time.After(10 * time.Second):
		t.Fatal("the MCP call did not return")
	}
	return nil
}

// TestMCPQuestions: an MCP server's call is a question like any other: it
// shows as pending, and its answer, skip or timeout returns to the call.
func TestMCPQuestions(t *testing.T) {
	e := newEnv(t, bridge.Config{Timeout: 700 * time.Millisecond})
	ss, err := e.c.OpenMCP(bg, "test server")
	if err != nil {
		t.Fatal(err)
	}
	if ss.Claude != bridge.ClaudeMCP || ss.Status != bridgeapi.StatusRunning {
		t.Fatalf("session %+v", ss)
	}

	// Answered.
	call := askAsync(bg, e, ss.ID, mcpQuestion)
	q := e.pending(ss.ID, 1)[0]
	if q.Questions[0].Question != "How should I format?" {
		t.Fatalf("pending %+v", q)
	}
	if _, err := e.c.Answer(bg, q.ID, map[string]bridgeapi.Answer{"1": {"Detailed"}}); err != nil {
		t.Fatal(err)
	}
	if got := result(t, call); got.Status != bridgeapi.QuestionAnswered || got.Answers["How should I format?"] != "Detailed" {
		t.Errorf("answered: %+v", got)
	}

	// Skipped.
	call = askAsync(bg, e, ss.ID, mcpQuestion)
	q = e.pending(ss.ID, 1)[0]
	if _, err := e.c.Skip(bg, q.ID, "not now", false); err != nil {
		t.Fatal(err)
	}
	if got := result(t, call); got.Status != bridgeapi.QuestionSkipped || got.Reason != "not now" {
		t.Errorf("skipped: %+v", got)
	}

	// Nobody answers: it expires, and the call returns.
	call = askAsync(bg, e, ss.ID, mcpQuestion)
	if got := result(t, call); got.Status != bridgeapi.QuestionExpired || got.TimeoutSeconds < 1 {
		t.Errorf("expired: %+v", got)
	}

	// The caller goes away: the question is withdrawn, and a late answer
	// is refused.
	ctx, cancel := context.WithCancel(bg)
	call = askAsync(ctx, e, ss.ID, mcpQuestion)
	q = e.pending(ss.ID, 1)[0]
	cancel()
	<-call
	deadline := time.Now().Add(5 * time.Second)
	for {
		now, err := e.c.Question(bg, q.ID)
		if err != nil {
			t.Fatal(err)
		}
		if now.Status == bridgeapi.QuestionWithdrawn {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the caller left: %+v", now)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := e.c.Answer(bg, q.ID, map[string]bridgeapi.Answer{"1": {"Summary"}}); !errors.Is(err, bridgeapi.ErrResolved) {
		t.Errorf("a late answer: %v", err)
	}

	// Bad input is refused at once.
	if _, err := e.c.AskMCP(bg, ss.ID, nil); !errors.Is(err, bridgeapi.ErrInvalid) {
		t.Errorf("no questions: %v", err)
	}

	// Stopping the session withdraws what waits, and the call returns.
	call = askAsync(bg, e, ss.ID, mcpQuestion)
	e.pending(ss.ID, 1)
	if _, err := e.c.StopSession(bg, ss.ID); err != nil {
		t.Fatal(err)
	}
	select {
	case <-call:
	case <-time.After(5 * time.Second):
		t.Fatal("the call did not return when the session stopped")
	}
	if _, err := e.c.AskMCP(bg, ss.ID, mcpQuestion); !errors.Is(err, bridgeapi.ErrResolved) {
		t.Errorf("asking in an ended session: %v", err)
	}
}
