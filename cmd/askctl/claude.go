package main

import (
	"context"
	"fmt"
	"time"

	"github.com/askctl/askctl/claudecli"
	"github.com/urfave/cli/v3"
)

type claudeOptions struct {
	claude  string
	version string // install, learn: the release
	dir     string // learn: where release files go
	timeout time.Duration
	json    bool
	quick   bool // drift: compare versions only
	io      *stdio
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
		Usage: "install real claude CLI releases, and learn new ones for fakeclaude to play",
		Description: `askctl compares fakeclaude with the real claude CLI and can run scenarios
against it (replay --agent real, fidelity). askctl claude install puts a
release (by default ` + claudecli.Pinned + `, the newest learned) into your cache directory
once, from npm, so those commands work from any directory. Needs npm; the
native binary needs nothing else.

fakeclaude plays every learned release (askctl claude releases); claude learn
VERSION teaches it a new one, and claude drift says whether npm has a
release that is not learned yet.`,
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.Args().Len() == 0 {
				return cli.ShowSubcommandHelp(cmd)
			}
			return unknownCommand(cmd.Args().First(), cmd)
		},
		Commands: []*cli.Command{
			{
				Name:      "install",
				Usage:     "install a claude CLI release into your cache (once; needs npm)",
				ArgsUsage: "[VERSION]",
				Description: `Installs @anthropic-ai/claude-code-<platform>@VERSION (the native binary, about
370 MB; VERSION defaults to ` + claudecli.Pinned + `, the newest learned release; base is
` + claudecli.Base + `, the release fakeclaude's code writes and the captures are of) into your
cache directory, checks that it runs and says it is that release, and prints
its path. Does nothing when it is already there.`,
				Action: func(ctx context.Context, cmd *cli.Command) error {
					if cmd.Args().Len() > 1 {
						return usagef("install takes at most one argument, the release")
					}
					o.version = cmd.Args().First()
					if o.version == "base" {
						o.version = claudecli.Base
					}
					if o.version != "" && !versionRE.MatchString(o.version) {
						return usagef("install %q: want a release such as %s", o.version, claudecli.Pinned)
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
			{
				Name:  "releases",
				Usage: "list the releases fakeclaude can play",
				Description: `Lists the learned releases, oldest first, with the newest (the default) marked,
and the behaviours that differ between them. --json prints them as an array.`,
				Flags:  []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print JSON", Destination: &o.json}},
				Action: func(ctx context.Context, cmd *cli.Command) error { return runClaudeReleases(o) },
			},
			{
				Name:      "learn",
				Usage:     "teach fakeclaude a claude CLI release: install it, play every built-in, write its data",
				ArgsUsage: "VERSION",
				Description: `Installs claude VERSION (as claude install does), plays every built-in scenario
with it against askctl's fake model API and with fakeclaude, and learns what
sets the release's messages and session file rows apart from the base release
fakeclaude's code writes (` + claudecli.Base + `): keys added and dropped, per kind of
message. It plays again with what it learned, until the two agree.

It then writes claudecli/releases/VERSION.json (--dir chooses another place)
and prints what changed against the nearest learned release. Rebuild askctl
to make the release playable (make build), then check it with
askctl fidelity --cli VERSION.

A difference data cannot say (a message more or less, another text, a key on
some messages of a kind and not others) is printed and nothing is written:
it needs code, a claudecli.Behaviour gated by release.

Exit status: 0 learned and equal on every scenario, 1 not learnable as data
(the differences are printed), 3 the release could not be installed or run.`,
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "dir", Usage: "where to write VERSION.json (default: claudecli/releases of the askctl source tree you are in)", Destination: &o.dir},
					&cli.DurationFlag{Name: "timeout", Value: time.Minute, Usage: "deadline of each wait for the SDK side", Destination: &o.timeout},
				},
				Action: func(ctx context.Context, cmd *cli.Command) error {
					if cmd.Args().Len() != 1 {
						return usagef("learn takes one argument, the release (such as %s)", claudecli.Pinned)
					}
					o.version = cmd.Args().First()
					if !versionRE.MatchString(o.version) {
						return usagef("learn %q: want a release such as %s", o.version, claudecli.Pinned)
					}
					if o.timeout <= 0 {
						return usagef("--timeout: want a positive duration, got %v", o.timeout)
					}
					return runClaudeLearn(ctx, o)
				},
			},
			{
				Name:  "drift",
				Usage: "say whether npm has a claude CLI release newer than the newest learned, and what differs (exit 1 if so)",
				Description: `Asks npm for the newest @anthropic-ai/claude-code release and compares it with
the newest learned release (` + claudecli.Pinned + `). When npm's is newer, it installs it
into your cache, plays every built-in scenario with it and with fakeclaude as
the newest learned release, and prints what differs: what a bridge tested with
askctl today would meet (--quick compares the versions only).

Exit status 0: nothing new; 1: a newer release is out, and the next step is
printed (askctl claude learn VERSION); 3: npm could not be asked, or the
release not installed. A scheduled CI job (.ci/drift) runs it to hear of a
release that needs learning.`,
				Flags: []cli.Flag{
					&cli.BoolFlag{Name: "json", Usage: "print JSON", Destination: &o.json},
					&cli.BoolFlag{Name: "quick", Usage: "compare the versions only: install and play nothing", Destination: &o.quick},
					&cli.DurationFlag{Name: "timeout", Value: time.Minute, Usage: "deadline of each wait for the SDK side", Destination: &o.timeout},
				},
				Action: func(ctx context.Context, cmd *cli.Command) error { return runClaudeDrift(ctx, o) },
			},
		},
	}
}

func runClaudeInstall(ctx context.Context, o *claudeOptions) error {
	v := o.version
	if v == "" {
		v = claudecli.Pinned
	}
	_, err := claudecli.InstallOf(ctx, v, o.io.err)
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
