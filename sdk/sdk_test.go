package sdk_test

import (
	"context"
	"errors"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/askctl/askctl/fakeclaude"
	"github.com/askctl/askctl/internal/testenv"
	"github.com/askctl/askctl/protocol"
	"github.com/askctl/askctl/scenarios"
	"github.com/askctl/askctl/sdk"
	"github.com/askctl/askctl/transcript"
)

// agent runs fakeclaude in-process on pipes and returns its ends.
func agent(t *testing.T, scenario string) (io.WriteCloser, io.Reader, <-chan fakeclaude.Outcome) {
	t.Helper()
	sc, err := scenarios.Load(scenario)
	if err != nil {
		t.Fatal(err)
	}
	flags, _ := fakeclaude.ParseArgs([]string{"--output-format=stream-json", "--verbose", "--input-format=stream-json", "--permission-prompt-tool=stdio"})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan fakeclaude.Outcome, 1)
	go func() {
		done <- fakeclaude.Run(context.Background(), fakeclaude.Options{Scenario: sc, Flags: flags, Timeout: 10 * time.Second}, inR, outW)
		outW.Close()
		inR.Close()
	}()
	return inW, outR, done
}

// recv waits for a value, failing the test after 10s.
func recv[T any](t *testing.T, c <-chan T) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(10 * time.Second):
		t.Fatal("nothing came within 10s")
	}
	var zero T
	return zero
}

// TestFirstAnswerWins: many answers race for one request; exactly one is
// sent, the others get ErrAlreadyAnswered, and the agent sees one response.
func TestFirstAnswerWins(t *testing.T) {
	in, out, done := agent(t, "ask-single")
	asked := make(chan sdk.Request, 1)
	s, err := sdk.Start(context.Background(), in, out, sdk.SourceFunc(func(_ *sdk.Session, r sdk.Request) { asked <- r }),
		sdk.Options{OnResult: func(s *sdk.Session, _ protocol.Line) { s.CloseInput() }})
	if err != nil {
		t.Fatal(err)
	}
	s.Prompt("go")
	r := recv(t, asked)
	reply := protocol.Reply{Answers: map[string]string{"Which database should I use?": "Postgres"}}
	var wg sync.WaitGroup
	var mu sync.Mutex
	won, lost := 0, 0
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := s.Respond(r.ID, reply)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				won++
			case errors.Is(err, sdk.ErrAlreadyAnswered):
				lost++
			default:
				t.Errorf("Respond: %v", err)
			}
		}()
	}
	wg.Wait()
	if won != 1 || lost != 19 {
		t.Errorf("%d answers sent, %d refused; want 1 and 19", won, lost)
	}
	if err := s.Respond("no-such-id", reply); !errors.Is(err, sdk.ErrUnknownRequest) {
		t.Errorf("Respond(unknown) = %v, want ErrUnknownRequest", err)
	}
	if err := s.Wait(); err != nil {
		t.Fatal(err)
	}
	if o := recv(t, done); o.Code != 0 {
		t.Errorf("fakeclaude: %+v", o)
	}
}

// TestWithdrawnRequest: after the agent withdraws a request, an answer to it
// is refused and nothing reaches the agent.
func TestWithdrawnRequest(t *testing.T) {
	in, out, done := agent(t, "cancel-pending")
	asked := make(chan sdk.Request, 1)
	cancelled := make(chan string, 1)
	var sent []transcript.Record
	var mu sync.Mutex
	s, err := sdk.Start(context.Background(), in, out, sdk.SourceFunc(func(_ *sdk.Session, r sdk.Request) { asked <- r }),
		sdk.Options{
			OnCancel: func(_ *sdk.Session, id string) { cancelled <- id },
			OnResult: func(s *sdk.Session, _ protocol.Line) { s.CloseInput() },
			Sink: transcript.Func(func(r transcript.Record) error {
				mu.Lock()
				defer mu.Unlock()
				if r.Dir == transcript.ToCLI {
					sent = append(sent, r)
				}
				return nil
			}),
		})
	if err != nil {
		t.Fatal(err)
	}
	s.Prompt("go")
	r := recv(t, asked)
	if id := recv(t, cancelled); id != r.ID {
		t.Fatalf("cancelled %s, want %s", id, r.ID)
	}
	if err := s.Respond(r.ID, protocol.Reply{Skip: true, Message: "late"}); !errors.Is(err, sdk.ErrWithdrawn) {
		t.Errorf("Respond(withdrawn) = %v, want ErrWithdrawn", err)
	}
	s.Wait()
	recv(t, done)
	mu.Lock()
	defer mu.Unlock()
	if len(sent) != 2 { // initialize and the prompt
		t.Errorf("sent %d lines to the agent, want 2 (initialize, prompt): %v", len(sent), sent)
	}
}

// TestInterruptAndAfter: After runs a function later while the session
// lives; an interrupt withdraws a pending request (the agent cancels it), and
// an answer after that is refused; After does nothing once the session ended.
func TestInterruptAndAfter(t *testing.T) {
	in, out, done := agent(t, "ask-single")
	asked := make(chan sdk.Request, 1)
	cancelled := make(chan string, 1)
	s, err := sdk.Start(context.Background(), in, out, sdk.SourceFunc(func(_ *sdk.Session, r sdk.Request) { asked <- r }),
		sdk.Options{OnCancel: func(_ *sdk.Session, id string) { cancelled <- id }, OnResult: func(s *sdk.Session, _ protocol.Line) { s.CloseInput() }})
	if err != nil {
		t.Fatal(err)
	}
	s.Prompt("go")
	r := recv(t, asked)
	early := make(chan bool, 1)
	s.After(10*time.Millisecond, func() { early <- true })
	recv(t, early)
	if err := s.Interrupt(); err != nil {
		t.Fatal(err)
	}
	if id := recv(t, cancelled); id != r.ID {
		t.Fatalf("cancelled %s, want %s", id, r.ID)
	}
	if err := s.Respond(r.ID, protocol.Reply{Skip: true, Message: "late"}); !errors.Is(err, sdk.ErrWithdrawn) {
		t.Errorf("an answer after the interrupt: %v, want ErrWithdrawn", err)
	}
	if err := s.Wait(); err != nil {
		t.Fatal(err)
	}
	if o := recv(t, done); o.Code != fakeclaude.ExitExpectation {
		// ask-single expects an answer: an interrupt is the SDK side's choice, and fakeclaude says so.
		t.Errorf("fakeclaude exit %d, want %d", o.Code, fakeclaude.ExitExpectation)
	}
	ran := false
	s.After(time.Millisecond, func() { ran = true })
	time.Sleep(20 * time.Millisecond)
	if ran {
		t.Error("After ran a function after the session ended")
	}
}

// TestMain keeps the session files of the in-process fakeclaudes out of
// ~/.claude.
func TestMain(m *testing.M) { testenv.Main(m) }
