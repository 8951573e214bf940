package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/askctl/askctl/claudecli"
	"github.com/askctl/askctl/fakeclaude"
	"github.com/askctl/askctl/internal/agent"
	"github.com/askctl/askctl/internal/replay"
	"github.com/askctl/askctl/scenarios"
	"github.com/urfave/cli/v3"
)

type replayOptions struct {
	agent   string
	claude  string
	cli     string
	rel     release
	json    bool
	timeout time.Duration
	verbose bool
	names   []string
	io      *stdio
}

func newReplayCmd(s *stdio, runF func(context.Context, *replayOptions) error) *cli.Command {
	o := &replayOptions{io: s}
	if runF == nil {
		runF = runReplay
	}
	return &cli.Command{
		Name:      "replay",
		Usage:     "replay scenarios against an agent and report where it differs",
		ArgsUsage: "[SCENARIO…]",
		Description: `Replays each scenario (a built-in name or a .txtar file; all built-ins when none
is given) against a fresh agent. askctl plays the SDK side: initialize, each
turn's prompt, and the person's part (answers, skips, silence) from the scenario
or the recording. A route "mcp" scenario runs the agent in print mode
(claude -p PROMPT --mcp-config …) against a scripted ask_user server on
loopback that plays the person. Then it checks what the agent wrote:

  - a recorded scenario: message by message against the recording (ids,
    uuids, timestamps and costs aside): type, order, keys, tool inputs, tool
    results and result subtypes;
  - a hand-written one: against what its steps say the CLI must write, with
    the real CLI's texts.

--agent fake (the default) runs fakeclaude; --agent real runs the real claude
CLI against askctl's scripted model API, offline and free: the one --claude
names, else the pinned one askctl claude install put in your cache, else claude
on PATH.

--timeout is each wait's deadline: fakeclaude gets it as its own, so a session
where nobody answers ends with fakeclaude's verdict ("no answer … within").

Exit status: 0 every scenario matched, 1 some differed, 2 usage (or a scenario
that cannot be played), 3 an agent could not be run.

Examples:
  askctl replay
  askctl replay --agent real ask-multi cancel-pending
  askctl replay --json my-session.txtar | jq '.[].diffs'`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "agent", Value: "fake", Usage: "who plays the agent: fake (fakeclaude) or real (the claude CLI + fake model API)", Destination: &o.agent, Sources: cli.EnvVars("ASKCTL_AGENT")},
			&cli.StringFlag{Name: "claude", Usage: "the real claude executable, for --agent real", Destination: &o.claude, Sources: cli.EnvVars(claudecli.EnvClaude)},
			cliFlag(&o.cli),
			&cli.BoolFlag{Name: "json", Usage: "print the reports as a JSON array", Destination: &o.json},
			&cli.DurationFlag{Name: "timeout", Value: time.Minute, Usage: "deadline of each wait for the SDK side (and, with a grace period, of each session)", Destination: &o.timeout},
			&cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Usage: "print every message both ways for scenarios that differ", Destination: &o.verbose},
		},
		Before: func(ctx context.Context, cmd *cli.Command) (context.Context, error) {
			o.names = cmd.Args().Slice()
			return ctx, o.validate()
		},
		Action: func(ctx context.Context, cmd *cli.Command) error { return runF(ctx, o) },
	}
}

func (o *replayOptions) validate() error {
	if o.agent != "fake" && o.agent != "real" {
		return usagef("--agent: want fake or real, got %q", o.agent)
	}
	if o.timeout <= 0 {
		return usagef("--timeout: want a positive duration, got %v", o.timeout)
	}
	var err error
	o.rel, err = resolveRelease(o.cli)
	return err
}

// chooseAgent builds the agent the options name; version is the release
// it plays or is ("" the default).
func chooseAgent(ctx context.Context, name, claude string, rel release, warn io.Writer) (agent.Agent, error) {
	if name == "real" {
		path, err := findReal(ctx, claude, rel.version, warn)
		if err != nil {
			return nil, err
		}
		return agent.Real{Claude: path}, nil
	}
	f := fakeAgent()
	f.CLIVersion = rel.play
	return f, nil
}

