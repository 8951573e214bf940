package fakeclaude

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/askctl/askctl/internal/agentlink"

	"github.com/askctl/askctl/claudecli"
	"github.com/askctl/askctl/protocol"
	"github.com/askctl/askctl/scenarios"
	"github.com/askctl/askctl/transcript"
)

// Help is fakeclaude's --help text.
const Help = `fakeclaude — a drop-in claude executable that plays a scenario

Usage:
  fakeclaude [claude flags…] [--scenario NAME|FILE] [--transcript FILE]

fakeclaude speaks Claude Code's SDK transport (stream-json over stdin/stdout)
exactly as the real CLI ` + protocol.CLIVersion + ` does, but plays a scripted scenario
instead of calling a model. Point a bridge at it where it would spawn claude
(SDK option pathToClaudeCodeExecutable / cli_path, or a "claude" on PATH).
It answers initialize, sends system/init, asks each scripted question as a
can_use_tool control_request, blocks until the answer (or a deadline), writes
the tool_result the real CLI would, checks the answer against the scenario, and
ends each turn with a result. It accepts every flag of claude's --help and
the ones the official SDKs pass, and notes unknown ones in the transcript.
As the real CLI: with no --model it reports ` + "{{model}}" + `; it keeps the session
file ($CLAUDE_CONFIG_DIR, default ~/.claude, /projects/<cwd>/<session id>.jsonl:
the conversation's user and assistant rows with the real keys);
--resume ID keeps ID as the session id, appends to its file and plays the
scenario's resume.jsonl (or its steps again), and is refused when there is
no such session; --continue resumes the directory's latest session (a new
one when it has none);
--no-session-persistence writes no file; --replay-user-messages echoes each
prompt after system/init and each control_response it receives.

Print mode (claude -p "prompt", or the prompt on stdin) plays a route "mcp"
scenario's one turn with --output-format text, json or stream-json, as the
real CLI does; AskUserQuestion is not offered there. --mcp-config (a file or
inline JSON; stdio, http and sse servers) is read in either mode: fakeclaude
connects to each server before system/init with the official Go MCP SDK
(in its helper program fakeclaude-mcp, next to fakeclaude or on PATH, started
only when there are servers), lists them in mcp_servers, and plays each mcp step as a tools/call, writing
the tool_result the CLI writes for what came back. A tool not in
--allowedTools is denied as the CLI denies it; a server that fails to start
within MCP_TIMEOUT is "failed" in system/init and on stderr.

Scenarios (built in): ` + "{{builtins}}" + `
  A scenario file is a txtar archive; see the scenarios package docs.

Environment:
  FAKECLAUDE_SCENARIO    built-in name or scenario file (or --scenario); with
                         none, the harness at FAKECLAUDE_EVENTS assigns one
  FAKECLAUDE_TRANSCRIPT  write every message both ways, with timestamps, notes,
                         failures and the exit to this JSON Lines file (or
                         --transcript); "{pid}" in the name becomes the pid.
                         The file is appended to, so sessions can share one.
  FAKECLAUDE_EVENTS      also stream those records live to a harness:
                         unix:/path/to.sock or tcp:127.0.0.1:PORT
  FAKECLAUDE_TIMEOUT     deadline for each wait for the SDK side (prompt,
                         each answer), e.g. 30s; default 5m
  FAKECLAUDE_LINGER      after the last turn, wait this long for stdin to close
                         (the real CLI waits for EOF); default: the timeout
  CLAUDE_CONFIG_DIR      where session files go (default ~/.claude), as the CLI
  FAKECLAUDE_NO_SESSION_FILE=1  write no session file
  FAKECLAUDE_CLI_VERSION=V     play claude release V (default: the newest learned; a recorded
                               scenario plays its own); askctl claude releases lists them
  MCP_TIMEOUT            an MCP server's start-up deadline in ms (default
                         30000, as the CLI); MCP_TOOL_TIMEOUT bounds tools/call
                         (so does FAKECLAUDE_TIMEOUT)

Exit status:
  0    the scenario played through and every answer was as expected
  1    the last turn ended with an error result (deny+interrupt, cancel), as
       the real CLI exits; or a scenario's exit_after with exit_code 1; or,
       as the CLI, --resume of no session (an error result on stdout), -p
       with no prompt
  2    usage: bad flags, missing or invalid scenario
  3    protocol error by the SDK side: a malformed stdin line (fatal at once,
       as in the real CLI), a response for an unknown or already answered
       request, an allow after cancel, an invalid permission result or
       updatedInput
  4    an answer broke the scenario's expectations (an MCP result too, or an
       MCP tool that was missing or not allowed), or an unscripted prompt
  5    a wait passed its deadline (no prompt, no answer, stdout not read, an
       MCP tools/call that never returned)
  6    stdin closed, or the SDK side closed its end of stdout or died,
       before the scenario was played through
  143  terminated by a signal (SIGTERM, SIGINT, SIGHUP), even while blocked
       writing to a SDK side that does not read
Failures are printed on stderr, one line each, and written to the transcript.
`

