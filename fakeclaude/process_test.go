package fakeclaude_test

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/askctl/askctl/transcript"
	"golang.org/x/sys/unix"
)

// proc is fakeclaude as a real process, with raw pipes the test controls.
type proc struct {
	t          *testing.T
	cmd        *exec.Cmd
	in         *os.File // write end of its stdin
	out        *os.File // read end of its stdout
	transcript string
	done       chan struct{}
}

func spawn(t *testing.T, scenario string, env ...string) *proc {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	p := &proc{t: t, transcript: filepath.Join(dir, "t.jsonl"), done: make(chan struct{})}
	p.cmd = exec.Command(exe, sdk...)
	p.cmd.Env = append(os.Environ(), runAsEnv+"=fakeclaude", "FAKECLAUDE_SCENARIO="+scenario, "FAKECLAUDE_TRANSCRIPT="+p.transcript)
	p.cmd.Env = append(p.cmd.Env, env...)
	inR, inW, _ := os.Pipe()
	outR, outW, _ := os.Pipe()
	p.cmd.Stdin, p.cmd.Stdout = inR, outW
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	inR.Close()
	outW.Close()
	p.in, p.out = inW, outR
	go func() { p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
		p.in.Close()
		p.out.Close()
	})
	return p
}

func (p *proc) send(line string) {
	p.t.Helper()
	if _, err := p.in.WriteString(line + "\n"); err != nil {
		p.t.Fatal(err)
	}
}

// readUntil reads stdout lines until one contains s.
func (p *proc) readUntil(br *bufio.Reader, s string) {
	p.t.Helper()
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			p.t.Fatalf("stdout ended before %q: %v", s, err)
		}
		if strings.Contains(line, s) {
			return
		}
	}
}

// exit waits for the process and checks its status and its transcript: the
// exit record is the last record, with the same status.
func (p *proc) exit(want int, within time.Duration) {
	p.t.Helper()
	select {
	case <-p.done:
	case <-time.After(within):
		p.t.Fatalf("fakeclaude still running after %v", within)
	}
	if got := p.cmd.ProcessState.ExitCode(); got != want {
		p.t.Errorf("exit status %d (%v), want %d", got, p.cmd.ProcessState, want)
	}
	recs, err := transcript.ReadFile(p.transcript)
	if err != nil {
		p.t.Fatal(err)
	}
	last := recs[len(recs)-1]
	if last.Event != transcript.EventExit || last.Code == nil || *last.Code != want {
		p.t.Errorf("last transcript record %+v, want the exit record with code %d", last, want)
	}
}

const (
	initLine   = `{"type":"control_request","request_id":"req_1","request":{"subtype":"initialize","hooks":null}}`
	promptLine = `{"type":"user","message":{"role":"user","content":"go"},"parent_tool_use_id":null,"session_id":"default"}`
)

// TestPeerClosesStdout: the SDK side closes its end of fakeclaude's stdout
// while a question is pending; fakeclaude exits 6 at once (not SIGPIPE, not
// at its deadline) and writes its exit record.
func TestPeerClosesStdout(t *testing.T) {
	p := spawn(t, "ask-single", "FAKECLAUDE_TIMEOUT=30s")
	p.send(initLine)
	p.send(promptLine)
	p.readUntil(bufio.NewReader(p.out), `"can_use_tool"`)
	p.out.Close()
	p.exit(6, 5*time.Second)
}

// TestPeerDies: the SDK side goes away entirely (stdin and stdout closed)
// while a question is pending: exit 6.
func TestPeerDies(t *testing.T) {
	p := spawn(t, "ask-single", "FAKECLAUDE_TIMEOUT=30s")
	p.send(initLine)
	p.send(promptLine)
	p.readUntil(bufio.NewReader(p.out), `"can_use_tool"`)
	p.out.Close()
	p.in.Close()
	p.exit(6, 5*time.Second)
}

