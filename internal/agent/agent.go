// Package agent starts the program that plays the agent's side of a scenario:
// fakeclaude, or the real claude CLI running against askctl's fake model API.
// Everything in askctl that runs an agent (replay, the fidelity check, and
// later the bridge and the conformance suite) goes through [Agent], so each
// can run with either.
package agent

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/askctl/askctl/claudecli"
	"github.com/askctl/askctl/fakeclaude"
	"github.com/askctl/askctl/fakeclaude/fakeapi"
	"github.com/askctl/askctl/internal/events"
	"github.com/askctl/askctl/internal/httpserve"
	"github.com/askctl/askctl/scenarios"
	"github.com/askctl/askctl/transcript"
)

// Agent starts agent processes for scenarios.
type Agent interface {
	// Name is "fake" or "real".
	Name() string
	// Start starts the agent for sc with the flags an SDK passes. The process
	// reads the SDK side on Stdin and writes the agent side on Stdout.
	Start(ctx context.Context, sc *scenarios.Scenario, opts Options) (*claudecli.Process, error)
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
	// transcript events (live, over fakeclaude.Env.Events), the fake model API's
	// requests and errors.
	Log transcript.Sink
	// Dir is the working directory and HOME for the agent; a temporary
	// directory when empty.
	Dir string
	// WaitTimeout is the agent's own deadline for each wait on the SDK side
	// (fakeclaude's Env.Timeout), so a silent SDK side gets the
	// agent's verdict ("no answer … within", exit 5) rather than a kill.
	// Zero leaves the agent's default. The real CLI has no such deadline.
	WaitTimeout time.Duration
}

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
	// turns into fakeclaude when fakeclaude.EnvRunAs=RunAs is in its
	// environment (askctl itself); empty means this process's executable.
	Exe   string
	RunAs string
	// CLIVersion is the release fakeclaude plays; empty: its default.
	CLIVersion string
}

func (Fake) Name() string        { return "fake" }
func (Fake) CancelsItself() bool { return true }

// Start runs fakeclaude with the scenario. The scenario file, or the built-in
// name, is fakeclaude.Env.Scenario; a scenario parsed from elsewhere is
// written to a temporary file first. With opts.Log, fakeclaude's records
// reach it live, over Env.Events.
func (f Fake) Start(ctx context.Context, sc *scenarios.Scenario, opts Options) (*claudecli.Process, error) {
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
	c := claudecli.Command{Path: exe, Args: opts.Args, Dir: dir, Env: os.Environ(), Version: "fakeclaude", ConfigDir: filepath.Join(dir, ".claude"), Cleanup: []func(){cleanup}, DieWithLauncher: true}
	if c.Args == nil {
		c.Args = claudecli.SDKArgs
	}
	ref, err := scenarioRef(sc, dir)
	if err != nil {
		cleanup()
		return nil, err
	}
	env := fakeclaude.Env{Scenario: ref, RunAs: f.RunAs, Timeout: opts.WaitTimeout, CLIVersion: f.CLIVersion}
	if opts.Log != nil {
		hub, err := events.Listen("unix", filepath.Join(dir, "events.sock"))
		if err != nil {
			cleanup()
			return nil, err
		}
		hub.Subscribe("", transcript.Func(func(r transcript.Record) error {
			if r.IsWire() {
				return nil // the SDK side sees those itself
			}
			return opts.Log.Write(r)
		}))
		c.Cleanup = append(c.Cleanup, func() { hub.Close() })
		env.Events = hub.Addr()
	}
	// The session file goes where the real CLI's goes (Real: HOME=dir).
	c.Env = append(append(c.Env, env.Environ()...), claudecli.EnvConfigDir+"="+c.ConfigDir)
	return claudecli.Launch(ctx, c)
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

// Real runs the real claude CLI against the fake model API.
type Real struct {
	// Claude is the claude executable.
	Claude string
}

func (Real) Name() string        { return "real" }
func (Real) CancelsItself() bool { return false }

// Start serves the scenario's model turns on a loopback port and starts the
// CLI against it, offline, with a throwaway HOME.
func (r Real) Start(ctx context.Context, sc *scenarios.Scenario, opts Options) (*claudecli.Process, error) {
	dir, cleanup, err := workDir(opts)
	if err != nil {
		return nil, err
	}
	model := sc
	if fl, err := claudecli.ParseArgs(opts.Args); err == nil && fl.Resumes() {
		// The resumed CLI sends the whole conversation: the first turns
		// again, then the resumed ones.
		model = sc.Conversation()
	}
	args := opts.Args
	if args == nil {
		args = claudecli.SDKArgs
	}
	c, err := RealCommand(r.Claude, args, dir, dir, model, opts.Log)
	if err != nil {
		cleanup()
		return nil, err
	}
	c.ConfigDir = filepath.Join(dir, ".claude")
	c.Cleanup = append([]func(){cleanup}, c.Cleanup...)
	return claudecli.Launch(ctx, c)
}

// RealCommand serves model's turns (the fake model API) on a loopback port
// and returns the command that runs the real CLI claude with args against
// it, offline, in dir, with home as its HOME, dying with its launcher. The
// command's Cleanup stops the server: Launch it, or run its Cleanup. log
// receives the API's records.
//
// Both ways askctl runs the real CLI start it so: an agent of askctl's own
// (Real), and the shim a bridge under test spawns as its claude.
func RealCommand(claude string, args []string, dir, home string, model *scenarios.Scenario, log transcript.Sink) (claudecli.Command, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return claudecli.Command{}, err
	}
	srv := httpserve.New(fakeapi.New(model, log))
	go srv.Serve(ln)
	env := claudecli.RealEnv("http://"+ln.Addr().String(), home)
	if d := model.MCPToolTimeout(); d > 0 {
		// The scenario's mcp steps end their calls then (cancel_after):
		// the CLI's own tool timeout does it.
		env = append(env, fmt.Sprintf("%s=%d", claudecli.EnvMCPToolTimeout, d.Milliseconds()))
	}
	return claudecli.Command{Path: claude, Args: args, Dir: dir, Env: env,
		Cleanup: []func(){func() { srv.Close() }}, DieWithLauncher: true}, nil
}
