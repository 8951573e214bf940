package main

import (
	"context"
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
		Commands: []*cli.Command{
			newReplayCmd(getenv),
			newRecordCmd(getenv),
			newModelCmd(),
			newScenariosCmd(),
			newFidelityCmd(),
		},
	}
}

// isFlagError recognises urfave/cli's own complaints about arguments.
func isFlagError(err error) bool {
	s := err.Error()
	return strings.HasPrefix(s, "flag provided but not defined") || strings.Contains(s, "invalid value") ||
		strings.HasPrefix(s, "No help topic") || strings.Contains(s, "Required flag")
}
