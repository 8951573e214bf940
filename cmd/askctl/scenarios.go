package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/askctl/askctl/scenarios"
	"github.com/rogpeppe/go-internal/txtar"
	"github.com/urfave/cli/v3"
)

type scenariosOptions struct {
	show  bool
	names []string
	io    *stdio
}

func newScenariosCmd(s *stdio, runF func(context.Context, *scenariosOptions) error) *cli.Command {
	o := &scenariosOptions{io: s}
	if runF == nil {
		runF = runScenarios
	}
	return &cli.Command{
		Name:      "scenarios",
		Usage:     "list the built-in scenarios, or check scenarios by name or file",
		ArgsUsage: "[NAME|FILE…]",
		Description: `With no arguments, lists the built-in scenarios. With built-in names or files,
parses and validates each and reports every problem with its file, line and
field (exit status 2 if any is invalid).

--show prints the source of the named built-ins: one as it is; several as one
txtar archive with a NAME.txtar file each (its lines quoted with ">"), which
txtar tools — and testscript's unquote — take apart again.

Examples:
  askctl scenarios
  askctl scenarios ask-multi my-session.txtar
  askctl scenarios --show ask-single > mine.txtar`,
		Flags: []cli.Flag{&cli.BoolFlag{Name: "show", Usage: "print the named built-ins' txtar source", Destination: &o.show}},
		Before: func(ctx context.Context, cmd *cli.Command) (context.Context, error) {
			o.names = cmd.Args().Slice()
			return ctx, o.validate()
		},
		Action: func(ctx context.Context, cmd *cli.Command) error { return runF(ctx, o) },
	}
}

func (o *scenariosOptions) validate() error {
	if o.show && len(o.names) == 0 {
		return usagef("--show: name the built-ins to show (askctl scenarios lists them)")
	}
	return nil
}

// descWidth bounds a description in the list.
const descWidth = 80

// printLoadError prints why a file did not load: its problems (listed) as
// file:line: field: message, one a line, as compilers do; any other error
// with askctl's prefix.
func printLoadError(w io.Writer, err error, listed bool) {
	if listed {
		fmt.Fprintln(w, err)
	} else {
		fmt.Fprintf(w, "askctl: %v\n", err)
	}
}

func runScenarios(ctx context.Context, o *scenariosOptions) error {
	w := o.io.out
	switch {
	case o.show:
		return showScenarios(o)
	case len(o.names) > 0:
		bad := false
		for _, n := range o.names {
			sc, err := scenarios.Load(n)
			if err != nil {
				var list scenarios.ErrorList
				printLoadError(o.io.err, err, errors.As(err, &list))
				bad = true
				continue
			}
			fmt.Fprintf(w, "%s: ok (%s, %d steps)\n", n, sc.Name, len(sc.Steps))
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
		fmt.Fprintf(tw, "%s\t%d\t%s\n", n, len(sc.Steps), firstLine(sc.Description, descWidth))
	}
	return tw.Flush()
}

// firstLine is the description's first line, cut to n runes with "…" when
// anything was left out.
func firstLine(desc string, n int) string {
	line, rest, _ := strings.Cut(strings.TrimSpace(desc), "\n")
	line = strings.TrimSpace(line)
	cut := strings.TrimSpace(rest) != ""
	if utf8.RuneCountInString(line) > n {
		line, cut = string([]rune(line)[:n-1]), true
	}
	if cut {
		line = strings.TrimRight(line, " ,.;:") + "…"
	}
	return line
}

func showScenarios(o *scenariosOptions) error {
	var ar txtar.Archive
	for _, n := range o.names {
		b, err := scenarios.FS.ReadFile(n + ".txtar")
		if err != nil {
			return usagef("no built-in scenario %q (askctl scenarios lists them)", n)
		}
		if len(o.names) == 1 {
			_, err := o.io.out.Write(b)
			return err
		}
		q, err := txtar.Quote(b)
		if err != nil {
			return err
		}
		ar.Files = append(ar.Files, txtar.File{Name: n + ".txtar", Data: q})
	}
	_, err := o.io.out.Write(txtar.Format(&ar))
	return err
}
