package harness

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/askctl/askctl/claudecli"
	"github.com/askctl/askctl/fakeclaude"
	"github.com/askctl/askctl/internal/events"
	"github.com/askctl/askctl/internal/proc"
	"github.com/askctl/askctl/profile"
	"github.com/askctl/askctl/surface"
	"github.com/askctl/askctl/transcript"
)

// Options configure how the harness runs a bridge.
type Options struct {
	// Work is the directory of this run: the bridge's state, logs, the
	// claude shim, agents' transcripts. Created if missing.
	Work string
	// Askctl is the askctl executable the claude shim runs as fakeclaude
	// (or, when a fakeclaude executable sits next to it, that one, which
	// starts faster); default this process's executable.
	Askctl string
	// RealClaude, when set, is the real claude CLI the bridge spawns
	// (through askctl's real-agent shim) instead of fakeclaude.
	RealClaude string
	// CLIVersion is the claude release fakeclaude plays (a learned one,
	// claudecli.Releases); empty: the newest.
	CLIVersion string
	// ClaimTimeout bounds the wait for the bridge to spawn the agent of a
	// session it was asked to start. Default 15s.
	ClaimTimeout time.Duration
	// AgentTimeout is each agent's deadline for every wait on the bridge
	// (fakeclaude's Env.Timeout). Default 30s.
	AgentTimeout time.Duration
	// Logf receives what the harness does, a line at a time; nil discards.
	Logf func(format string, args ...any)
	// Slow scales every wait the harness makes on the bridge by its own
	// defaults (readiness, an agent claimed, an agent's waits, a surface's
	// replies): 2 doubles them, for a busy machine. 0 means 1.
	Slow float64
	// SurfaceLog keeps an exec adapter's traffic and stderr in Work's
	// surface.log (the suite does, for askctl conformance --keep). Off, as
	// for a bench, nothing is written per line.
	SurfaceLog bool
}

// Bridge is a bridge under test: the process the profile starts (none for a
// profile without start), the claude shim it spawns, and the live events of
// its agents.
type Bridge struct {
	profile *profile.Profile // with every ${NAME} expanded
	vars    map[string]string
	port    int // ${PORT}, held for this bridge until Close

	opts Options
	hub  *events.Hub
	dir  *director

	mu      sync.Mutex
	cmd     *exec.Cmd
	all     []*exec.Cmd // every bridge process started, for Close
	exited  chan struct{}
	exitErr error
	logPath string
	crashAt string // the crash point the running bridge was started armed with
}

// Profile is the bridge's profile, with every ${NAME} expanded.
func (b *Bridge) Profile() *profile.Profile { return b.profile }

// Var is the value of the harness's variable name (WORK, STATE, PORT,
// CLAUDE, …: VarNames) for this bridge.
func (b *Bridge) Var(name string) string { return b.vars[name] }

// StartBridge sets up the work directory, the events hub and the claude
// shim, and starts the bridge of p (when p has start) and waits until it
// is ready.
func StartBridge(ctx context.Context, p *profile.Profile, opts Options) (*Bridge, error) {
	if opts.Work == "" {
		return nil, errors.New("harness: Options.Work is empty")
	}
	if opts.AgentTimeout <= 0 {
		opts.AgentTimeout = surface.Scale(30*time.Second, opts.Slow)
	}
	if opts.ClaimTimeout <= 0 {
		opts.ClaimTimeout = surface.Scale(15*time.Second, opts.Slow)
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	if opts.Askctl == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, err
		}
		opts.Askctl = exe
	}
	work, err := filepath.Abs(opts.Work)
	if err != nil {
		return nil, err
	}
	opts.Work = work
	state := filepath.Join(work, "state")
	shimDir := filepath.Join(work, "bin")
	for _, d := range []string{state, shimDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	hub, err := events.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	b := &Bridge{opts: opts, hub: hub, dir: newDirector(), logPath: filepath.Join(work, "bridge.log")}
	hub.SetDirector(b.dir.assign)
	shim := filepath.Join(shimDir, "claude")
	if err := writeShim(shim, opts, hub.Addr(), work); err != nil {
		hub.Close()
		return nil, err
	}
	// The port is free when picked, and another process may bind it before
	// the bridge does (a loopback port the kernel hands to the next asker):
	// a bridge that says so as it exits is started again on another, twice
	// at most.
	for attempt := 1; ; attempt++ {
		port, err := freePort()
		if err != nil {
			hub.Close()
			return nil, err
		}
		b.port = port
		b.vars = map[string]string{"WORK": work, "STATE": state, "PORT": strconv.Itoa(port), "CLAUDE": shim,
			"CLAUDE_DIR": shimDir, "ASKCTL": opts.Askctl, "PROFILE_DIR": p.Dir, "TIMEOUT": profile.TimeoutVar(p.Capabilities.Timeout.D())}
		b.profile = p.Expanded(b.vars)
		logged := logSize(b.logPath)
		err = b.start(ctx)
		if err == nil {
			return b, nil
		}
		if attempt < 3 && b.portTaken(logged) {
			opts.Logf("the bridge found port %d taken by another process; starting it again on another", port)
			releasePort(port)
			continue
		}
		b.Close()
		return nil, err
	}
}

