package main

import (
	"context"
	"os"

	"github.com/askctl/askctl/internal/record"
	"github.com/urfave/cli/v3"
)

// Environment of the recording shim installed as "claude".
const (
	envRecordCommand = "ASKCTL_RECORD_COMMAND" // the real claude to run
	envRecordOut     = "ASKCTL_RECORD_OUT"     // the scenario file to write
)

type recordOptions struct {
	out     string
	name    string
	command []string
	io      *stdio
}

func newRecordCmd(s *stdio, runF func(context.Context, *recordOptions) error) *cli.Command {
	o := &recordOptions{io: s}
	if runF == nil {
		runF = runRecord
	}
	return &cli.Command{
		Name:      "record",
		Usage:     "run a command (the real claude) and record the session as a scenario",
		ArgsUsage: "-- COMMAND [ARG…]",
		Description: `A transparent shim: a bridge spawns it instead of claude. It runs COMMAND,
passes every byte through both ways, and writes the session as a recorded
scenario: a header with the CLI version, steps derived from the messages, and
every line both ways with timestamps, secrets (API keys, tokens, authorization
headers, password= pairs) redacted and local paths as ${CWD} and ${HOME}.
Lines are written to FILE.partial as they pass, so nothing is lost if either
side stops early. The session is always saved: when no steps can be derived
from it, the file keeps its wire section and stderr says why.

A print-mode session (claude -p "…" --mcp-config …) becomes a route "mcp"
scenario: its prompt is the argument (or what stdin held), and each MCP tool
call an mcp step holding what the server returned, which askctl replay's
scripted server returns again.

askctl exits with COMMAND's status.

As "claude" on PATH: link or copy askctl to a file named claude and set
ASKCTL_RECORD_COMMAND to the real claude (by its full path, or askctl finds
itself and stops) and ASKCTL_RECORD_OUT to the file; the bridge's own
arguments are passed through.

Examples:
  askctl record -o session.txtar -- claude --output-format stream-json ...
  askctl record -o ask.txtar -- claude -p "Ask me" --output-format stream-json --verbose --mcp-config mcp.json --allowedTools mcp__askctl__ask_user
  askctl replay session.txtar                 # against fakeclaude
  askctl replay --agent real session.txtar    # against the real CLI`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "the scenario file to write (or " + envRecordOut + ")", Destination: &o.out},
			&cli.StringFlag{Name: "name", Usage: "the scenario's name (default: the file's base name)", Destination: &o.name},
		},
		Before: func(ctx context.Context, cmd *cli.Command) (context.Context, error) {
			o.command = cmd.Args().Slice()
			if c := s.getenv(envRecordCommand); c != "" {
				o.command = append([]string{c}, o.command...)
			}
			if o.out == "" {
				o.out = s.getenv(envRecordOut)
			}
			return ctx, o.validate()
		},
		Action: func(ctx context.Context, cmd *cli.Command) error { return runF(ctx, o) },
	}
}

func (o *recordOptions) validate() error {
	if o.out == "" {
		return usagef("-o FILE is required (or %s)", envRecordOut)
	}
	if len(o.command) == 0 {
		return usagef("name the command after --, e.g. askctl record -o s.txtar -- claude …")
	}
	return nil
}

func runRecord(ctx context.Context, o *recordOptions) error {
	code, err := record.Run(ctx, record.Options{Out: o.out, Name: o.name, Command: o.command, Stdin: o.io.in, Stdout: o.io.out, Stderr: o.io.err, Env: os.Environ()})
	if err != nil {
		return err
	}
	if code != 0 {
		return exitStatus(code)
	}
	return nil
}