// fakeAgent is fakeclaude: the executable next to askctl when there is
// one (make build puts it there; it starts faster), else askctl itself.
func fakeAgent() agent.Fake {
	if self, err := os.Executable(); err == nil {
		if p, ok := fakeclaude.Beside(self); ok {
			return agent.Fake{Exe: p}
		}
	}
	return agent.Fake{RunAs: fakeclaude.RoleFake}
}

func loadScenarios(names []string) ([]*scenarios.Scenario, error) {
	if len(names) == 0 {
		names = scenarios.Names()
	}
	var out []*scenarios.Scenario
	for _, n := range names {
		sc, err := scenarios.Load(n)
		if err != nil {
			return nil, usageError{err}
		}
		out = append(out, sc)
	}
	return out, nil
}

func runReplay(ctx context.Context, o *replayOptions) error {
	stdout, stderr := o.io.out, o.io.err
	scs, err := loadScenarios(o.names)
	if err != nil {
		return err
	}
	ag, err := chooseAgent(ctx, o.agent, o.claude, o.rel, stderr)
	if err != nil {
		return err
	}
	var reports []replay.Report
	for i, sc := range scs {
		rep := replay.Replay(ctx, sc, ag, replay.Options{Timeout: o.timeout})
		if ctx.Err() != nil {
			// Cut short: what it found is the interrupt's doing.
			fmt.Fprintf(stderr, "[%d/%d] %s: interrupted\n", i+1, len(scs), sc.Name)
			break
		}
		reports = append(reports, rep)
		if len(scs) > 1 && !o.json {
			fmt.Fprintf(stderr, "[%d/%d] %s: %s (%v)\n", i+1, len(scs), sc.Name, verdict(rep), rep.Duration.Round(time.Millisecond))
		}
	}
	if o.json {
		if err := printJSON(stdout, reports); err != nil {
			return err
		}
	} else {
		printReports(stdout, reports, o.verbose)
	}
	if err := ctx.Err(); err != nil {
		return err // interrupted: exit 130
	}
	for _, r := range reports {
		switch {
		case errors.Is(r.Err, claudecli.ErrStart):
			return exitStatus(exitError)
		case errors.Is(r.Err, replay.ErrPlan):
			return exitStatus(exitUsage)
		}
	}
	for _, r := range reports {
		if !r.Match {
			return errMismatch
		}
	}
	return nil
}

func verdict(r replay.Report) string {
	switch {
	case r.Err != nil:
		return "error"
	case r.Match:
		return "match"
	}
	return fmt.Sprintf("%d difference(s)", len(r.Diffs))
}

func printReports(w io.Writer, reports []replay.Report, verbose bool) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tAGENT\tCHECKED AGAINST\tMESSAGES\tEXIT\tTIME\tRESULT")
	matched := 0
	for _, r := range reports {
		ag := r.Agent
		if r.Version != "" && r.Version != "fakeclaude" {
			ag += " " + r.Version
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%v\t%s\n", r.Scenario, ag, r.Mode, r.Messages, r.Exit, r.Duration.Round(time.Millisecond), verdict(r))
		if r.Match {
			matched++
		}
	}
	tw.Flush()
	for _, r := range reports {
		if r.Match {
			continue
		}
		fmt.Fprintf(w, "\n%s (%s):\n", r.Scenario, r.File)
		if r.Error != "" {
			fmt.Fprintf(w, "  error: %s\n", r.Error)
		}
		for _, d := range r.Diffs {
			fmt.Fprintf(w, "  - %s\n", d)
		}
		if verbose {
			for _, rec := range r.Records {
				if rec.IsWire() {
					fmt.Fprintf(w, "    %s %s\n", map[string]string{"to_cli": ">>", "from_cli": "<<"}[rec.Dir], strings.TrimSpace(string(rec.Msg)))
				}
			}
		}
	}
	fmt.Fprintf(w, "\n%d of %d scenarios matched\n", matched, len(reports))
}
