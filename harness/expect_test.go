package harness

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/askctl/askctl/transcript"
)

// newTestEnv is an Env with state only: no bridge, no surface.
func newTestEnv() *Env {
	return &Env{Bridge: &Bridge{}, changed: make(chan struct{}), st: State{Sessions: map[string]*Session{}, byAgent: map[string]*Session{}}}
}

func TestAwaitVerdicts(t *testing.T) {
	e := newTestEnv()
	s := &Session{Alias: "s1", AgentID: "a1", consumed: map[string]map[string]bool{}, gen: map[string]int{}}
	e.st.Sessions["s1"], e.st.byAgent["a1"] = s, s

	// Met as soon as the record comes.
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		done <- e.Await(ctx, Turns("s1", 1))
	}()
	time.Sleep(10 * time.Millisecond)
	e.onRecord(transcript.Record{Session: "a1", Dir: transcript.FromCLI, Msg: []byte(`{"type":"result"}`)})
	if err := <-done; err != nil {
		t.Fatalf("met: %v", err)
	}

	// Unmeetable at once when the agent has exited: no waiting for the
	// deadline.
	code := 6
	e.onRecord(transcript.Record{Session: "a1", Event: transcript.EventExit, Code: &code})
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := e.Await(ctx, Turns("s1", 2))
	if err == nil || !strings.Contains(err.Error(), "Unmeetable") || !strings.Contains(err.Error(), "exited with status 6") {
		t.Fatalf("unmeetable: %v", err)
	}
	if time.Since(start) > time.Second {
		t.Errorf("an unmeetable expectation took %v to fail", time.Since(start))
	}

	// Unmet until the deadline: it says it was not met in time.
	ctx2, cancel2 := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel2()
	if err := e.Await(ctx2, SurfaceSaw("s1", "", SurfExpired, "q_1")); err == nil || !strings.Contains(err.Error(), "not met in time") {
		t.Errorf("unmet: %v", err)
	}

	// Hold of Not fails at once when the thing happens.
	go func() {
		time.Sleep(20 * time.Millisecond)
		e.mu.Lock()
		s.Surface = append(s.Surface, SurfaceEvent{Type: SurfExpired, QuestionID: "q_1"})
		e.changedLocked()
		e.mu.Unlock()
	}()
	if err := e.Hold(context.Background(), 5*time.Second, Not(SurfaceSaw("s1", "", SurfExpired, "q_1"))); err == nil || !strings.Contains(err.Error(), "did not hold") {
		t.Errorf("hold: %v", err)
	}

	// AllOf is unmeetable when one part is; AnyOf met when one part is.
	if v, _ := AllOf(Turns("s1", 1), Turns("s1", 5)).Check(&e.st); v != Unmeetable {
		t.Errorf("AllOf: %v", v)
	}
	if v, _ := AnyOf(Turns("s1", 5), Turns("s1", 1)).Check(&e.st); v != Met {
		t.Errorf("AnyOf: %v", v)
	}
}
