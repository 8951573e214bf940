package main

import (
	"context"
	"io"
	"os"

	"github.com/askctl/askctl/claudecli"
	"github.com/urfave/cli/v3"
)

// cliFlag is --cli: the claude release the agents play (fakeclaude) or are
// (the real CLI), for the commands that start agents.
func cliFlag(dst *string) cli.Flag {
	return &cli.StringFlag{Name: "cli", Usage: "the claude CLI release fakeclaude plays, and the real CLI's with --agent real (default: the newest learned; askctl claude releases lists them)",
		Destination: dst, Sources: cli.EnvVars(claudecli.EnvCLIVersion)}
}

// useRelease makes v the release of every fakeclaude this process starts:
// they inherit FAKECLAUDE_CLI_VERSION, and the harness's claude shim
// exports it. An unknown release is a usage error that lists the learned
// ones.
func useRelease(v string) error {
	if v == "" {
		return nil
	}
	if _, err := claudecli.Load(v); err != nil {
		return usageError{err}
	}
	return os.Setenv(claudecli.EnvCLIVersion, v)
}

// findReal is the real CLI to run: the one --claude names, else release v
// (installed into the cache when it is not there yet), else what
// claudecli.Find finds.
func findReal(ctx context.Context, claude, v string, log io.Writer) (string, error) {
	if claude == "" && v != "" {
		return claudecli.InstallOf(ctx, v, log)
	}
	return claudecli.Find(ctx, claude, log)
}
