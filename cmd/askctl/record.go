package main

import (
	"context"
	"os"

	"github.com/askctl/askctl/record"
	"github.com/urfave/cli/v3"
)

// Environment of the recording shim installed as "claude".
const (
	envRecordCommand = "ASKCTL_RECORD_COMMAND" // the real claude to run
	envRecordOut     = "ASKCTL_RECORD_OUT"     // the scenario file to write
)

func newRecordCmd(getenv func(string) string) *cli.Command {
	var out, name string
	return &cli.Command{
		Name:      "record",
		Usage:     "run a command (the real claude) and record the session as a scenario",
		ArgsUsage: "-- COMMAND [ARG…]",
		Description: `A transparent shim: a bridge spawns it instead of claude. It runs COMMAND,
passes every byte through both ways, and writes the session as a recorded
scenario: a header with the CLI version, steps derived from the messages, and
every line both ways with timestamps, secrets (API keys, tokens, authorization
headers) redacted. Lines are written to FILE.partial as they pass, so nothing is
lost if either side stops early. askctl exits with COMMAND's status.

As "claude" on PATH: link or copy askctl to a file named claude and set
ASKCTL_RECORD_COMMAND to the real claude and ASKCTL_RECORD_OUT to the file;
the bridge's own arguments are passed through.

Examples:
  askctl record -o session.txtar -- claude --output-format stream-json ...
  askctl replay session.txtar                 # against fakeclaude
  askctl replay --agent real session.txtar    # against the real CLI`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "the scenario file to write (or " + envRecordOut + ")", Destination: &out},
			&cli.StringFlag{Name: "name", Usage: "the scenario's name (default: the file's base name)", Destination: &name},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			command := cmd.Args().Slice()
			if c := getenv(envRecordCommand); c != "" {
				command = append([]string{c}, command...)
			}
			if out == "" {
				out = getenv(envRecordOut)
			}
			if out == "" {
				return usagef("record: -o FILE is required (or %s)", envRecordOut)
			}
			if len(command) == 0 {
				return usagef("record: name the command after --, e.g. askctl record -o s.txtar -- claude …")
			}
			code, err := record.Run(ctx, record.Options{Out: out, Name: name, Command: command, Stdin: cmd.Root().Reader, Stdout: cmd.Root().Writer, Stderr: cmd.Root().ErrWriter, Env: os.Environ()})
			if err != nil {
				return err
			}
			if code != 0 {
				return exitStatus(code)
			}
			return nil
		},
	}
}