// logSize is how much the bridge's log holds so far.
func logSize(path string) int64 {
	if fi, err := os.Stat(path); err == nil {
		return fi.Size()
	}
	return 0
}

// portTaken reports whether the bridge has exited saying, in what it wrote
// to its log after offset from, that its address was in use.
func (b *Bridge) portTaken(from int64) bool {
	b.mu.Lock()
	exited := b.exited
	b.mu.Unlock()
	if exited == nil {
		return false
	}
	select {
	case <-exited:
	default:
		return false
	}
	f, err := os.Open(b.logPath)
	if err != nil {
		return false
	}
	defer f.Close()
	buf, _ := io.ReadAll(io.NewSectionReader(f, from, 1<<20))
	said := strings.ToLower(string(buf))
	return strings.Contains(said, "address already in use") || strings.Contains(said, "eaddrinuse")
}

// writeShim writes the claude the bridge spawns: askctl as fakeclaude, with
// everything it needs in the shim itself, so a bridge that passes its
// agents no environment still reaches the harness.
func writeShim(path string, o Options, events, work string) error {
	var script string
	if o.RealClaude != "" {
		env := fakeclaude.Env{RunAs: fakeclaude.RoleReal, Events: events}.Environ()
		env = append(env, EnvRealClaude+"="+o.RealClaude, EnvAgentHomes+"="+filepath.Join(work, "agents"))
		script = "#!/bin/sh\n# claude for the bridge under test: the real CLI through askctl's real-agent shim, told what to play by the harness.\n" +
			exportWords(env) + "exec " + shellQuote(o.Askctl) + ` "$@"` + "\n"
	} else {
		// Session files go to the bridge's CLAUDE_CONFIG_DIR if it sets
		// one, else into the run's directory, never the user's ~/.claude.
		e := fakeclaude.Env{RunAs: fakeclaude.RoleFake, Events: events, Transcript: filepath.Join(work, "agents.jsonl"), CLIVersion: o.CLIVersion}
		exe := o.Askctl
		if fc, ok := fakeclaude.Beside(o.Askctl); ok {
			exe, e.RunAs = fc, ""
		}
		script = "#!/bin/sh\n# claude for the bridge under test: askctl's fakeclaude, told what to play by the harness.\n" +
			"d=" + shellQuote(filepath.Join(work, "claude-config")) + "\n" +
			": \"${" + claudecli.EnvConfigDir + ":=$d}\"; export " + claudecli.EnvConfigDir + "\n" +
			exportWords(e.Environ()) + "exec " + shellQuote(exe) + ` "$@"` + "\n"
	}
	return os.WriteFile(path, []byte(script), 0o755)
}

// exportWords is the sh line that exports each NAME=value of env: sh
// itself sets them, with no env program spawned for each session.
func exportWords(env []string) string {
	if len(env) == 0 {
		return ""
	}
	q := make([]string, len(env))
	for i, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		q[i] = k + "=" + shellQuote(v)
	}
	return "export " + strings.Join(q, " ") + "\n"
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// ports are the ports handed to bridges of this process that have not
// closed: the kernel may give a port just closed to the next listener
// that asks, and two bridges started at once (tests in parallel) must not
// both be told to listen on it, or one's ready check may pass on the
// other's server.
var ports = struct {
	sync.Mutex
	held map[int]bool
}{held: map[int]bool{}}

// freePort is a loopback port free now, and not handed to another bridge
// of this process that still runs.
func freePort() (int, error) {
	return freePortFrom(func() (int, error) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		defer ln.Close()
		return ln.Addr().(*net.TCPAddr).Port, nil
	})
}

// freePortFrom is freePort with the kernel's choice of a port as next
// gives it.
func freePortFrom(next func() (int, error)) (int, error) {
	for range 100 {
		port, err := next()
		if err != nil {
			return 0, err
		}
		ports.Lock()
		taken := ports.held[port]
		if !taken {
			ports.held[port] = true
		}
		ports.Unlock()
		if !taken {
			return port, nil
		}
	}
	return 0, errors.New("no free loopback port that no other bridge of this process holds")
}

