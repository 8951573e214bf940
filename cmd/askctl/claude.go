package main

import (
	"context"
	"fmt"

	"github.com/askctl/askctl/claudecli"
	"github.com/urfave/cli/v3"
)

type claudeOptions struct {
	claude string
	io     *stdio
}

func newClaudeCmd(s *stdio, installF, pathF func(context.Context, *claudeOptions) error) *cli.Command {
	o := &claudeOptions{io: s}
	if installF == nil {
		installF = runClaudeInstall
	}
	if pathF == nil {
		pathF = runClaudePath
	}
	return &cli.Command{
		Name:  "claude",
		Usage: "install and find the pinned real claude CLI (" + claudecli.Pinned + ")",
		Description: `askctl compares fakeclaude with the real claude CLI ` + claudecli.Pinned + ` and can run scenarios
against it (replay --agent real, fidelity). askctl claude install puts that
release into your cache directory once, from npm, so those commands work from
any directory. Needs npm; the native binary needs nothing else.`,
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.Args().Len() == 0 {
				return cli.ShowSubcommandHelp(cmd)
			}
			return unknownCommand(cmd.Args().First(), cmd)
		},
		Commands: []*cli.Command{
			{
				Name:  "install",
				Usage: "install the pinned claude CLI into your cache (once; needs npm)",
				Description: `Installs @anthropic-ai/claude-code-<platform>@` + claudecli.Pinned + ` (the native binary, about
370 MB) into your cache directory, checks that it runs and says it is
` + claudecli.Pinned + `, and prints its path. Does nothing when it is already there.`,
				Action: func(ctx context.Context, cmd *cli.Command) error {
					if cmd.Args().Len() > 0 {
						return usagef("install takes no arguments")
					}
					return installF(ctx, o)
				},
			},
			{
				Name:  "path",
				Usage: "print the real claude CLI askctl would use, or say why there is none",
				Description: `Prints the path of the claude askctl uses for --agent real and fidelity: the one
--claude (or ASKCTL_CLAUDE) names, else the pinned one in your cache, else
claude on PATH (with a warning when it is not ` + claudecli.Pinned + `).`,
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "claude", Usage: "a claude executable to check", Destination: &o.claude, Sources: cli.EnvVars(claudecli.EnvClaude)},
				},
				Action: func(ctx context.Context, cmd *cli.Command) error { return pathF(ctx, o) },
			},
		},
	}
}

func runClaudeInstall(ctx context.Context, o *claudeOptions) error {
	_, err := claudecli.Install(ctx, o.io.err)
	return err
}

func runClaudePath(ctx context.Context, o *claudeOptions) error {
	p, err := claudecli.Find(ctx, o.claude, o.io.err)
	if err != nil {
		return err
	}
	fmt.Fprintln(o.io.out, p)
	return nil
}
