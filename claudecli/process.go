package claudecli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// This file is how a CLI process is started and stopped: the real CLI,
// fakeclaude, or any program that speaks the CLI's stream-json. Which
// program, and with what environment, is the caller's: a bridge launches
// "a CLI" and never needs to know whether it is fake.

// Command is how to start a CLI process.
type Command struct {
	Path string
	Args []string
	Env  []string // nil: this process's environment
	Dir  string
	// ConfigDir is the CLI config directory the process keeps its session
	// files in; when set, Wait reads them into Process.Sessions.
	ConfigDir string
	// Version names a program that is not the claude CLI ("fakeclaude").
	Version string
	// Cleanup runs, last first, once the process has exited and Wait has
	// read its sessions, or when it could not be started.
	Cleanup []func()
	// DieWithLauncher has the kernel kill the CLI when the process that
	// launched it dies, however it dies (Linux): a stand-in for the CLI
	// (the harness's shim) killed outright leaves no CLI running on in a
	// process group nobody knows of. A bridge leaves it false: its agents
	// outlive a crash, to be found after the restart.
	DieWithLauncher bool
}

// SDKArgs are the flags the official TypeScript SDK passes with canUseTool.
var SDKArgs = []string{"--output-format=stream-json", "--verbose", "--input-format=stream-json", "--model=claude-sonnet-4-5", "--permission-prompt-tool=stdio"}

// ErrStart is wrapped by every error of an agent that could not be started.
var ErrStart = errors.New("the agent could not be started")

// Process is a running agent.
type Process struct {
	Stdin  io.WriteCloser
	Stdout io.Reader
	// Version names the agent when it is not a claude CLI ("fakeclaude");
	// empty for the real CLI, whose version is in its system/init message.
	Version string

	// Sessions are the session files the agent wrote (CLI config
	// directory's projects/…/ID.jsonl, by path under projects/), read by
	// Wait before the agent's directory goes.
	Sessions map[string][]byte

	configDir string // where the agent keeps its session files
	cmd       *exec.Cmd
	cleanup   []func()
	stderr    *lockedBuffer
	waitErr   error
	waited    chan struct{}
}

// Wait waits for the process to exit and returns its exit status (-1 if it
// was killed by a signal), then releases what Start set up.
func (p *Process) Wait() (int, error) {
	<-p.waited
	if p.configDir != "" && p.Sessions == nil {
		p.Sessions = readSessions(p.configDir)
	}
	for i := len(p.cleanup) - 1; i >= 0; i-- {
		p.cleanup[i]()
	}
	p.cleanup = nil
	code := p.cmd.ProcessState.ExitCode()
	var ee *exec.ExitError
	if p.waitErr != nil && !errors.As(p.waitErr, &ee) {
		return code, p.waitErr
	}
	return code, nil
}

// PeakRSS is the process's peak resident memory in bytes, known after Wait.
func (p *Process) PeakRSS() int64 {
	if p.cmd.ProcessState == nil {
		return 0
	}
	if ru, ok := p.cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		return ru.Maxrss * 1024 // Linux reports KiB
	}
	return 0
}

// readSessions reads every session file under dir/projects.
func readSessions(dir string) map[string][]byte {
	out := map[string][]byte{}
	files, _ := filepath.Glob(filepath.Join(dir, "projects", "*", "*.jsonl"))
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil {
			rel, _ := filepath.Rel(filepath.Join(dir, "projects"), f)
			out[rel] = b
		}
	}
	return out
}

// Kill ends the process at once, with what it started (it runs in a
// process group of its own).
func (p *Process) Kill() {
	select {
	case <-p.waited:
		return // reaped: its process group id may be another's by now
	default:
		killGroup(p.cmd)
	}
}

// SessionsNow reads the session files the agent has written so far (nil
// for an agent whose config directory is not known).
func (p *Process) SessionsNow() map[string][]byte {
	if p.configDir == "" {
		return nil
	}
	return readSessions(p.configDir)
}

// PID is the process id.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Stderr is what the process wrote on stderr so far.
func (p *Process) Stderr() string { return p.stderr.String() }

// Launch starts c with its stdin and stdout connected to the returned
// Process, and its stderr kept. ctx ends the process.
func Launch(ctx context.Context, c Command) (*Process, error) {
	p := &Process{Version: c.Version, configDir: c.ConfigDir, cleanup: c.Cleanup}
	cmd := exec.CommandContext(ctx, c.Path, c.Args...)
	cmd.Env, cmd.Dir = c.Env, c.Dir
	fail := func(err error) (*Process, error) {
		p.release()
		return nil, err
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return fail(err)
	}
	// An os.Pipe of our own, not StdoutPipe: Wait must not close the read end
	// while the caller still reads what the agent wrote before it exited.
	outR, outW, err := os.Pipe()
	if err != nil {
		return fail(err)
	}
	cmd.Stdout = outW
	p.stderr = &lockedBuffer{}
	cmd.Stderr = p.stderr
	cmd.WaitDelay = 2 * time.Second
	ownGroup(cmd)
	if c.DieWithLauncher {
		dieWithParent(cmd)
	}
	cmd.Cancel = func() error { killGroup(cmd); return nil }
	if err := cmd.Start(); err != nil {
		outR.Close()
		outW.Close()
		return fail(fmt.Errorf("%w: %w", ErrStart, err))
	}
	outW.Close()
	p.cmd, p.Stdin, p.Stdout = cmd, stdin, outR
	p.cleanup = append(p.cleanup, func() { outR.Close() })
	p.waited = make(chan struct{})
	go func() {
		p.waitErr = cmd.Wait()
		close(p.waited)
	}()
	return p, nil
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// release frees what Launch was given for a process that never started.
func (p *Process) release() {
	for i := len(p.cleanup) - 1; i >= 0; i-- {
		p.cleanup[i]()
	}
	p.cleanup = nil
}

// RealEnv is the environment the real CLI runs in against a fake model API
// at baseURL: offline, any key, a throwaway HOME, and nothing inherited that
// would point it at a real account or another endpoint.
func RealEnv(baseURL, home string) []string {
	return append(filteredEnv(),
		"ANTHROPIC_BASE_URL="+baseURL,
		"ANTHROPIC_API_KEY=sk-askctl-fake-key",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_AUTOUPDATER=1",
		"ENABLE_TOOL_SEARCH=false",
		"HOME="+home,
	)
}

// filteredEnv is the environment without anything that would point the CLI at
// a real account or another endpoint.
func filteredEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "ANTHROPIC_") || strings.HasPrefix(k, "CLAUDE_") || k == "HOME" {
			continue
		}
		env = append(env, kv)
	}
	return env
}