// bigTextScenario writes a scenario whose text step is larger than a pipe's
// buffer, so a SDK side that does not read blocks fakeclaude's write.
func bigTextScenario(t *testing.T) string {
	path := filepath.Join(t.TempDir(), "big.txtar")
	data := "A long answer nobody reads.\n-- scenario.json --\n{\"name\":\"big\"}\n-- steps.jsonl --\n{\"prompt\":\"go\"}\n{\"text\":\"" + strings.Repeat("x", 1<<20) + "\"}\n"
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestSignalWhileBlockedWriting: SIGTERM, SIGINT and SIGHUP end fakeclaude
// with 143 even while it is blocked writing to a peer that does not read.
func TestSignalWhileBlockedWriting(t *testing.T) {
	sc := bigTextScenario(t)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) {
			p := spawn(t, sc, "FAKECLAUDE_TIMEOUT=30s")
			p.send(initLine)
			p.send(promptLine)
			// It is blocked once the 1 MiB text is in its transcript (it
			// records a message just before writing it) and it has not exited.
			deadline := time.Now().Add(5 * time.Second)
			for {
				b, _ := os.ReadFile(p.transcript)
				if strings.Contains(string(b), strings.Repeat("x", 1000)) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("fakeclaude never began writing the long text")
				}
				time.Sleep(10 * time.Millisecond)
			}
			time.Sleep(100 * time.Millisecond)
			select {
			case <-p.done:
				t.Fatalf("fakeclaude exited before the signal: %v", p.cmd.ProcessState)
			default:
			}
			if err := p.cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			p.exit(143, 5*time.Second)
			b, _ := os.ReadFile(p.transcript)
			if !strings.Contains(string(b), `"text":"stopped: `) {
				t.Errorf("no note of the stop in the transcript")
			}
		})
	}
}

// TestStalledReader: a SDK side that stops reading fails the run at the
// wait deadline with exit 5, naming the stall.
func TestStalledReader(t *testing.T) {
	p := spawn(t, bigTextScenario(t), "FAKECLAUDE_TIMEOUT=500ms")
	p.send(initLine)
	p.send(promptLine)
	p.exit(5, 5*time.Second)
	recs, _ := transcript.ReadFile(p.transcript)
	var found bool
	for _, r := range recs {
		if r.Event == transcript.EventError && strings.Contains(r.Text, "has not read stdout") {
			found = true
		}
	}
	if !found {
		t.Errorf("no error record naming the stalled reader in %v", recs)
	}
	if err := p.cmd.Process.Signal(syscall.Signal(0)); err == nil || !errors.Is(err, os.ErrProcessDone) {
		t.Errorf("process still alive: %v", err)
	}
}

// TestStdinPolledThenRestored: fakeclaude reads a piped stdin through the
// runtime's poller (the descriptor in non-blocking mode, as node has it for
// the real CLI), and puts the descriptor back in blocking mode when it
// exits, for whoever shares it next.
func TestStdinPolledThenRestored(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, sdk...)
	cmd.Env = append(os.Environ(), runAsEnv+"=fakeclaude", "FAKECLAUDE_SCENARIO=ask-single", "FAKECLAUDE_NO_SESSION_FILE=1")
	inR, inW, _ := os.Pipe()
	outR, outW, _ := os.Pipe()
	defer inW.Close()
	defer outR.Close()
	// A second descriptor for the read end of stdin: the same open file,
	// whose mode fakeclaude sets.
	shared, err := syscall.Dup(int(inR.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(shared)
	nonblocking := func() bool {
		fl, err := unix.FcntlInt(uintptr(shared), syscall.F_GETFL, 0)
		if err != nil {
			t.Fatal(err)
		}
		return fl&syscall.O_NONBLOCK != 0
	}
	cmd.Stdin, cmd.Stdout = inR, outW
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	inR.Close()
	outW.Close()
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	defer func() { cmd.Process.Kill(); <-done }()

	if _, err := inW.WriteString(initLine + "\n"); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(outR).ReadString('\n')
	if err != nil || !strings.Contains(line, `"control_response"`) {
		t.Fatalf("initialize: %q %v", line, err)
	}
	if !nonblocking() {
		t.Error("while fakeclaude reads it, stdin is in blocking mode: a read waiting for the next line holds a thread")
	}
	inW.Close()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("fakeclaude did not exit when its stdin closed")
	}
	if nonblocking() {
		t.Error("fakeclaude exited and left its stdin in non-blocking mode")
	}
}
