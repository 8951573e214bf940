package main

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/askctl/askctl/bridge"
	"github.com/askctl/askctl/bridgeapi"
	"github.com/askctl/askctl/claudecli"
	"github.com/askctl/askctl/fakeclaude"
	"github.com/askctl/askctl/policy"
	"github.com/askctl/askctl/scenarios"
	"github.com/urfave/cli/v3"
)

// DefaultAddr is where askctl serve listens unless told otherwise.
const DefaultAddr = "127.0.0.1:7474"

type serveOptions struct {
	cli              string
	rel              release
	addr             string
	allowRemote      bool
	state            string
	db               string
	claude           string
	timeout          time.Duration
	timeoutInterrupt bool
	otherTools       string
	env              []string
	envFile          string
	origins          []string
	hosts            []string
	maxStarting      int
	policy           string
	io               *stdio
}

func newServeCmd(s *stdio, runF func(context.Context, *serveOptions) error) *cli.Command {
	o := &serveOptions{io: s}
	if runF == nil {
		runF = runServe
	}
	return &cli.Command{
		Name:  "serve",
		Usage: "run the reference bridge: sessions, pending questions, WebSocket and HTTP surfaces",
		Description: `Runs askctl's reference bridge. Each session spawns a claude CLI with the SDK
flags (--claude; by default the pinned CLI askctl claude install put in your
cache, else claude on PATH; "fakeclaude" runs askctl's own fakeclaude, whose
scenario each session names). An AskUserQuestion request becomes a pending
question with a short id (q_…) that every surface shows and any one answers:

  HTTP JSON API   /api/sessions, /api/questions, /api/questions/ID/answer|skip
  SSE             /api/events (Last-Event-ID resumes)
  WebSocket       /ws?session_id=ID (ask_user_question, ask_user_response, …)
  a page          / for a person in a browser (askctl login prints a link
                  that logs a browser in once; serve prints one at start)

askctl session, answer, skip, pending and watch talk to it. Sessions,
questions and events live in a SQLite file: a bridge killed with a question
pending lists it again after a restart, and an answer then resumes the
session (--resume) with the question and the answer. A question nobody
answers within --timeout gets a deny that says it timed out.

Every request needs the token in <state>/token (created 0600); askctl's
commands read it, and where the bridge listens, from the state directory
(--state, ASKCTL_STATE_DIR, else $XDG_STATE_HOME/askctl or
~/.local/state/askctl). It listens on loopback; another address needs
--allow-remote. The protocols (HTTP routes, events, WebSocket and control
messages) are documented in the bridgeapi package
(go doc github.com/askctl/askctl/bridgeapi).

Examples:
  askctl serve --claude fakeclaude &
  askctl session start --scenario ask-multi --prompt "Ask me how to format."
  askctl pending --wait --json
  askctl answer --id q_xxxxxxxx --set 1=Summary --set 2=Intro --set 2=Outro`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "addr", Value: DefaultAddr, Usage: "address to listen on", Destination: &o.addr, Sources: cli.EnvVars("ASKCTL_ADDR")},
			&cli.BoolFlag{Name: "allow-remote", Usage: "allow listening on an address other than loopback", Destination: &o.allowRemote},
			&cli.StringFlag{Name: "state", Usage: "state directory (token, database, endpoint)", Destination: &o.state, Sources: cli.EnvVars(bridgeapi.EnvStateDir)},
			&cli.StringFlag{Name: "db", Usage: "SQLite database (default <state>/bridge.db)", Destination: &o.db},
			&cli.StringFlag{Name: "claude", Usage: `the CLI sessions spawn; "fakeclaude" for askctl's own`, Destination: &o.claude, Sources: cli.EnvVars(claudecli.EnvClaude)},
			&cli.DurationFlag{Name: "timeout", Value: bridge.DefaultTimeout, Usage: "how long a question waits for an answer", Destination: &o.timeout},
			&cli.BoolFlag{Name: "timeout-interrupt", Usage: "a timed-out question's deny also aborts the agent's turn", Destination: &o.timeoutInterrupt},
			&cli.StringFlag{Name: "other-tools", Value: "allow", Usage: "policy for can_use_tool of other tools: allow or deny", Destination: &o.otherTools},
			&cli.StringSliceFlag{Name: "env", Usage: "KEY=VALUE added to every agent's environment (repeatable)", Destination: &o.env},
			&cli.StringFlag{Name: "env-file", Usage: "a `FILE` of KEY=VALUE lines added to every agent's environment, such as askctl model prints", Destination: &o.envFile},
			&cli.StringSliceFlag{Name: "origin", Usage: "extra host whose pages may open the WebSocket (repeatable)", Destination: &o.origins},
			&cli.IntFlag{Name: "max-starting", HideDefault: true, Usage: "agents starting at once (until their system/init); more session starts wait their turn, so running sessions keep answering fast under a burst (default: the number of CPUs less one, at least 1)", Destination: &o.maxStarting},
			&cli.StringFlag{Name: "policy", Usage: "answer or skip questions by the rules of this `FILE` (askctl policy check FILE; askctl help policy)", Destination: &o.policy},
			cliFlag(&o.cli),
			&cli.StringSliceFlag{Name: "host", Usage: "a name the bridge answers to besides loopback ones, as requests give it in Host (repeatable); --allow-remote answers every name", Destination: &o.hosts},
		},
		Before: func(ctx context.Context, cmd *cli.Command) (context.Context, error) {
			if cmd.Args().Len() > 0 {
				return ctx, usagef("serve takes no arguments, got %q", cmd.Args().First())
			}
			var err error
			if o.rel, err = resolveRelease(o.cli); err != nil {
				return ctx, err
			}
			return ctx, o.validate()
		},
		Action: func(ctx context.Context, cmd *cli.Command) error { return runF(ctx, o) },
	}
}

