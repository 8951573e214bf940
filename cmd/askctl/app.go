package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v3"
)

// newApp builds the command tree. All output goes through the writers given.
func newApp(getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) *cli.Command {
	return &cli.Command{
		Name:  "askctl",
		Usage: "test and script Claude Code's ask-user protocol, with no model and no person",
		Description: `askctl plays Claude Code sessions that ask the user questions (AskUserQuestion
over the SDK control protocol) from scenarios: hand-written or recorded, played
by fakeclaude or by the real claude CLI against a scripted model API.

Start with:
  askctl replay                 replay every built-in scenario against fakeclaude
  askctl replay --agent real    … against the real claude CLI (offline, free)
  askctl scenarios              list the built-in scenarios`,
		Suggest:         true,
		HideHelpCommand: true,
		Reader:          stdin,
		Writer:          stdout,
		ErrWriter:       stderr,
		// Errors are mapped to exit statuses in run, never by os.Exit here.
		ExitErrHandler: func(context.Context, *cli.Command, error) {},
		OnUsageError: func(_ context.Context, _ *cli.Command, err error, _ bool) error {
			return usageError{err}
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.Args().Len() == 0 {
				return cli.ShowRootCommandHelp(cmd)
			}
			name := cmd.Args().First()
			msg := fmt.Sprintf("unknown command %q", name)
			if near := nearest(name, cmd.Commands); near != "" {
				msg += fmt.Sprintf(": did you mean %q?", near)
			}
			return usagef("%s (askctl --help lists the commands)", msg)
		},
		Commands: []*cli.Command{
			newReplayCmd(getenv),
			newRecordCmd(getenv),
			newModelCmd(),
			newScenariosCmd(),
			newFidelityCmd(),
		},
	}
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
