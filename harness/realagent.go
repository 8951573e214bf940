package harness

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/askctl/askctl/claudecli"
	"github.com/askctl/askctl/fakeclaude"
	"github.com/askctl/askctl/internal/agent"
	"github.com/askctl/askctl/internal/agentlink"
	"github.com/askctl/askctl/internal/flock"
	"github.com/askctl/askctl/protocol"
	"github.com/askctl/askctl/scenarios"
	"github.com/askctl/askctl/transcript"
)

// With --agent real the bridge under test spawns the real claude CLI, through
// this shim: askctl run as fakeclaude.RoleReal. It does for the real
// CLI what fakeclaude does by itself:
//
//   - asks the harness (fakeclaude's Env.Events) what to play, as fakeclaude
//     does;
//   - serves the scenario's model turns on a loopback fake Messages API and
//     runs the CLI against it, offline, under the session id the harness
//     gave (--session-id), in a HOME kept per session so --resume finds it;
//   - passes every line through both ways, and streams each to the harness
//     as a live record, with the scenario's expectation checked on each
//     answer;
//   - plays what the real CLI does not do by itself: a step's cancel_after
//     (an interrupt, to which the CLI answers with control_cancel_request;
//     the interrupt's own reply is not the bridge's and is kept from it) and
//     exit_after (the CLI is killed and the shim exits with exit_code).
//
// Env: fakeclaude.EnvEvents (the harness), ASKCTL_REAL_CLAUDE (the CLI),
// ASKCTL_AGENT_HOMES (where each session's HOME goes).
const (
	EnvRealClaude = "ASKCTL_REAL_CLAUDE"
	EnvAgentHomes = "ASKCTL_AGENT_HOMES"
)