func (o *serveOptions) validate() error {
	host, _, err := net.SplitHostPort(o.addr)
	if err != nil {
		return usagef("--addr: %v", err)
	}
	if !o.allowRemote && !bridge.IsLoopback(host) {
		return usagef("--addr %s is not a loopback address: the bridge holds people's answers; pass --allow-remote to listen there", o.addr)
	}
	if o.maxStarting < 0 {
		return usagef("--max-starting %d: want a positive number (0: the number of CPUs less one, at least 1)", o.maxStarting)
	}
	if o.timeout <= 0 {
		return usagef("--timeout: want a positive duration, got %v", o.timeout)
	}
	if o.otherTools != "allow" && o.otherTools != "deny" {
		return usagef("--other-tools: want allow or deny, got %q", o.otherTools)
	}
	if o.envFile != "" {
		data, err := os.ReadFile(o.envFile)
		if err != nil {
			return usagef("--env-file: %v", err)
		}
		for i, line := range strings.Split(string(data), "\n") {
			line = strings.TrimSpace(line)
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			if k, _, ok := strings.Cut(line, "="); !ok || k == "" {
				return usagef("--env-file %s:%d: %q: want KEY=VALUE", o.envFile, i+1, line)
			}
			o.env = append(o.env, line)
		}
	}
	for _, kv := range o.env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return usagef("--env %q: want KEY=VALUE", kv)
		}
	}
	return nil
}

// agentCLI resolves --claude: a path, "fakeclaude" (on PATH, else the
// fakeclaude next to askctl, else askctl itself as fakeclaude, which starts
// slower), or the real CLI askctl finds.
func agentCLI(ctx context.Context, claude string, warn func(string, ...any)) (string, []string, error) {
	if claude == "fakeclaude" {
		if p, err := exec.LookPath("fakeclaude"); err == nil {
			return p, nil, nil
		}
		self, err := os.Executable()
		if err != nil {
			return "", nil, err
		}
		if p, ok := fakeclaude.Beside(self); ok {
			return p, nil, nil
		}
		return self, fakeclaude.Env{RunAs: fakeclaude.RoleFake}.Environ(), nil
	}
	var b strings.Builder
	p, err := claudecli.Find(ctx, claude, &b)
	if b.Len() > 0 {
		warn("%s", strings.TrimSpace(b.String()))
	}
	return p, nil, err
}

// scenarioStore is how a session's scenario reaches its agent, as
// fakeclaude's: a built-in by name, or a client's own scenario, sent as its
// content and kept in the state directory under a name of the bridge's
// making. The bridge opens no path a client names.
type scenarioStore struct {
	dir  string // where sent scenarios are kept
	fake bool   // the CLI is fakeclaude: a session needs a scenario
}

// sentName is the name a sent scenario is kept under: its hash.
var sentName = regexp.MustCompile(`^sent-[0-9a-f]{16}\.txtar$`)

func (s scenarioStore) env(name, text string) ([]string, string, error) {
	switch {
	case text != "":
		if _, err := scenarios.Parse("scenario_text", []byte(text)); err != nil {
			return nil, "", err
		}
		sum := sha256.Sum256([]byte(text))
		ref := fmt.Sprintf("sent-%x.txtar", sum[:8])
		path := filepath.Join(s.dir, ref)
		if _, err := os.Stat(path); err != nil {
			// Written whole, then named: a session with the same text
			// never reads a half-written file.
			if err := os.MkdirAll(s.dir, 0o700); err != nil {
				return nil, "", err
			}
			tmp, err := os.CreateTemp(s.dir, ".sent-*")
			if err != nil {
				return nil, "", err
			}
			_, werr := tmp.WriteString(text)
			if cerr := tmp.Close(); werr == nil {
				werr = cerr
			}
			if werr == nil {
				werr = os.Rename(tmp.Name(), path)
			}
			if werr != nil {
				os.Remove(tmp.Name())
				return nil, "", werr
			}
		}
		return fakeclaude.Env{Scenario: path}.Environ(), ref, nil
	case name == "" && s.fake:
		return nil, "", errors.New("this bridge's CLI is fakeclaude, which plays a scenario: name one (askctl session start --scenario NAME|FILE)")
	case name == "":
		return nil, "", nil
	case sentName.MatchString(name):
		path := filepath.Join(s.dir, name)
		if _, err := os.Stat(path); err != nil {
			return nil, "", fmt.Errorf("no scenario %s was sent to this bridge", name)
		}
		return fakeclaude.Env{Scenario: path}.Environ(), name, nil
	}
	if _, err := scenarios.Builtin(name); err != nil {
		return nil, "", fmt.Errorf("no built-in scenario %q (the built-ins: %s); a scenario of your own goes as its content (askctl session start --scenario FILE sends it)", name, strings.Join(scenarios.Names(), ", "))
	}
	return fakeclaude.Env{Scenario: name}.Environ(), name, nil
}

