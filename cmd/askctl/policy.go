package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/askctl/askctl/internal/clip"
	"github.com/askctl/askctl/policy"
	"github.com/askctl/askctl/protocol"
	"github.com/urfave/cli/v3"
)

type policyOptions struct {
	files   []string
	try     string
	session string
	json    bool
	io      *stdio
}

func newPolicyCmd(s *stdio, runF func(context.Context, *policyOptions) error) *cli.Command {
	o := &policyOptions{io: s}
	if runF == nil {
		runF = runPolicyCheck
	}
	return &cli.Command{
		Name:  "policy",
		Usage: "check a policy that answers questions by rules (askctl serve --policy FILE)",
		Description: `A policy answers or skips questions by rules, for runs of Claude Code that must
never block on a person (CI). askctl serve --policy FILE applies it to every
question, on both routes; each automatic decision is an event on every surface
(naming the rule) and a line in the bridge's log.

A policy is JSON Lines, one rule a line, tried in order (# starts a comment):

  {"name":"no-deploy","match":{"question":"(?i)deploy"},"skip":"CI never deploys"}
  {"name":"db","match":{"header":"^Database$"},"answer":"SQLite"}
  {"name":"sections","match":{"option":"Intro"},"answer":["Intro","Outro"]}
  {"name":"review","match":{"session":"^s_review"},"person":true}
  {"name":"fallback","first":true,"after":"30s"}

match (every condition given must hold): question, header (regexps), option
(a label the question offers), multi_select (true/false), session (a regexp on
the session id), input ({"<gjson path>": "<regexp>"} on the raw tool input).
One action: answer (a label, or labels in order for multiSelect; only
questions offering them match), text (free text), first (the first option),
skip (the deny's reason), person (leave it to a person). "after" waits that
long for a person before acting.

The questions of one request are decided together: each by the first rule
that matches it. If any is left to a person (or matches no rule), a person
answers the request; if any is skipped, the request is skipped; otherwise
all are answered at once, after the longest wait of their rules.

Examples:
  askctl policy check ci.policy
  askctl policy check ci.policy --try input.json    # {"questions":[…]}: what would happen
  askctl serve --policy ci.policy

Exit status: 0 the policy is valid, 2 it is not (each problem as
FILE:LINE: FIELD: message), 3 another error.`,
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.Args().Len() == 0 {
				return cli.ShowSubcommandHelp(cmd)
			}
			return unknownCommand(cmd.Args().First(), cmd)
		},
		Commands: []*cli.Command{{
			Name:      "check",
			Usage:     "check policy files, and show what one would do with a question",
			ArgsUsage: "FILE...",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "try", Usage: "an AskUserQuestion input (a `FILE` of {\"questions\":[…]}, - for stdin): print the decision", Destination: &o.try},
				&cli.StringFlag{Name: "session", Usage: "the session id the question comes from, for --try", Value: "s_try", Destination: &o.session},
				&cli.BoolFlag{Name: "json", Usage: "print JSON", Destination: &o.json},
			},
			Before: func(ctx context.Context, cmd *cli.Command) (context.Context, error) {
				o.files = cmd.Args().Slice()
				if len(o.files) == 0 {
					return ctx, usagef("policy check needs a FILE")
				}
				if o.try != "" && len(o.files) != 1 {
					return ctx, usagef("--try takes one policy FILE, got %d", len(o.files))
				}
				return ctx, nil
			},
			Action: func(ctx context.Context, cmd *cli.Command) error { return runF(ctx, o) },
		}},
	}
}