// passThrough runs the real CLI with args and this process's standard
// streams, and returns its exit status.
func passThrough(claude string, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	cmd := exec.Command(claude, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	for _, kv := range os.Environ() {
		if !fakeclaude.IsEnv(kv) {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		fmt.Fprintf(stderr, "askctl (real agent shim): %v\n", err)
		return 2
	}
	return 0
}

// RealShim is the shim's main: it returns the exit status.
func RealShim(args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "askctl (real agent shim): "+format+"\n", a...)
		return 2
	}
	addr := getenv(fakeclaude.EnvEvents)
	claude := getenv(EnvRealClaude)
	if addr == "" || claude == "" {
		return fail("%s and %s must be set", fakeclaude.EnvEvents, EnvRealClaude)
	}
	if flags, err := claudecli.ParseArgs(args); err == nil && !flags.Session() {
		// claude --version, --help, doctor, mcp …: no session, so no slot
		// of the harness's; the real CLI answers it as it is.
		return passThrough(claude, args, stdin, stdout, stderr)
	}
	conn, err := agentlink.Dial(addr)
	if err != nil {
		return fail("%v", err)
	}
	defer conn.Close()
	flags, err := claudecli.ParseArgs(args)
	if err != nil {
		return fail("%v", err)
	}
	resume := flags.Resume
	parent := os.Getppid() // the bridge, which runs the shim as its claude
	homeOf := func(session string) (string, error) {
		home := filepath.Join(getenv(EnvAgentHomes), session)
		if getenv(EnvAgentHomes) == "" {
			home = filepath.Join(os.TempDir(), "askctl-agent-"+session)
		}
		return home, os.MkdirAll(home, 0o700)
	}
	// One CLI at a time in a session's HOME: a resumed one starts once the
	// one before it has ended (after a crash of its bridge it ends on its
	// own, within orphanGrace), as it would have by the time a crashed
	// bridge came back and resumed the session. Two at once in one HOME
	// are not what a bridge does, and the real CLI is not made for them.
	// A resumed shim takes the lock before it says hello, so what the CLI
	// before it still writes comes before this process's hello, not as
	// its own.
	unlock, waited, locked := func() {}, time.Duration(0), true
	if resume != "" {
		home, err := homeOf(resume)
		if err != nil {
			return fail("%v", err)
		}
		unlock, waited, locked = lockHome(home, orphanGrace+10*time.Second)
	}
	defer func() { unlock() }()
	cwd, _ := os.Getwd()
	a, err := agentlink.Ask(conn, agentlink.Hello{PID: os.Getpid(), Args: args, Cwd: cwd, Resume: resume}, 30*time.Second)
	if err != nil {
		return fail("%v", err)
	}
	sc, err := scenarios.Parse(a.Name, []byte(a.Scenario))
	if err != nil {
		return fail("assigned scenario: %v", err)
	}
	session := a.SessionID
	first := 0 // the first step this process plays
	if resume != "" {
		// The resumed CLI sends the whole conversation: the model API
		// serves the first turns again, then the resume steps.
		session = resume
		first = len(sc.Steps)
		sc = sc.Conversation()
	}
	rec := &liveRecorder{w: transcript.NewWriter(conn), session: session}
	home, err := homeOf(session)
	if err != nil {
		return fail("%v", err)
	}
	switch {
	case resume == "":
		// A new session's HOME is its own: the lock is for the resumes
		// after it.
		unlock, _, _ = lockHome(home, 0)
	case !locked:
		rec.write(transcript.Record{Event: transcript.EventNote, Text: fmt.Sprintf("the session's CLI before this one had not ended in %v: this one starts beside it", waited.Round(time.Millisecond))})
	case waited > time.Second:
		rec.write(transcript.Record{Event: transcript.EventNote, Text: fmt.Sprintf("the session's CLI before this one took %v to end", waited.Round(time.Millisecond))})
	}
	cliArgs := append([]string(nil), args...)
	if resume == "" && flags.SessionID == "" && !flags.Continue {
		cliArgs = append(cliArgs, "--session-id="+session)
	}
	c, err := agent.RealCommand(claude, cliArgs, cwd, home, sc, rec)
	if err != nil {
		return fail("%v", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer stop()
	// A bridge that dies (a crash row kills it) closes the pipe the shim
	// writes the CLI's lines to. The write fails (EPIPE) and the shim goes
	// on: dying of SIGPIPE would take the CLI with it (it dies with its
	// launcher) at whatever it was doing, its session file half written,
	// where the real CLI spawned by the bridge itself would have read the
	// end of its stdin and ended on its own.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	p, err := claudecli.Launch(ctx, c)
	if err != nil {
		return fail("%v", err)
	}
	r := &relay{sc: sc, rec: rec, cli: p, out: stdout, asked: map[string]*pendingAsk{}, mine: map[string]bool{}, nextStep: first, parent: parent}
	code := r.run(stdin)
	tail := strings.TrimSpace(p.Stderr())
	if tail != "" {
		fmt.Fprintln(stderr, tail)
	}
	if len(tail) > 2000 {
		tail = tail[len(tail)-2000:]
	}
	if r.bridgeGone() {
		// Not the session's agent's end as its bridge sees it: the bridge
		// that ran this process is gone, and the session may already run
		// in another (resumed by the restarted bridge), whose exit the
		// harness must not take this one for.
		rec.write(transcript.Record{Event: transcript.EventNote, Text: fmt.Sprintf("the CLI exited %d after its bridge had gone: %s", code, tail)})
		return code
	}
	// The harness tells a case's author how the CLI ended, stderr and all.
	rec.write(transcript.Record{Event: transcript.EventExit, Code: transcript.Int(code), Text: tail})
	return code
}

// liveRecorder streams records to the harness under the session's id.
type liveRecorder struct {
	mu      sync.Mutex
	w       *transcript.Writer
	session string
}

func (l *liveRecorder) write(r transcript.Record) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r.Session = l.session
	_ = l.w.Write(r)
}

// Write takes the fake API's notes.
func (l *liveRecorder) Write(r transcript.Record) error { l.write(r); return nil }

type pendingAsk struct {
	step  *scenarios.Step
	input json.RawMessage
	timer *time.Timer
}

// relay passes lines between the bridge and the real CLI.
type relay struct {
	sc   *scenarios.Scenario
	rec  *liveRecorder
	cli  *claudecli.Process
	out  io.Writer
	outM sync.Mutex
	inM  sync.Mutex // writes to the CLI's stdin

	mu       sync.Mutex
	asked    map[string]*pendingAsk // request id → the step it plays
	nextStep int                    // the next ask or tool step
	mine     map[string]bool        // request ids of the shim's own interrupts
	exitCode *int                   // exit_after: the status to exit with
	gone     atomic.Bool            // a write to the bridge failed: it is gone
	parent   int                    // the bridge's pid, as the shim began
	orphan   *time.Timer            // kills the CLI orphanGrace after its stdin ended (under mu)
}

// orphanGrace is how long the CLI has to end after its bridge is gone and
// its stdin closed before the shim kills it.
const orphanGrace = 15 * time.Second

// bridgeGone: a write to the bridge failed, or the shim's parent is no
// longer the bridge that started it (a CLI that writes nothing once its
// stdin ends has no write to fail).
func (r *relay) bridgeGone() bool {
	return r.gone.Load() || (r.parent != 0 && os.Getppid() != r.parent)
}

func (r *relay) run(stdin io.Reader) int {
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(r.cli.Stdout)
		sc.Buffer(make([]byte, 64<<10), 64<<20)
		for sc.Scan() {
			r.fromCLI(append([]byte(nil), sc.Bytes()...))
		}
	}()
	go func() {
		sc := bufio.NewScanner(stdin)
		sc.Buffer(make([]byte, 64<<10), 64<<20)
		for sc.Scan() {
			r.toCLI(append([]byte(nil), sc.Bytes()...), true)
		}
		r.inM.Lock()
		r.cli.Stdin.Close()
		r.inM.Unlock()
		// A CLI whose bridge is gone ends on its own once its stdin is
		// closed; one that does not is not left running.
		r.mu.Lock()
		r.orphan = time.AfterFunc(orphanGrace, func() {
			if r.bridgeGone() {
				r.cli.Kill()
			}
		})
		r.mu.Unlock()
	}()
	<-done
	code, _ := r.cli.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.orphan != nil {
		r.orphan.Stop()
	}
	if r.exitCode != nil {
		return *r.exitCode
	}
	return code
}

