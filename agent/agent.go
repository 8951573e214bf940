// Package agent starts the program that plays the agent's side of a scenario:
// fakeclaude, or the real claude CLI running against askctl's fake model API.
// Everything in askctl that runs an agent (replay, the fidelity check, and
// later the bridge and the conformance suite) goes through [Agent], so each
// can run with either.
package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/askctl/askctl/events"
	"github.com/askctl/askctl/fakeclaude"
	"github.com/askctl/askctl/fakeclaude/fakeapi"
	"github.com/askctl/askctl/scenarios"
	"github.com/askctl/askctl/transcript"
)

// Agent starts agent processes for scenarios.
type Agent interface {
	// Name is "fake" or "real".
	Name() string
	// Start starts the agent for sc with the flags an SDK passes. The process
	// reads the SDK side on Stdin and writes the agent side on Stdout.
	Start(ctx context.Context, sc *scenarios.Scenario, opts Options) (*Process, error)
	// CancelsItself reports whether the agent plays a scenario's cancel_after
	// and exit_after on its own (fakeclaude does). When false the SDK side
	// must interrupt or end the agent at those times, as the real CLI
	// withdraws a request only when interrupted.
	CancelsItself() bool
}

// Options tune Start.
type Options struct {
	// Args are the agent's flags; nil means SDKArgs.
	Args []string
	// Log receives the agent's notes as they happen: fakeclaude's
	// transcript events (live, over FAKECLAUDE_EVENTS), the fake model API's
	// requests and errors.
	Log transcript.Sink
	// Dir is the working directory and HOME for the agent; a temporary
	// directory when empty.
	Dir string
	// WaitTimeout is the agent's own deadline for each wait on the SDK side
	// (fakeclaude's FAKECLAUDE_TIMEOUT), so a silent SDK side gets the
	// agent's verdict ("no answer … within", exit 5) rather than a kill.
	// Zero leaves the agent's default. The real CLI has no such deadline.
	WaitTimeout time.Duration
}

// Command is how to start an agent process: no scenario, just a program.
type Command struct {
	Path string
	Args []string
	Env  []string // nil: this process's environment
	Dir  string
}

// SDKArgs are the flags the official TypeScript SDK passes with canUseTool.
var SDKArgs = []string{"--output-format=stream-json", "--verbose", "--input-format=stream-json", "--model=claude-sonnet-4-5", "--permission-prompt-tool=stdio"}

// PrintArgs are the flags of a route "mcp" scenario's agent: print mode
// with the scenario's prompt, stream-json output, mcpConfig as
// --mcp-config, and the MCP tools the scenario calls pre-allowed.
func PrintArgs(sc *scenarios.Scenario, mcpConfig string) []string {
	prompt := ""
	for _, st := range sc.Steps {
		if st.Kind == scenarios.KindPrompt {
			prompt = st.Prompt
			break
		}
	}
	args := []string{"-p", prompt, "--output-format", "stream-json", "--verbose", "--mcp-config", mcpConfig}
	if tools := sc.MCPTools(); len(tools) > 0 {
		args = append(args, "--allowedTools", strings.Join(tools, ","))
	}
	return args
}

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

// Kill ends the process at once.
func (p *Process) Kill() {
	if p.cmd.Process != nil {
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
	}
}

// PID is the process id.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Stderr is what the process wrote on stderr so far.
func (p *Process) Stderr() string { return p.stderr.String() }

// Launch starts c with its stdin and stdout connected to the returned
// Process, and its stderr kept. ctx ends the process.
func Launch(ctx context.Context, c Command) (*Process, error) {
	return launch(ctx, c, &Process{})
}

