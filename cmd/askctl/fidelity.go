package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/askctl/askctl/claudecli"
	"github.com/askctl/askctl/internal/agent"
	"github.com/askctl/askctl/internal/replay"
	"github.com/urfave/cli/v3"
)

type fidelityOptions struct {
	claude  string
	cli     string
	rel     release
	json    bool
	timeout time.Duration
	names   []string
	io      *stdio
}

func newFidelityCmd(s *stdio, runF func(context.Context, *fidelityOptions) error) *cli.Command {
	o := &fidelityOptions{io: s}
	if runF == nil {
		runF = runFidelity
	}
	return &cli.Command{
		Name:      "fidelity",
		Usage:     "play scenarios with fakeclaude and with the real claude CLI, and diff the two",
		ArgsUsage: "[SCENARIO…]",
		Description: `Plays each scenario (all built-ins when none is given) once with fakeclaude and
once with the real claude CLI against askctl's fake model API, and compares the
two normalized transcripts: message types and order, key sets, can_use_tool
fields, tool_result texts, result subtypes. Any difference is printed with the
message it is in. Each agent must also match the scenario on its own.

It also compares the session file each agent wrote (projects/…/ID.jsonl
under the config directory): the conversation's user and assistant rows in
order — keys, content, tool results, permission decisions, and which row
each one's parentUuid leads to — and the bookkeeping rows (queue operations,
tools used, last prompt, mode, cost state) as a set. And, for route "sdk"
scenarios whose agent does not die mid-question, it resumes each agent's
session (a second run with --resume ID --replay-user-messages in the same
directory) and compares that too: its messages with the echoes, the id
kept, and the one file appended. Route "mcp" scenarios run in print mode
against a scripted ask_user server.

Left out of the comparison, and counted per scenario:
  - values that change from run to run: ids, uuids, timestamps, durations,
    costs, local paths, and the installation's catalogues in the initialize
    response (commands, models, agents);
  - informational frames whose presence depends on timing (system messages
    other than init, keep_alive, stream_event, rate_limit_event);
  - the real CLI's reply to askctl's interrupt: the real CLI withdraws a
    pending question only when interrupted, where fakeclaude withdraws it by
    itself (cancel_after), so cancel-pending shows one message more for the
    real CLI than for fakeclaude;
  - the session file rows that hold the CLI's own system prompt,
    environment and API requests (attachment, api-request*, atis-latch),
    which fakeclaude does not write.

The real CLI is the one --claude names, else release --cli (installed into
your cache when it is not there; latest and oldest name the newest and oldest
learned), else the pinned one askctl claude install put in your cache, else
claude on PATH. fakeclaude plays the release the real CLI says it is, which
must be learned (askctl claude releases; askctl claude learn VERSION).
Exit status 1 if anything differs.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "claude", Usage: "the real claude executable", Destination: &o.claude, Sources: cli.EnvVars(claudecli.EnvClaude)},
			&cli.StringFlag{Name: "cli", Usage: "the release to compare: installed into your cache when it is not there, and played by fakeclaude (default: the release the real CLI says it is)", Destination: &o.cli, Sources: cli.EnvVars(claudecli.EnvCLIVersion)},
			&cli.BoolFlag{Name: "json", Usage: "print the reports as JSON", Destination: &o.json},
			&cli.DurationFlag{Name: "timeout", Value: time.Minute, Usage: "deadline of each wait for the SDK side", Destination: &o.timeout},
		},
		Before: func(ctx context.Context, cmd *cli.Command) (context.Context, error) {
			o.names = cmd.Args().Slice()
			return ctx, o.validate()
		},
		Action: func(ctx context.Context, cmd *cli.Command) error { return runF(ctx, o) },
	}
}

func (o *fidelityOptions) validate() error {
	if o.timeout <= 0 {
		return usagef("--timeout: want a positive duration, got %v", o.timeout)
	}
	var err error
	o.rel, err = resolveRelease(o.cli)
	return err
}

func runFidelity(ctx context.Context, o *fidelityOptions) error {
	w, ew := o.io.out, o.io.err
	scs, err := loadScenarios(o.names)
	if err != nil {
		return err
	}
	real, err := chooseAgent(ctx, "real", o.claude, o.rel, ew)
	if err != nil {
		return err
	}
	// fakeclaude plays the release the real CLI is.
	rv, err := claudecli.Version(ctx, real.(agent.Real).Claude)
	if err != nil {
		return err
	}
	if _, err := claudecli.Load(rv); err != nil {
		return usageError{fmt.Errorf("the real CLI %s: %w", real.(agent.Real).Claude, err)}
	}
	fake := fakeAgent()
	fake.CLIVersion = rv
	if o.rel.play != "" && o.rel.version == rv {
		fake.CLIVersion = o.rel.play // a release file, say
	}
	var reps []replay.FidelityReport
	equal := 0
	for i, sc := range scs {
		fr := replay.Fidelity(ctx, sc, fake, real, replay.Options{Timeout: o.timeout})
		if ctx.Err() != nil {
			// Cut short: its differences are the interrupt's, not the
			// agents'.
			fmt.Fprintf(ew, "[%d/%d] %s: interrupted\n", i+1, len(scs), sc.Name)
			break
		}
		reps = append(reps, fr)
		status := "equal"
		if fr.ResumedReal != nil {
			status = "equal, resumed too"
		}
		if !fr.Equal {
			status = fmt.Sprintf("%d difference(s)", len(fr.Diffs))
			if n := len(fr.Fake.Diffs) + len(fr.Real.Diffs); n > 0 {
				status += fmt.Sprintf(", %d from the scenario", n)
			}
		} else {
			equal++
		}
		if !o.json {
			fmt.Fprintf(ew, "[%d/%d] %s: %s (fake %d messages in %v, real %d in %v%s)\n", i+1, len(scs), sc.Name, status,
				fr.Fake.Messages, fr.Fake.Duration.Round(time.Millisecond), fr.Real.Messages, fr.Real.Duration.Round(time.Millisecond), leftOutNote(fr))
		}
	}
	if o.json {
		if err := printJSON(w, reps); err != nil {
			return err
		}
	} else {
		for _, fr := range reps {
			if fr.Equal {
				continue
			}
			fmt.Fprintf(w, "\n%s:\n", fr.Scenario)
			for _, d := range append(append(fr.Diffs, prefixed("fake vs scenario", fr.Fake.Diffs)...), prefixed("real vs scenario", fr.Real.Diffs)...) {
				fmt.Fprintf(w, "  - %s\n", d)
			}
		}
		v := "?"
		if len(reps) > 0 {
			v = reps[0].RealVersion
		}
		fmt.Fprintf(w, "fidelity: %d of %d scenarios equal between fakeclaude and claude %s\n", equal, len(reps), v)
	}
	if err := ctx.Err(); err != nil {
		return err // interrupted: exit 130
	}
	if equal != len(reps) {
		return errMismatch
	}
	return nil
}

// leftOutNote says what the comparison left out of a scenario's sessions.
func leftOutNote(fr replay.FidelityReport) string {
	var agents []string
	for a := range fr.LeftOut {
		agents = append(agents, a)
	}
	sort.Strings(agents)
	note := ""
	for _, a := range agents {
		for _, why := range slices.Sorted(maps.Keys(fr.LeftOut[a])) {
			n := fr.LeftOut[a][why]
			switch why {
			case replay.LeftOutInterrupt:
				note += fmt.Sprintf("; %s: %d left out, the reply to askctl's interrupt", a, n)
			case replay.LeftOutSession:
				note += fmt.Sprintf("; %s: %d session file row(s) left out (attachment, api-request*, atis-latch)", a, n)
			default:
				note += fmt.Sprintf("; %s: %d informational frame(s) left out", a, n)
			}
		}
	}
	return note
}

func prefixed(p string, ds []replay.Diff) []replay.Diff {
	out := make([]replay.Diff, len(ds))
	for i, d := range ds {
		d.Text = p + ": " + d.Text
		out[i] = d
	}
	return out
}
