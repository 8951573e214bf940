package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"runtime/debug"
	"strings"

	"github.com/askctl/askctl/claudecli"
	"github.com/urfave/cli/v3"
)

// stdio is what every command reads and writes: nothing reaches os.Stdout or
// the process environment except through it.
type stdio struct {
	getenv func(string) string
	in     io.Reader
	out    io.Writer
	err    io.Writer
	// current is the command being run, for the hint after a usage error.
	current string
	// completing: the shell completion script asks what may come next
	// (--generate-shell-completion); no command checks its arguments.
	completing bool
}

// Every command has the same shape, one file each: an options struct filled
// from its flags, validate() called before it runs, and runXxx(ctx, opts).
// newXxxCmd takes the run function so tests can check flag parsing apart from
// behaviour; nil means the real one.

// newApp builds the command tree.
func newApp(s *stdio) *cli.Command {
	app := &cli.Command{
		Name:    "askctl",
		Usage:   "test and script Claude Code's ask-user protocol, with no model and no person",
		Version: version(),
		Description: `askctl plays Claude Code sessions that ask the user questions (AskUserQuestion
over the SDK control protocol) from scenarios: hand-written or recorded, played
by fakeclaude or by the real claude CLI against a scripted model API.

Start with:
  askctl replay                 replay every built-in scenario against fakeclaude
  askctl serve                  run the reference bridge; then session, pending,
                                answer, skip and watch drive it
  askctl claude install         install the pinned real claude CLI (once)
  askctl replay --agent real    … against the real claude CLI (offline, free)
  askctl scenarios              list the built-in scenarios
  askctl help COMMAND           what a command does, its flags and exit statuses
  askctl completion bash        the shell completion script (also zsh, fish, pwsh)`,
		Suggest: true,
		// askctl completion bash|zsh|fish|pwsh prints the script to source.
		EnableShellCompletion: true,
		ConfigureShellCompletionCommand: func(c *cli.Command) {
			c.Hidden = false
			c.Usage = "print the shell completion script: source <(askctl completion bash), or zsh, fish, pwsh"
		},
		Reader:    s.in,
		Writer:    s.out,
		ErrWriter: s.err,
		// Errors are mapped to exit statuses in run, never by os.Exit here.
		ExitErrHandler: func(context.Context, *cli.Command, error) {},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.Args().Len() == 0 {
				return cli.ShowRootCommandHelp(cmd)
			}
			return unknownCommand(cmd.Args().First(), cmd)
		},
		Commands: []*cli.Command{
			newReplayCmd(s, nil),
			newRecordCmd(s, nil),
			newFidelityCmd(s, nil),
			newConformanceCmd(s, nil),
			newScenariosCmd(s, nil),
			newModelCmd(s, nil),
			newClaudeCmd(s, nil, nil),
			newServeCmd(s, nil),
			newSessionCmd(s, nil, nil, nil),
			newAnswerCmd(s, nil),
			newSkipCmd(s, nil),
			newPendingCmd(s, nil),
			newWatchCmd(s, nil),
			newMCPCmd(s, nil),
			newLoginCmd(s, nil),
			newPolicyCmd(s, nil),
			newBenchCmd(s, nil),
			newInitCmd(s, nil),
		},
	}
	shapeCommands(app, s)
	return app
}

// shapeCommands gives every command the same usage-error handling: a flag
// mistake is one line and a hint (printed by run), never the whole help.
func shapeCommands(cmd *cli.Command, s *stdio) {
	// Each command parses its own slice flags: a label or value may hold a
	// comma (--set "2=Yes, please" stays one).
	cmd.DisableSliceFlagSeparator = true
	cmd.OnUsageError = func(_ context.Context, c *cli.Command, err error, _ bool) error {
		s.current = c.FullName()
		return usageError{unknownFlag(c, err)}
	}
	before := cmd.Before
	cmd.Before = func(ctx context.Context, c *cli.Command) (context.Context, error) {
		s.current = c.FullName()
		if before != nil && !s.completing {
			return before(ctx, c)
		}
		return ctx, nil
	}
	for _, sub := range cmd.Commands {
		shapeCommands(sub, s)
	}
}