func launch(ctx context.Context, c Command, p *Process) (*Process, error) {
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

func workDir(opts Options) (string, func(), error) {
	if opts.Dir != "" {
		return opts.Dir, func() {}, nil
	}
	d, err := os.MkdirTemp("", "askctl-agent-")
	if err != nil {
		return "", nil, err
	}
	return d, func() { os.RemoveAll(d) }, nil
}

// Fake runs fakeclaude.
type Fake struct {
	// Exe is the fakeclaude executable. With RunAs set it is a program that
	// turns into fakeclaude when RunAsEnv=RunAs is in its environment (askctl
	// itself); empty means this process's executable.
	Exe   string
	RunAs string
}

// ErrStart is wrapped by every error of an agent that could not be started.
var ErrStart = errors.New("the agent could not be started")

// RunAsEnv switches a multi-call binary (askctl, a test binary) into fakeclaude.
const RunAsEnv = "_ASKCTL_RUN_AS"

func (Fake) Name() string        { return "fake" }
func (Fake) CancelsItself() bool { return true }

// Start runs fakeclaude with the scenario. The scenario file, or the built-in
// name, is passed in FAKECLAUDE_SCENARIO; a scenario parsed from elsewhere is
// written to a temporary file first. With opts.Log, fakeclaude's records
// reach it live, over FAKECLAUDE_EVENTS.
func (f Fake) Start(ctx context.Context, sc *scenarios.Scenario, opts Options) (*Process, error) {
	exe := f.Exe
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return nil, err
		}
	}
	dir, cleanup, err := workDir(opts)
	if err != nil {
		return nil, err
	}
	p := &Process{Version: "fakeclaude", cleanup: []func(){cleanup}, configDir: filepath.Join(dir, ".claude")}
	c := Command{Path: exe, Args: opts.Args, Dir: dir, Env: os.Environ()}
	if c.Args == nil {
		c.Args = SDKArgs
	}
	ref, err := scenarioRef(sc, dir)
	if err != nil {
		p.release()
		return nil, err
	}
	// The session file goes where the real CLI's goes (Real: HOME=dir).
	c.Env = append(c.Env, "FAKECLAUDE_SCENARIO="+ref, "CLAUDE_CONFIG_DIR="+filepath.Join(dir, ".claude"))
	if f.RunAs != "" {
		c.Env = append(c.Env, RunAsEnv+"="+f.RunAs)
	}
	if opts.WaitTimeout > 0 {
		c.Env = append(c.Env, "FAKECLAUDE_TIMEOUT="+opts.WaitTimeout.String())
	}
	if opts.Log != nil {
		hub, err := events.Listen("unix", filepath.Join(dir, "events.sock"))
		if err != nil {
			p.release()
			return nil, err
		}
		hub.Subscribe("", transcript.Func(func(r transcript.Record) error {
			if r.IsWire() {
				return nil // the SDK side sees those itself
			}
			return opts.Log.Write(r)
		}))
		p.cleanup = append(p.cleanup, func() { hub.Close() })
		c.Env = append(c.Env, "FAKECLAUDE_EVENTS="+hub.Addr())
	}
	return launch(ctx, c, p)
}

// scenarioRef is how fakeclaude finds sc: its built-in name, its file, or,
// for a scenario parsed from elsewhere, a copy of its source in dir.
func scenarioRef(sc *scenarios.Scenario, dir string) (string, error) {
	if name, ok := strings.CutPrefix(sc.File, "builtin:"); ok {
		return name, nil
	}
	if abs, err := filepath.Abs(sc.File); err == nil {
		if cur, err := os.ReadFile(abs); err == nil && bytes.Equal(cur, sc.Source) {
			return abs, nil
		}
	}
	if len(sc.Source) == 0 {
		return "", fmt.Errorf("scenario %s has no file or source to give fakeclaude", sc.Name)
	}
	path := filepath.Join(dir, "scenario.txtar")
	return path, os.WriteFile(path, sc.Source, 0o644)
}

// release frees what Start set up for a process that never started.
func (p *Process) release() {
	for i := len(p.cleanup) - 1; i >= 0; i-- {
		p.cleanup[i]()
	}
	p.cleanup = nil
}

// Real runs the real claude CLI against the fake model API.
type Real struct {
	// Claude is the claude executable.
	Claude string
}

func (Real) Name() string        { return "real" }
func (Real) CancelsItself() bool { return false }

// Start serves the scenario's model turns on a loopback port and starts the
// CLI against it, offline, with a throwaway HOME.
func (r Real) Start(ctx context.Context, sc *scenarios.Scenario, opts Options) (*Process, error) {
	dir, cleanup, err := workDir(opts)
	if err != nil {
		return nil, err
	}
	p := &Process{cleanup: []func(){cleanup}, configDir: filepath.Join(dir, ".claude")}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		cleanup()
		return nil, err
	}
	model := sc
	if fl, err := fakeclaude.ParseArgs(opts.Args); err == nil && (fl.Resume != "" || fl.Continue) {
		// The resumed CLI sends the whole conversation: the first turns
		// again, then the resumed ones.
		model = sc.Conversation()
	}
	srv := &http.Server{Handler: fakeapi.New(model, opts.Log), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	p.cleanup = append(p.cleanup, func() { srv.Close() })
	c := Command{Path: r.Claude, Args: opts.Args, Dir: dir, Env: RealEnv("http://"+ln.Addr().String(), dir)}
	if c.Args == nil {
		c.Args = SDKArgs
	}
	return launch(ctx, c, p)
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