func runPolicyCheck(ctx context.Context, o *policyOptions) error {
	var loaded []*policy.Policy
	bad := false
	for _, f := range o.files {
		p, err := policy.Load(f)
		if err != nil {
			var pe *policy.Error
			printLoadError(o.io.err, err, errors.As(err, &pe))
			bad = true
			continue
		}
		loaded = append(loaded, p)
	}
	if bad {
		return exitStatus(exitUsage)
	}
	for _, p := range loaded {
		for _, w := range p.Unreachable() {
			fmt.Fprintf(o.io.err, "askctl: warning: %s\n", w)
		}
	}
	if o.try != "" {
		return tryPolicy(ctx, o, loaded[0])
	}
	if o.json {
		var out []map[string]any
		for _, p := range loaded {
			unreachable := p.Unreachable()
			if unreachable == nil {
				unreachable = []string{}
			}
			out = append(out, map[string]any{"file": p.File, "rules": len(p.Rules), "unreachable": unreachable})
		}
		return printJSON(o.io.out, out)
	}
	for _, p := range loaded {
		fmt.Fprintf(o.io.out, "%s: ok, %d rules\n", p.File, len(p.Rules))
		tw := tabwriter.NewWriter(o.io.out, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  LINE\tNAME\tACTION\tAFTER")
		for _, r := range p.Rules {
			after := "at once"
			if r.After > 0 {
				after = r.After.String()
			}
			if r.Person {
				after = "-"
			}
			fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\n", r.Line, clip.Printable(r.Name), r.Action(), after)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// tryPolicy prints what the policy would do with a question.
func tryPolicy(ctx context.Context, o *policyOptions, p *policy.Policy) error {
	var data []byte
	var err error
	in := o.io.in
	if o.try != "-" {
		f, err := os.Open(o.try)
		if err != nil {
			return exitWithMessage{exitUsage, fmt.Sprintf("--try: %v", err)}
		}
		defer f.Close()
		in = f
	}
	data, err = io.ReadAll(io.LimitReader(in, policy.MaxFile+1))
	if err != nil {
		return exitWithMessage{exitUsage, fmt.Sprintf("--try: %v", err)}
	}
	if len(data) > policy.MaxFile {
		return exitWithMessage{exitUsage, fmt.Sprintf("--try %s: over %d KiB, more than a question's input", o.try, policy.MaxFile>>10)}
	}
	if err := jsonSyntax(data); err != nil {
		return exitWithMessage{exitUsage, fmt.Sprintf("--try %s: %v; want an AskUserQuestion input, {\"questions\":[…]}", o.try, err)}
	}
	parsed, err := protocol.ParseAskInput(data)
	if err == nil && len(parsed.Questions) == 0 {
		err = errors.New(`no questions: want {"questions":[…]}`)
	}
	if err != nil {
		return exitWithMessage{exitUsage, fmt.Sprintf("--try %s: %v", o.try, err)}
	}
	d, err := p.DecideContext(ctx, policy.Request{Session: o.session, Questions: parsed.Questions, Input: data})
	if err != nil && ctx.Err() != nil {
		return ctx.Err() // stopped (SIGTERM, ^C)
	}
	rules := make([]string, len(d.Rules))
	for i, r := range d.Rules {
		if r != nil {
			rules[i] = r.String()
		}
	}
	if o.json {
		out := map[string]any{"action": d.Action, "after_seconds": d.After.Seconds(), "rules": rules}
		if d.Rule != nil {
			out["rule"] = d.Rule.String()
			out["decided_by"] = d.Named()
		}
		if d.Action == policy.ActAnswer {
			out["answers"] = d.Answers
		} else {
			out["reason"] = d.Reason
		}
		return printJSON(o.io.out, out)
	}
	w := o.io.out
	when := "at once"
	if d.After > 0 {
		when = "if nobody has within " + d.After.String()
	}
	switch d.Action {
	case policy.ActPerson:
		fmt.Fprintf(w, "left to a person: %s\n", clip.Printable(d.Reason))
	case policy.ActSkip:
		fmt.Fprintf(w, "skipped by %s, %s: %s\n", d.Named(), when, clip.Printable(d.Reason))
	default:
		fmt.Fprintf(w, "answered by %s, %s:\n", d.Named(), when)
		keys := make([]string, 0, len(d.Answers))
		for k := range d.Answers {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(w, "  %s = %s\n", clip.Printable(k), clip.Printable(strings.Join(d.Answers[k], ", ")))
		}
	}
	for i, q := range parsed.Questions {
		r := rules[i]
		if r == "" {
			r = "no rule"
		}
		fmt.Fprintf(w, "  question %d %q: %s\n", i+1, clip.Printable(q.Question), r)
	}
	return nil
}

// jsonSyntax is nil for one JSON value, else where it stops being JSON:
// line and column, and what the decoder says.
func jsonSyntax(data []byte) error {
	if json.Valid(data) {
		return nil
	}
	var v any
	err := json.Unmarshal(data, &v)
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line, col := 1, 1
		for _, b := range data[:min(int(se.Offset), len(data))] {
			if b == '\n' {
				line, col = line+1, 1
			} else {
				col++
			}
		}
		return fmt.Errorf("not JSON: line %d, column %d: %v", line, max(1, col-1), se)
	}
	if err == nil {
		err = errors.New("more than one JSON value")
	}
	return fmt.Errorf("not JSON: %v", err)
}
