package events_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/askctl/askctl/claudecli"
	"github.com/askctl/askctl/fakeclaude"
	"github.com/askctl/askctl/internal/events"
	"github.com/askctl/askctl/internal/testenv"
	"github.com/askctl/askctl/protocol"
	"github.com/askctl/askctl/sdk"
	"github.com/askctl/askctl/transcript"
)

func TestMain(m *testing.M) {
	testenv.Main(m)
}

// collector keeps the records of each session, and signals each arrival.
type collector struct {
	mu   sync.Mutex
	recs map[string][]transcript.Record
	ch   chan struct{}
}

func (c *collector) Write(r transcript.Record) error {
	c.mu.Lock()
	c.recs[r.Session] = append(c.recs[r.Session], r)
	c.mu.Unlock()
	select {
	case c.ch <- struct{}{}:
	default:
	}
	return nil
}

// await waits until some session has a record satisfying ok.
func (c *collector) await(t *testing.T, what string, ok func(transcript.Record) bool) string {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		c.mu.Lock()
		for s, recs := range c.recs {
			for _, r := range recs {
				if ok(r) {
					c.mu.Unlock()
					return s
				}
			}
		}
		c.mu.Unlock()
		select {
		case <-c.ch:
		case <-deadline:
			t.Fatalf("no live event: %s", what)
		}
	}
}