// releasePort hands port back.
func releasePort(port int) {
	ports.Lock()
	delete(ports.held, port)
	ports.Unlock()
}

// start starts the bridge process and waits until it is ready.
func (b *Bridge) start(ctx context.Context) error {
	st := b.profile.Start
	if st == nil {
		return nil
	}
	cmd := exec.Command(st.Command, st.Args...)
	cmd.Dir = st.Dir
	if cmd.Dir == "" {
		cmd.Dir = b.opts.Work
	}
	env := os.Environ()
	if _, set := st.Env[claudecli.EnvConfigDir]; !set && os.Getenv(claudecli.EnvConfigDir) == "" && b.opts.RealClaude == "" {
		// Where the claude shim has fakeclaude keep its session files: the
		// bridge reads them there (a reply its agent took in before a
		// crash), as it would where it and its agents share one config.
		env = append(env, claudecli.EnvConfigDir+"="+filepath.Join(b.opts.Work, "claude-config"))
	}
	for k, v := range st.Env {
		env = append(env, k+"="+v)
	}
	b.mu.Lock()
	if b.crashAt != "" {
		env = append(env, b.profile.Capabilities.Crash.Env+"="+b.crashAt)
	}
	b.mu.Unlock()
	switch c := b.profile.Claude; {
	case c == "path":
		env = append(env, "PATH="+b.vars["CLAUDE_DIR"]+string(os.PathListSeparator)+os.Getenv("PATH"))
	case strings.HasPrefix(c, "env:"):
		env = append(env, strings.TrimPrefix(c, "env:")+"="+b.vars["CLAUDE"])
	}
	cmd.Env = env
	log, err := os.OpenFile(b.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(log, "--- %s: %s %s\n", time.Now().Format(time.RFC3339Nano), st.Command, strings.Join(st.Args, " "))
	cmd.Stdout, cmd.Stderr = log, log
	proc.SetGroup(cmd)
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("running %s (from %s): %w", st.Command, b.profile.File, err)
	}
	exited := make(chan struct{})
	b.mu.Lock()
	b.cmd, b.exited, b.exitErr = cmd, exited, nil
	b.all = append(b.all, cmd)
	b.mu.Unlock()
	go func() {
		err := cmd.Wait()
		log.Close()
		b.mu.Lock()
		b.exitErr = err
		b.mu.Unlock()
		close(exited)
	}()
	b.opts.Logf("bridge started: pid %d", cmd.Process.Pid)
	return b.waitReady(ctx, exited)
}

// waitReady polls the readiness check until it passes, the bridge exits,
// or the ready timeout (ready.timeout, else limits.start, else 15s) passes.
func (b *Bridge) waitReady(ctx context.Context, exited <-chan struct{}) error {
	r := b.profile.Ready
	if r.URL == "" && r.TCP == "" {
		return nil
	}
	timeout := cmp.Or(r.Timeout.D(), b.profile.Limits.Start.D(), surface.DefaultStartLimit)
	timeout = surface.Scale(timeout, b.opts.Slow)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := &http.Client{Timeout: time.Second}
	var last error
	for {
		if r.URL != "" {
			resp, err := client.Get(r.URL)
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode/100 == 2 {
					return nil
				}
				err = fmt.Errorf("%s: %s", r.URL, resp.Status)
			}
			last = err
		} else {
			c, err := net.DialTimeout("tcp", r.TCP, time.Second)
			if err == nil {
				c.Close()
				return nil
			}
			last = err
		}
		select {
		case <-exited:
			return fmt.Errorf("the bridge exited before it was ready (%v); its log:\n%s", b.ExitErr(), b.LogTail(20))
		case <-ctx.Done():
			return fmt.Errorf("the bridge was not ready within %v (%v); its log:\n%s", timeout, last, b.LogTail(20))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Exited is closed when the bridge process exits (never, without start).
func (b *Bridge) Exited() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.exited == nil {
		return nil
	}
	return b.exited
}

// ExitErr is how the bridge process ended, once Exited is closed.
func (b *Bridge) ExitErr() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.exitErr
}

// Stop ends the bridge: SIGTERM and up to 5s to exit, then SIGKILL; with
// kill, SIGKILL at once (a crash). Its agents are left to the bridge (a
// crashed bridge's agents see their stdin close).
func (b *Bridge) Stop(kill bool) error {
	b.mu.Lock()
	cmd, exited := b.cmd, b.exited
	b.mu.Unlock()
	if cmd == nil {
		return nil
	}
	select {
	case <-exited:
		return nil
	default:
	}
	if kill {
		_ = cmd.Process.Kill()
	} else {
		_ = proc.Terminate(cmd)
	}
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
	}
	return nil
}

