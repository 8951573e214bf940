package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/askctl/askctl/agent"
	"github.com/askctl/askctl/replay"
	"github.com/urfave/cli/v3"
)

func newFidelityCmd() *cli.Command {
	var o replayOptions
	return &cli.Command{
		Name:      "fidelity",
		Usage:     "play scenarios with fakeclaude and with the real claude CLI, and diff the two",
		ArgsUsage: "[SCENARIO…]",
		Description: `Plays each scenario (all built-ins when none is given) once with fakeclaude and
once with the real claude CLI against askctl's fake model API, and compares the
two normalized transcripts: message types and order, key sets, can_use_tool
fields, tool_result texts, result subtypes. Any difference is printed with the
message it is in. Exit status 1 if anything differs.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "claude", Usage: "the real claude executable", Destination: &o.claude, Sources: cli.EnvVars("ASKCTL_CLAUDE")},
			&cli.BoolFlag{Name: "json", Usage: "print the reports as JSON", Destination: &o.json},
			&cli.DurationFlag{Name: "timeout", Value: time.Minute, Usage: "deadline for each session", Destination: &o.timeout},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			w, ew := cmd.Root().Writer, cmd.Root().ErrWriter
			scs, err := loadScenarios(cmd.Args().Slice())
			if err != nil {
				return err
			}
			real, err := chooseAgent("real", o.claude)
			if err != nil {
				return err
			}
			var reps []replay.FidelityReport
			equal := 0
			for i, sc := range scs {
				fr := replay.Fidelity(ctx, sc, agent.Fake{RunAs: "fakeclaude"}, real, replay.Options{Timeout: o.timeout})
				reps = append(reps, fr)
				status := "equal"
				if !fr.Equal {
					status = fmt.Sprintf("%d difference(s)", len(fr.Diffs))
				} else {
					equal++
				}
				if !o.json {
					fmt.Fprintf(ew, "[%d/%d] %s: %s (fake %v, real %v)\n", i+1, len(scs), sc.Name, status, fr.Fake.Duration.Round(time.Millisecond), fr.Real.Duration.Round(time.Millisecond))
				}
			}
			if o.json {
				b, _ := json.MarshalIndent(reps, "", "  ")
				fmt.Fprintf(w, "%s\n", b)
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
			if equal != len(reps) {
				return errMismatch
			}
			return nil
		},
	}
}

func prefixed(p string, ds []replay.Diff) []replay.Diff {
	out := make([]replay.Diff, len(ds))
	for i, d := range ds {
		d.Text = p + ": " + d.Text
		out[i] = d
	}
	return out
}