// toCLI writes a line to the CLI; from the bridge, it is recorded, and an
// answer is checked against the scenario.
func (r *relay) toCLI(line []byte, fromBridge bool) {
	r.rec.write(transcript.Record{Dir: transcript.ToCLI, Msg: json.RawMessage(line)})
	if fromBridge {
		r.check(line)
	}
	r.inM.Lock()
	defer r.inM.Unlock()
	_, _ = r.cli.Stdin.Write(append(line, '\n'))
}

func (r *relay) fromCLI(line []byte) {
	m := protocol.Peek(line)
	typ := m.Type
	if typ == protocol.TypeControlResponse {
		id := m.Response.RequestID
		r.mu.Lock()
		mine := r.mine[id]
		r.mu.Unlock()
		if mine {
			// The CLI's reply to the shim's own interrupt.
			r.rec.write(transcript.Record{Event: transcript.EventNote, Text: "the CLI answered the shim's interrupt " + id})
			return
		}
	}
	if json.Valid(line) {
		r.rec.write(transcript.Record{Dir: transcript.FromCLI, Msg: json.RawMessage(line)})
	}
	if typ == protocol.TypeControlRequest && m.Request.Subtype == protocol.SubtypeCanUseTool {
		r.asking(m)
	}
	if typ == protocol.TypeControlCancelRequest {
		r.mu.Lock()
		if a := r.asked[m.RequestID]; a != nil && a.timer != nil {
			a.timer.Stop()
		}
		r.mu.Unlock()
	}
	r.outM.Lock()
	defer r.outM.Unlock()
	if _, err := r.out.Write(append(line, '\n')); err != nil {
		r.gone.Store(true)
	}
}

// asking pairs a can_use_tool request with the scenario's next ask or tool
// step, and arms its cancel_after or exit_after.
func (r *relay) asking(m protocol.Peeked) {
	id := m.RequestID
	r.mu.Lock()
	defer r.mu.Unlock()
	var st *scenarios.Step
	for r.nextStep < len(r.sc.Steps) {
		s := &r.sc.Steps[r.nextStep]
		r.nextStep++
		if s.Kind == scenarios.KindAsk || s.Kind == scenarios.KindTool {
			st = s
			break
		}
	}
	a := &pendingAsk{step: st, input: m.Request.Input}
	r.asked[id] = a
	if st == nil {
		return
	}
	switch {
	case st.CancelAfter > 0:
		a.timer = time.AfterFunc(st.CancelAfter, func() {
			iid := "askctl_interrupt_" + id
			r.mu.Lock()
			r.mine[iid] = true
			r.mu.Unlock()
			r.rec.write(transcript.Record{Event: transcript.EventNote, Step: st.N, Text: fmt.Sprintf("interrupting the CLI after %v without an answer (cancel_after)", st.CancelAfter)})
			r.toCLI(protocol.InterruptRequest(iid), false)
		})
	case st.ExitAfter > 0:
		a.timer = time.AfterFunc(st.ExitAfter, func() {
			r.mu.Lock()
			code := st.ExitCode
			r.exitCode = &code
			r.mu.Unlock()
			r.rec.write(transcript.Record{Event: transcript.EventNote, Step: st.N, Text: fmt.Sprintf("ending the CLI after %v without an answer (exit_after)", st.ExitAfter)})
			r.cli.Kill()
		})
	}
}

// check checks an answer from the bridge against its step's expectation.
func (r *relay) check(line []byte) {
	m := protocol.Peek(line)
	if m.Type != protocol.TypeControlResponse {
		return
	}
	id := m.Response.RequestID
	r.mu.Lock()
	a := r.asked[id]
	if a != nil && a.timer != nil {
		a.timer.Stop()
	}
	r.mu.Unlock()
	if a == nil || a.step == nil {
		return
	}
	exp := a.step.Expected()
	if exp == nil || m.Response.Subtype != protocol.SubtypeSuccess {
		return
	}
	payload := m.Response.Result
	var pr protocol.PermissionResult
	if err := json.Unmarshal(payload, &pr); err != nil {
		return
	}
	problems := exp.Check(a.input, &pr, payload)
	text := "the answer is as the scenario expects"
	if len(problems) > 0 {
		text = strings.Join(problems, "; ")
	}
	r.rec.write(transcript.Record{Event: transcript.EventExpect, Step: a.step.N, OK: transcript.Bool(len(problems) == 0), Text: text})
}

// lockHome takes the lock of a session's HOME (a flock of a file in it,
// which the kernel releases with its holder, however it ends), waiting at
// most wait for the process holding it; it returns the release and how
// long it waited, and whether it holds the lock: past wait, it goes on
// without it.
func lockHome(home string, wait time.Duration) (unlock func(), waited time.Duration, locked bool) {
	start := time.Now()
	for {
		unlock, err := flock.Try(filepath.Join(home, ".askctl-shim.lock"))
		if err == nil {
			return unlock, time.Since(start), true
		} else if !errors.Is(err, flock.ErrHeld) || time.Since(start) >= wait {
			return func() {}, time.Since(start), false
		}
		time.Sleep(50 * time.Millisecond)
	}
}
