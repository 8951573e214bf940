package main

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/askctl/askctl/scenarios"
	"github.com/urfave/cli/v3"
)

func newScenariosCmd() *cli.Command {
	var show bool
	return &cli.Command{
		Name:      "scenarios",
		Usage:     "list the built-in scenarios, or check scenario files",
		ArgsUsage: "[FILE…]",
		Description: `With no arguments, lists the built-in scenarios. With files, parses and
validates each and reports every problem with its file, line and field
(exit status 2 if any is invalid). --show prints a built-in's source.`,
		Flags: []cli.Flag{&cli.BoolFlag{Name: "show", Usage: "print the named built-ins' txtar source", Destination: &show}},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			w := cmd.Root().Writer
			args := cmd.Args().Slice()
			if show {
				for _, n := range args {
					b, err := scenarios.FS.ReadFile(n + ".txtar")
					if err != nil {
						return usagef("no built-in scenario %q", n)
					}
					fmt.Fprintf(w, "%s", b)
				}
				return nil
			}
			if len(args) > 0 {
				var bad bool
				for _, f := range args {
					sc, err := scenarios.ParseFile(f)
					if err != nil {
						fmt.Fprintln(cmd.Root().ErrWriter, err)
						bad = true
						continue
					}
					fmt.Fprintf(w, "%s: ok (%s, %d steps)\n", f, sc.Name, len(sc.Steps))
				}
				if bad {
					return exitStatus(exitUsage)
				}
				return nil
			}
			tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tSTEPS\tDESCRIPTION")
			for _, n := range scenarios.Names() {
				sc, err := scenarios.Builtin(n)
				if err != nil {
					return err
				}
				desc, _, _ := strings.Cut(sc.Description, "\n")
				fmt.Fprintf(tw, "%s\t%d\t%s\n", n, len(sc.Steps), desc)
			}
			return tw.Flush()
		},
	}
}