// Main is fakeclaude's entry point: it reads os.Args and the environment, runs,
// and exits with the run's status. MCP servers are reached through the
// helper program fakeclaude-mcp.
func Main() { MainWith(nil) }

// MainWith is Main with mcp as the MCP client (nil: the helper program). A
// program that links the MCP SDK anyway (askctl, a test binary) passes
// mcpclient.Dialer{} and needs no helper.
func MainWith(mcp claudecli.MCPDialer) {
	// A session is one agent's I/O, waiting on pipes: one processor serves
	// it, and spares the threads and the idle spinning of more (about a
	// fifth of a session's CPU, BenchmarkSessionSubprocess). GOMAXPROCS in
	// the environment still decides.
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(1)
	}
	stdin, done := pollableStdin()
	code := CommandWith(mcp, os.Args[1:], os.Getenv, stdin, os.Stdout, os.Stderr)
	done()
	os.Exit(code)
}

// Command runs fakeclaude with the given arguments and environment and returns
// the exit status.
func Command(args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	return CommandWith(nil, args, getenv, stdin, stdout, stderr)
}

// CommandWith is Command with mcp as the MCP client (nil: the helper
// program).
func CommandWith(mcp claudecli.MCPDialer, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	flags, err := ParseArgs(args)
	if err != nil {
		fmt.Fprintf(stderr, "fakeclaude: %v\n", err)
		return ExitUsage
	}
	if flags.Help {
		fmt.Fprint(stdout, strings.NewReplacer("{{builtins}}", strings.Join(scenarios.Names(), ", "), "{{model}}", DefaultModel).Replace(Help))
		return ExitOK
	}
	if flags.Version {
		rel, err := chooseRelease(getenv, nil)
		if err != nil {
			fmt.Fprintf(stderr, "fakeclaude: %s: %v\n", claudecli.EnvCLIVersion, err)
			return ExitUsage
		}
		fmt.Fprintf(stdout, "%s (Claude Code)\n", rel.Version)
		return ExitOK
	}
	if !flags.Session() {
		// claude doctor, mcp list, update …: the CLI's own commands start
		// no session, so fakeclaude plays nothing (and asks no harness).
		fmt.Fprintf(stderr, "fakeclaude: claude %s starts no session; fakeclaude does nothing for it\n", flags.Prompt)
		return ExitOK
	}
	name := flags.Scenario
	if name == "" {
		name = getenv(EnvScenario)
	}
	var es *eventSink
	if addr := getenv(EnvEvents); addr != "" {
		var err error
		if es, err = dialEvents(addr); err != nil {
			fmt.Fprintf(stderr, "fakeclaude: %s: %v\n", EnvEvents, err)
			return ExitUsage
		}
		defer es.Close()
	}
	opts := Options{Flags: flags, Stderr: stderr, Getenv: getenv, MCP: mcp}
	if name == "" && es != nil {
		// No scenario: the harness behind FAKECLAUDE_EVENTS assigns one.
		cwd := claudecli.RealCwd()
		if flags.Continue && flags.Resume == "" {
			// The harness tells a resumed session from a new one by its id.
			home, _ := os.UserHomeDir()
			flags.Resume = claudecli.LatestSession(claudecli.ConfigDir(getenv, home), cwd)
			opts.Flags = flags
		}
		a, err := agentlink.Ask(es.conn, agentlink.Hello{PID: os.Getpid(), Args: args, Cwd: cwd, Resume: flags.Resume}, 30*time.Second)
		if err != nil {
			fmt.Fprintf(stderr, "fakeclaude: %s: %v\n", EnvEvents, err)
			return ExitUsage
		}
		if opts.Scenario, err = scenarios.Parse(a.Name, []byte(a.Scenario)); err != nil {
			fmt.Fprintf(stderr, "fakeclaude: assigned scenario: %v\n", err)
			return ExitUsage
		}
		opts.SessionID = a.SessionID
		if a.Timeout != "" {
			if d, err := time.ParseDuration(a.Timeout); err == nil && d > 0 {
				opts.Timeout = d
			}
		}
	} else {
		sc, err := scenarios.Load(name)
		if err != nil {
			fmt.Fprintf(stderr, "fakeclaude: %v\n", err)
			return ExitUsage
		}
		opts.Scenario = sc
	}
	rel, err := chooseRelease(getenv, opts.Scenario)
	if err != nil {
		fmt.Fprintf(stderr, "fakeclaude: %v\n", err)
		return ExitUsage
	}
	opts.Release = rel
	for env, dst := range map[string]*time.Duration{EnvTimeout: &opts.Timeout, EnvLinger: &opts.Linger} {
		if v := getenv(env); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				fmt.Fprintf(stderr, "fakeclaude: %s=%q: want a positive duration such as 30s\n", env, v)
				return ExitUsage
			}
			*dst = d
		}
	}
	var sinks transcript.Multi
	path := flags.Transcript
	if path == "" {
		path = getenv(EnvTranscript)
	}
	if path != "" {
		path = strings.ReplaceAll(path, "{pid}", fmt.Sprint(os.Getpid()))
		tf, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			fmt.Fprintf(stderr, "fakeclaude: transcript: %v\n", err)
			return ExitUsage
		}
		defer tf.Close()
		sinks = append(sinks, transcript.NewWriter(tf))
	}
	if es != nil {
		sinks = append(sinks, es)
	}
	if len(sinks) > 0 {
		opts.Sink = sinks
	}
	// A write to a closed stdout is an error to report (exit 6), not a
	// SIGPIPE death (141).
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer stop()
	if f, ok := stdout.(*os.File); ok {
		opts.OutputGone = watchReaderGone(f)
	}
	return Run(ctx, opts, stdin, stdout).Code
}

// eventSink streams records to a harness over a socket. A harness that stops
// reading cannot stall the fake: each write has a deadline, and after a failed
// write the sink goes quiet (the transcript file still has everything).
type eventSink struct {
	mu   sync.Mutex
	conn agentlink.Conn
	w    *transcript.Writer
	dead bool
}

func dialEvents(addr string) (*eventSink, error) {
	conn, err := agentlink.Dial(addr)
	if err != nil {
		return nil, err
	}
	return &eventSink{conn: conn, w: transcript.NewWriter(conn)}, nil
}

func (s *eventSink) Write(r transcript.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dead {
		return nil
	}
	_ = s.conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if err := s.w.Write(r); err != nil {
		s.dead = true
		return err
	}
	return nil
}

func (s *eventSink) Close() error { return s.conn.Close() }
