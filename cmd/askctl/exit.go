package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/askctl/askctl/bridgeapi"
	"github.com/askctl/askctl/claudecli/mcpclient"
	"github.com/askctl/askctl/fakeclaude"
	"github.com/askctl/askctl/harness"
)

// Exit statuses of askctl.
const (
	exitOK       = 0
	exitMismatch = 1 // replay, fidelity: a session differs from what it should be
	exitUsage    = 2 // bad flags or arguments, an unreadable or invalid scenario
	exitError    = 3 // something failed to run (an agent would not start, …)
	// exitInterrupted: SIGINT or SIGTERM stopped the command before it was
	// done (128 + SIGINT, as a shell reports it); what it printed covers
	// what had finished.
	exitInterrupted = 130
)

// Exit statuses of the commands that drive a bridge.
const (
	exitNothing    = 1 // pending --wait: nothing came within --timeout
	exitNotFound   = 4 // no such question or session
	exitResolved   = 5 // already answered, skipped, expired or withdrawn
	exitRejected   = 6 // the bridge refused the answer (unknown question, blank, wrong shape)
	exitBridgeDown = 7 // the bridge is unreachable, or the token is wrong
)

const bridgeExitHelp = `Exit status: 0 done, 1 nothing came in time (pending --wait), 2 usage,
3 another error, 4 no such question or session, 5 already answered, skipped,
expired or withdrawn (pending --wait --session: the session has ended, and
why), 6 answer rejected, 7 bridge unreachable or token refused,
130 interrupted (Ctrl-C, SIGTERM) before done; watch, which runs until
interrupted, exits 0 then.`

// exitWithMessage is an error with its own exit status and a message.
type exitWithMessage struct {
	code int
	msg  string
}

func (e exitWithMessage) Error() string { return e.msg }

// usageError is a mistake in how askctl was called.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// errMismatch: the run completed and found differences, already reported.
var errMismatch = errors.New("differences found")

// exitStatus is an error that carries its own exit status (askctl record
// exits with its command's status).
type exitStatus int

func (e exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(e)) }
func (e exitStatus) ExitCode() int { return int(e) }

// run is askctl's testable root: it never calls os.Exit, and it is the only
// place that maps errors to exit statuses.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	// askctl is also fakeclaude when asked (the fake agent re-executes askctl),
	// and a recording shim when installed as "claude".
	switch getenv(fakeclaude.EnvRunAs) {
	case fakeclaude.RoleFake:
		// askctl links the MCP SDK anyway: its fakeclaude needs no helper.
		return fakeclaude.CommandWith(mcpclient.Dialer{}, args[1:], getenv, stdin, stdout, stderr)
	case fakeclaude.RoleReal:
		return harness.RealShim(args[1:], getenv, stdin, stdout, stderr)
	}
	if filepath.Base(args[0]) == "claude" && getenv(envRecordCommand) != "" {
		args = append([]string{args[0], "record", "--"}, args[1:]...)
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	s := &stdio{getenv: getenv, in: stdin, out: stdout, err: stderr, current: "askctl", completing: slices.Contains(args, "--generate-shell-completion")}
	app := newApp(s)
	var err error
	if len(args) > 1 && !strings.HasPrefix(args[1], "-") && app.Command(args[1]) == nil && args[1] != "help" && args[1] != "completion" && !s.completing {
		// An unknown command followed by its flags would be read as the
		// root's flags ("flag provided but not defined"): name the command.
		err = unknownCommand(args[1], app)
	} else {
		err = app.Run(ctx, args)
	}
	if name, ok := noHelpTopic(err); ok {
		err = unknownCommand(name, app)
	}
	var ue usageError
	var es exitStatus
	var em exitWithMessage
	switch {
	case ctx.Err() != nil && err != nil:
		// Interrupted before it was done, whatever the command made of it
		// (a wait cut short is not a timeout; a replay cut short found no
		// difference). A command that runs until interrupted (serve,
		// model, mcp, watch) returns nil then, and exits 0.
		fmt.Fprintf(stderr, "askctl: interrupted\n")
		return exitInterrupted
	case err == nil:
		return exitOK
	case errors.Is(err, errMismatch):
		return exitMismatch
	case errors.As(err, &es):
		return int(es)
	case errors.As(err, &em):
		fmt.Fprintf(stderr, "askctl: %s\n", em.msg)
		return em.code
	case errors.Is(err, bridgeapi.ErrNotFound):
		fmt.Fprintf(stderr, "askctl: %v\n", err)
		return exitNotFound
	case errors.Is(err, bridgeapi.ErrResolved):
		fmt.Fprintf(stderr, "askctl: %v\n", err)
		return exitResolved
	case errors.Is(err, bridgeapi.ErrInvalid) && !errors.As(err, &ue):
		fmt.Fprintf(stderr, "askctl: %v\n", err)
		return exitRejected
	case errors.Is(err, bridgeapi.ErrUnreachable), errors.Is(err, bridgeapi.ErrUnauthorized):
		fmt.Fprintf(stderr, "askctl: %v\n", err)
		return exitBridgeDown
	case errors.As(err, &ue) || isFlagError(err):
		fmt.Fprintf(stderr, "askctl: %v\nRun '%s --help' for usage.\n", err, s.current)
		return exitUsage
	default:
		fmt.Fprintf(stderr, "askctl: %v\n", err)
		return exitError
	}
}

// noHelpTopic recognises urfave/cli's "No help topic for 'x'" (askctl help x).
func noHelpTopic(err error) (string, bool) {
	if err == nil {
		return "", false
	}
	rest, ok := strings.CutPrefix(err.Error(), "No help topic for '")
	if !ok {
		return "", false
	}
	name, _, _ := strings.Cut(rest, "'")
	return name, true
}