// version names askctl's build and the claude release it plays.
func version() string {
	v := "(devel)"
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			v = bi.Main.Version
		}
		for _, st := range bi.Settings {
			if st.Key == "vcs.revision" && len(st.Value) >= 12 {
				v += " " + st.Value[:12]
			}
		}
	}
	return v + "; fakeclaude plays claude " + claudecli.Newest() + " by default (askctl claude releases)"
}

// unknownCommand is the usage error for a command name parent does not
// have, with the nearest one it has.
func unknownCommand(name string, parent *cli.Command) error {
	msg := fmt.Sprintf("unknown command %q", name)
	if parent.Name != "askctl" {
		msg = fmt.Sprintf("unknown command %q for %s", name, parent.FullName())
	}
	if near := nearest(name, parent.Commands); near != "" {
		msg += fmt.Sprintf(": did you mean %q?", near)
	}
	return usagef("%s", msg)
}

// invalidValue is the flag package's error for a value it cannot parse.
var invalidValue = regexp.MustCompile(`^invalid value ("(?:[^"\\]|\\.)*") for flag -+([\w-]+): (.*)$`)

// unknownFlag rewrites the flag package's "flag provided but not defined:
// -wiat" as "unknown flag --wiat: did you mean --wait?", naming the flag
// as it is written and the nearest c has, and its "invalid value "x" for
// flag -sessions: strconv.ParseInt: …" as "invalid value "x" for
// --sessions: want a whole number". Other errors stay as they are.
func unknownFlag(c *cli.Command, err error) error {
	dashes := func(n string) string {
		if len(n) == 1 {
			return "-" + n
		}
		return "--" + n
	}
	if m := invalidValue.FindStringSubmatch(err.Error()); m != nil {
		// `invalid value "x" for flag -sessions: strconv.ParseInt: …`:
		// the flag as it is written, and what it wants.
		why := m[3]
		switch {
		case strings.HasPrefix(why, "strconv.ParseInt"), strings.HasPrefix(why, "strconv.ParseUint"):
			why = "want a whole number"
		case strings.HasPrefix(why, "strconv.ParseFloat"):
			why = "want a number"
		case strings.HasPrefix(why, "strconv.ParseBool"):
			why = "want true or false"
		case strings.HasPrefix(why, "time: "):
			why = "want a duration such as 30s, 2m or 1h30m"
		}
		return fmt.Errorf("invalid value %s for %s: %s", m[1], dashes(m[2]), why)
	}
	name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: -")
	if !ok {
		return err
	}
	name = strings.TrimPrefix(name, "-")
	msg := "unknown flag " + dashes(name)
	if name == "id" && c.ArgsUsage == "ID" {
		// answer and skip take --id; these take the id as their argument.
		return fmt.Errorf("%s: %s takes the id as its argument: %s ID", msg, c.FullName(), c.FullName())
	}
	best, bestD := "", 3
	for _, f := range c.Flags {
		for _, n := range f.Names() {
			// Close, and not a rewrite of most of what was typed.
			if d := editDistance(name, n); d < bestD && 2*d <= len(name) && len(n) > 1 {
				best, bestD = n, d
			}
		}
	}
	if best != "" {
		msg += ": did you mean " + dashes(best) + "?"
	}
	return errors.New(msg)
}

// nearest is the command whose name is closest to name, if it is close.
func nearest(name string, cmds []*cli.Command) string {
	best, bestD := "", 3
	for _, c := range cmds {
		if d := editDistance(name, c.Name); d < bestD {
			best, bestD = c.Name, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// isFlagError recognises urfave/cli's own complaints about arguments.
func isFlagError(err error) bool {
	s := err.Error()
	return strings.HasPrefix(s, "flag provided but not defined") || strings.Contains(s, "invalid value") ||
		strings.HasPrefix(s, "No help topic") || strings.Contains(s, "Required flag")
}

func init() {
	// A flag that is a switch alone and takes a value after = (--keep,
	// --keep=on-failure) is shown so, not with a value after a space,
	// which it would not take.
	plain := cli.FlagStringer
	cli.FlagStringer = func(f cli.Flag) string {
		s := plain(f)
		if g, ok := f.(*cli.GenericFlag); ok && g.IsBoolFlag() {
			if names, usage, ok := strings.Cut(s, "\t"); ok && strings.Contains(names, " =") {
				s = strings.Replace(names, " =", "[=", 1) + "]\t" + usage
			}
		}
		return s
	}
}