// Restart stops the bridge (killing it when kill) and starts it again, on
// the same port and state directory.
func (b *Bridge) Restart(ctx context.Context, kill bool) error { return b.restart(ctx, kill, "") }

// RestartCrashingAt restarts the bridge as Restart does (killing it when
// kill), armed to end itself at point (one of the profile's
// capabilities.crash.points), the first time it gets there; Crashed waits
// for that.
func (b *Bridge) RestartCrashingAt(ctx context.Context, point string, kill bool) error {
	if err := b.undeclared(point); err != nil {
		return err
	}
	return b.restart(ctx, kill, point)
}

// undeclared is an *surface.Unsupported where the profile declares no
// crash point point, else nil.
func (b *Bridge) undeclared(point string) error {
	if b.profile.Capabilities.HasCrashPoint(point) {
		return nil
	}
	return &surface.Unsupported{Op: "restart -crash-at " + point, Message: "the profile declares no crash point " + point + " (capabilities.crash)"}
}

// restart stops the bridge and starts it armed at crash point point ("":
// disarmed).
func (b *Bridge) restart(ctx context.Context, kill bool, point string) error {
	if b.profile.Start == nil {
		return errors.New("the profile has no start: the harness cannot restart the bridge")
	}
	if err := b.Stop(kill); err != nil {
		return err
	}
	b.mu.Lock()
	b.crashAt = point
	b.mu.Unlock()
	return b.start(ctx)
}

// Crashed waits until the armed bridge has ended itself at its crash
// point (killed: SIGKILL, as it was armed to, or a wrapper such as sh -c
// or npm start exiting 137 for it), as long as ctx allows, and starts it
// again, disarmed, on the same port and state directory, within its own
// start limit. A bridge that runs on, or ends another way, is an error
// saying so, with its log.
func (b *Bridge) Crashed(ctx context.Context) error {
	b.mu.Lock()
	point, exited := b.crashAt, b.exited
	b.mu.Unlock()
	if point == "" {
		return errors.New("the bridge was not armed to crash (restart -crash-at POINT first)")
	}
	select {
	case <-exited:
	case <-ctx.Done():
		return fmt.Errorf("the bridge never got to crash point %s (it runs on): either it did not do the step the point follows, or it does not end itself there when %s=%s; its log:\n%s",
			point, b.profile.Capabilities.Crash.Env, point, b.LogTail(15))
	}
	b.mu.Lock()
	cmd, err := b.cmd, b.exitErr
	b.crashAt = ""
	b.mu.Unlock()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !(ws.Signaled() && ws.Signal() == syscall.SIGKILL || ws.Exited() && ws.ExitStatus() == 128+int(syscall.SIGKILL)) {
		return fmt.Errorf("the bridge armed to crash at %s ended another way (%v), not killed there; its log:\n%s", point, err, b.LogTail(15))
	}
	b.opts.Logf("bridge crashed at %s, as armed; starting it again", point)
	// Its own start limit (waitReady's), not what the wait for the crash
	// left of ctx.
	if err := b.start(context.WithoutCancel(ctx)); err != nil {
		return startError{err}
	}
	return nil
}

// startError is a bridge's failure to start again after its crash: the
// run's set-up, not the case's verdict.
type startError struct{ error }

func (e startError) Unwrap() error { return e.error }

// Subscribe hands the live records of every agent to sink.
func (b *Bridge) Subscribe(sink transcript.Sink) (cancel func()) { return b.hub.Subscribe("", sink) }

// Close stops the bridge, then every process it left behind in its process
// group, every agent that said hello to the harness, and the events hub.
func (b *Bridge) Close() error {
	_ = b.Stop(false)
	b.mu.Lock()
	all := b.all
	b.mu.Unlock()
	for _, cmd := range all {
		proc.KillGroup(cmd) // what each bridge left running (a killed one's agents)
	}
	b.dir.killAgents() // agents in process groups of their own
	b.mu.Lock()
	port := b.port
	b.port = 0 // a second Close hands back nothing another bridge now holds
	b.mu.Unlock()
	if port != 0 {
		releasePort(port)
	}
	return b.hub.Close()
}

// LogTail is the last n lines the bridge wrote on stdout and stderr.
func (b *Bridge) LogTail(n int) string {
	data, _ := os.ReadFile(b.logPath)
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "  " + strings.Join(lines, "\n  ")
}