// crashHook is the bridge's Config.Crash: nil, but in the kill tests, where
// the test binary runs as askctl serve and ends itself at a named point.
var crashHook func(point string)

// EnvCrashAt names a point of bridge.CrashPoints where askctl serve ends
// itself (kill -9), the first time it gets there: the conformance suite's
// crash rows (a profile's capabilities.crash) check what a restarted
// bridge keeps of what it had promised. Never set in use.
const EnvCrashAt = "ASKCTL_CRASH_AT"

// killedAt is a Config.Crash that ends the process (kill -9, so nothing
// is flushed or closed) at point.
func killedAt(point string) func(string) {
	return func(p string) {
		if p == point {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // the signal is on its way
		}
	}
}

func runServe(ctx context.Context, o *serveOptions) error {
	logf := func(format string, args ...any) {
		fmt.Fprintf(o.io.err, "askctl serve: "+format+"\n", args...)
	}
	dir := o.state
	if dir == "" {
		var err error
		if dir, err = bridgeapi.StateDir(o.io.getenv); err != nil {
			return err
		}
	}
	token, err := bridgeapi.EnsureToken(dir)
	if err != nil {
		return fmt.Errorf("token: %w", err)
	}
	var pol *policy.Policy
	if o.policy != "" {
		if pol, err = policy.Load(o.policy); err != nil {
			return exitWithMessage{exitUsage, "--policy: " + err.Error()}
		}
	}
	crash := crashHook
	if at := o.io.getenv(EnvCrashAt); at != "" && crash == nil {
		if !slices.Contains(bridge.CrashPoints, at) {
			return exitWithMessage{exitUsage, fmt.Sprintf("%s=%s: no such crash point (the points: %s)", EnvCrashAt, at, strings.Join(bridge.CrashPoints, ", "))}
		}
		logf("%s=%s: this bridge ends itself (kill -9) when it gets there", EnvCrashAt, at)
		crash = killedAt(at)
	}
	claude, env, err := agentCLI(ctx, o.claude, logf)
	if err != nil {
		return err
	}
	db := o.db
	if db == "" {
		db = filepath.Join(dir, "bridge.db")
	}
	// Listen first: a bridge that cannot listen must not touch the
	// database another bridge may be serving.
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return err
	}
	defer ln.Close()
	b, err := bridge.New(bridge.Config{DB: db, Claude: claude, Env: append(append(env, fakeclaude.Env{CLIVersion: o.rel.play}.Environ()...), o.env...), SessionEnv: scenarioStore{dir: filepath.Join(dir, "scenarios"), fake: o.claude == "fakeclaude"}.env, Timeout: o.timeout,
		TimeoutInterrupt: o.timeoutInterrupt, OtherTools: o.otherTools, MaxStarting: o.maxStarting, Policy: pol, Logf: logf, Crash: crash})
	if err != nil {
		return err
	}
	defer b.Close()
	url := "http://" + ln.Addr().String()
	if err := bridgeapi.WriteEndpoint(dir, bridgeapi.Endpoint{URL: url, PID: os.Getpid()}); err != nil {
		ln.Close()
		return err
	}
	defer bridgeapi.RemoveEndpoint(dir, os.Getpid())
	bs := &bridge.Server{B: b, Token: token, OriginPatterns: o.origins, Hosts: o.hosts, AnyHost: o.allowRemote}
	srv, ln := bs.HTTP(ln)
	logf("listening on %s (claude: %s; token: %s; database: %s)", url, claude, filepath.Join(dir, "token"), db)
	if pol != nil {
		logf("answering by the policy %s (%d rules)", o.policy, len(pol.Rules))
	}
	code, _ := bs.NewLogin()
	logf("the page: open %s/login?code=%s (works once, within %v; askctl login prints another)", url, code, bridge.LoginTTL)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			return err
		}
	case <-ctx.Done():
		logf("stopping: %v", context.Cause(ctx))
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}
	return nil
}