// listen starts a hub on a socket in a new directory, with a collector of
// every record; it closes with the test.
func listen(t *testing.T) (string, *events.Hub, *collector) {
	t.Helper()
	dir := t.TempDir()
	hub, err := events.Listen("unix", filepath.Join(dir, "ev.sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hub.Close() })
	all := &collector{recs: map[string][]transcript.Record{}, ch: make(chan struct{}, 1)}
	hub.Subscribe("", all)
	return dir, hub, all
}

// TestEventSeenWhileAgentWaits: two fakeclaude sessions share one hub; each
// one's can_use_tool request reaches the hub while fakeclaude is still
// blocked waiting for the answer, and records are routed by session.
func TestEventSeenWhileAgentWaits(t *testing.T) {
	dir, hub, all := listen(t)

	exe, _ := os.Executable()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	type run struct {
		p       *claudecli.Process
		s       *sdk.Session
		asked   chan sdk.Request
		session string
	}
	var runs []*run
	for _, sc := range []string{"ask-single", "ask-skip"} {
		p, err := claudecli.Launch(ctx, claudecli.Command{Path: exe, Args: claudecli.SDKArgs, Dir: dir,
			Env: append(os.Environ(), fakeclaude.Env{RunAs: fakeclaude.RoleFake, Scenario: sc, Events: hub.Addr(), Timeout: 20 * time.Second}.Environ()...)})
		if err != nil {
			t.Fatal(err)
		}
		r := &run{p: p, asked: make(chan sdk.Request, 1)}
		r.s, err = sdk.Start(ctx, p.Stdin, p.Stdout, sdk.SourceFunc(func(_ *sdk.Session, req sdk.Request) { r.asked <- req }),
			sdk.Options{OnResult: func(s *sdk.Session, _ protocol.Line) { s.CloseInput() }})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.s.Prompt("go"); err != nil {
			t.Fatal(err)
		}
		runs = append(runs, r)
	}
	for _, r := range runs {
		req := <-r.asked
		// The request is pending: fakeclaude is blocked on it. The hub has
		// already routed the request to a session.
		r.session = all.await(t, "can_use_tool "+req.ID, func(rec transcript.Record) bool {
			return rec.Dir == transcript.FromCLI && strings.Contains(string(rec.Msg), req.ID)
		})
		if !r.s.Pending(req.ID) {
			t.Fatalf("request %s is no longer pending", req.ID)
		}
		select {
		case <-r.s.Done():
			t.Fatal("the agent ended before it was answered")
		default:
		}
		reply := protocol.Reply{Answers: map[string]string{"Which database should I use?": "Postgres"}}
		if req.ToolName == protocol.ToolAskUserQuestion && strings.Contains(string(req.Input), "How should I format") {
			reply = protocol.Reply{Skip: true, Message: "User skipped this question"}
		}
		if err := r.s.Respond(req.ID, reply); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range runs {
		if err := r.s.Wait(); err != nil {
			t.Fatal(err)
		}
		code, _ := r.p.Wait()
		if code != 0 {
			t.Errorf("fakeclaude exited %d, stderr %s", code, r.p.Stderr())
		}
	}
	if runs[0].session == runs[1].session || runs[0].session == "" {
		t.Fatalf("sessions %q and %q, want two distinct ones", runs[0].session, runs[1].session)
	}
	if got := hub.Sessions(); len(got) != 2 {
		t.Errorf("Sessions() = %v, want 2", got)
	}
	// Every session's records end with its exit, delivered live.
	for _, r := range runs {
		all.await(t, "exit of "+r.session, func(rec transcript.Record) bool { return rec.Session == r.session && rec.Event == transcript.EventExit })
	}
}

// TestSubscribeOneSession: records of other sessions do not reach a
// subscriber of one session, and cancel stops delivery.
func TestSubscribeOneSession(t *testing.T) {
	hub, err := events.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hub.Close()
	var mu sync.Mutex
	var forA []string
	cancel := hub.Subscribe("a", transcript.Func(func(r transcript.Record) error {
		mu.Lock()
		forA = append(forA, r.Text)
		mu.Unlock()
		return nil
	}))
	// A subscriber to every session tells when the hub has routed a record.
	routed := make(chan string, 10)
	hub.Subscribe("", transcript.Func(func(r transcript.Record) error { routed <- r.Text; return nil }))
	conn, err := dial(hub.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	w := transcript.NewWriter(conn)
	waitRouted := func(text string) {
		t.Helper()
		for {
			select {
			case got := <-routed:
				if got == text {
					return
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("%q was never routed", text)
			}
		}
	}
	w.Write(transcript.Record{Session: "b", Event: transcript.EventNote, Text: "for b"})
	w.Write(transcript.Record{Session: "a", Event: transcript.EventNote, Text: "for a"})
	waitRouted("for a")
	cancel()
	w.Write(transcript.Record{Session: "a", Event: transcript.EventNote, Text: "after cancel"})
	waitRouted("after cancel")
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(forA, ",") != "for a" {
		t.Errorf("the subscriber of session a got %q, want only \"for a\"", forA)
	}
}

// TestCloseDelivers: records an agent wrote before it exited are all
// delivered, even when the hub is closed at once after.
func TestCloseDelivers(t *testing.T) {
	hub, err := events.Listen("unix", filepath.Join(t.TempDir(), "ev.sock"))
	if err != nil {
		t.Fatal(err)
	}
	var n int
	var mu sync.Mutex
	hub.Subscribe("", transcript.Func(func(transcript.Record) error { mu.Lock(); n++; mu.Unlock(); return nil }))
	conn, err := dial(hub.Addr())
	if err != nil {
		t.Fatal(err)
	}
	w := transcript.NewWriter(conn)
	for i := 0; i < 2000; i++ {
		if err := w.Write(transcript.Record{Session: "s", Event: transcript.EventNote, Step: i}); err != nil {
			t.Fatal(err)
		}
	}
	conn.Close()
	hub.Close()
	mu.Lock()
	defer mu.Unlock()
	if n != 2000 {
		t.Errorf("%d of 2000 records delivered", n)
	}
}

func dial(addr string) (net.Conn, error) {
	network, address, _ := strings.Cut(addr, ":")
	return net.Dial(network, address)
}

// TestDirector: a fakeclaude with no scenario asks the hub, plays what the
// director assigns under the session id it was given, and a hub without a
// director (or a director that refuses) sends it away with the reason.
// directedID is the session id the test director assigns (a UUID, as the
// harness assigns).
const directedID = "5e7c1a2b-3d4e-4f50-8a6b-7c8d9e0f1a2b"

func TestDirector(t *testing.T) {
	dir, hub, all := listen(t)
	exe, _ := os.Executable()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := func() *claudecli.Process {
		p, err := claudecli.Launch(ctx, claudecli.Command{Path: exe, Args: claudecli.SDKArgs, Dir: dir,
			Env: append(os.Environ(), fakeclaude.Env{RunAs: fakeclaude.RoleFake, Events: hub.Addr()}.Environ()...)})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}

	// No director: a clear refusal, exit 2.
	p := start()
	p.Stdin.Close()
	if code, _ := p.Wait(); code != 2 || !strings.Contains(p.Stderr(), "assigns no scenarios") {
		t.Fatalf("without a director: exit %d, stderr %q", code, p.Stderr())
	}

	sc, err := os.ReadFile(filepath.Join("..", "..", "scenarios", "ask-single.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	var hellos []events.Hello
	var mu sync.Mutex
	hub.SetDirector(func(h events.Hello) (events.Assignment, error) {
		mu.Lock()
		defer mu.Unlock()
		hellos = append(hellos, h)
		if len(hellos) > 1 {
			return events.Assignment{}, errors.New("nothing more to play")
		}
		return events.Assignment{Name: "ask-single", Scenario: string(sc), SessionID: directedID, Timeout: "20s"}, nil
	})
	p = start()
	s, err := sdk.Start(ctx, p.Stdin, p.Stdout, sdk.SourceFunc(func(s *sdk.Session, req sdk.Request) {
		s.Respond(req.ID, protocol.Reply{Answers: map[string]string{"Which database should I use?": "Postgres"}})
	}), sdk.Options{OnResult: func(s *sdk.Session, _ protocol.Line) { s.CloseInput() }})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Prompt("Set up storage for the app."); err != nil {
		t.Fatal(err)
	}
	if err := s.Wait(); err != nil {
		t.Fatal(err)
	}
	if code, _ := p.Wait(); code != 0 {
		t.Fatalf("directed fakeclaude exited %d: %s", code, p.Stderr())
	}
	all.await(t, "hello of the directed session", func(r transcript.Record) bool {
		return r.Session == directedID && r.Event == events.EventHello
	})
	all.await(t, "exit of the directed session", func(r transcript.Record) bool {
		return r.Session == directedID && r.Event == transcript.EventExit
	})
	mu.Lock()
	if len(hellos) != 1 || hellos[0].PID != p.PID() || len(hellos[0].Args) == 0 {
		t.Errorf("hello = %+v, want the process's pid and args", hellos)
	}
	mu.Unlock()

	// The director refuses the next one: its reason reaches stderr.
	p = start()
	p.Stdin.Close()
	if code, _ := p.Wait(); code != 2 || !strings.Contains(p.Stderr(), "nothing more to play") {
		t.Fatalf("refused: exit %d, stderr %q", code, p.Stderr())
	}
}
