package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/askctl/askctl/claudecli"
	"github.com/urfave/cli/v3"
)

// cliFlag is --cli: the claude release the agents play (fakeclaude) or are
// (the real CLI), for the commands that start agents.
func cliFlag(dst *string) cli.Flag {
	return &cli.StringFlag{Name: "cli", Usage: "the claude CLI `RELEASE` fakeclaude plays: a learned version (askctl claude releases), latest, oldest, or a release file; where the command runs the real CLI, that release is installed and run (default: the newest learned)",
		Destination: dst, Sources: cli.EnvVars(claudecli.EnvCLIVersion)}
}

// versionRE is what a claude release looks like: 2.1.332.
var versionRE = regexp.MustCompile(`^\d+(\.\d+)+(-[0-9A-Za-z.-]+)?$`)

// release is a --cli value, resolved.
type release struct {
	play    string // what fakeclaude is told: a version, or a release file's absolute path; "" its default
	version string // the release; "" when none was chosen
}

// resolveRelease checks a --cli value: a learned version, latest, oldest,
// or a release file (.json, which fakeclaude reads itself, so its path is
// made absolute: agents run in other directories).
func resolveRelease(v string) (release, error) {
	if v == "" {
		return release{}, nil
	}
	play := v
	switch {
	case strings.HasSuffix(v, ".json"):
		abs, err := filepath.Abs(v)
		if err != nil {
			return release{}, usagef("--cli %s: %v", v, err)
		}
		play = abs
	case v == "latest" || v == "oldest":
	case !versionRE.MatchString(v):
		return release{}, usagef("--cli %q: not a release: want a version such as %s, latest, oldest, or a release file (.json)", v, claudecli.Newest())
	}
	r, err := claudecli.Load(play)
	if err != nil {
		return release{}, usageError{fmt.Errorf("--cli: %w", err)}
	}
	if play == v {
		play = r.Version // latest and oldest, named
	}
	return release{play: play, version: r.Version}, nil
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
