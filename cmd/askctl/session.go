package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/askctl/askctl/internal/clip"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/askctl/askctl/bridgeapi"
	"github.com/askctl/askctl/scenarios"
	"github.com/urfave/cli/v3"
)

type sessionOptions struct {
	conn     bridgeConn
	prompt   string
	scenario string
	id       string
	json     bool
	io       *stdio
}

func newSessionCmd(s *stdio, startF, lsF, stopF func(context.Context, *sessionOptions) error) *cli.Command {
	o := &sessionOptions{io: s}
	if startF == nil {
		startF = runSessionStart
	}
	if lsF == nil {
		lsF = runSessionLs
	}
	if stopF == nil {
		stopF = runSessionStop
	}
	jsonFlag := &cli.BoolFlag{Name: "json", Usage: "print JSON", Destination: &o.json}
	// oneID is the Before of a command that takes one session id: it sets
	// o.id, or says (what) that it wants one.
	oneID := func(o *sessionOptions, what string) cli.BeforeFunc {
		return func(ctx context.Context, cmd *cli.Command) (context.Context, error) {
			if cmd.Args().Len() != 1 {
				return ctx, usagef("%s, got %d arguments", what, cmd.Args().Len())
			}
			o.id = cmd.Args().First()
			return ctx, nil
		}
	}
	return &cli.Command{
		Name:  "session",
		Usage: "start, list, show, read the logs of, and stop the bridge's agent sessions",
		Description: `A session is one agent (claude, or fakeclaude) the bridge spawned with the SDK
flags, given one prompt; it ends when the agent exits after its turn, or when
stopped (its pending questions are withdrawn).

` + bridgeExitHelp,
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.Args().Len() == 0 {
				return cli.ShowSubcommandHelp(cmd)
			}
			return unknownCommand(cmd.Args().First(), cmd)
		},
		Commands: []*cli.Command{
			{
				Name:  "start",
				Usage: "start a session with a prompt",
				Flags: append([]cli.Flag{
					&cli.StringFlag{Name: "prompt", Usage: "the user's message", Destination: &o.prompt},
					&cli.StringFlag{Name: "scenario", Usage: "fakeclaude's scenario, when the bridge runs fakeclaude: a built-in name, or a file (askctl reads it and sends its content)", Destination: &o.scenario},
					jsonFlag,
				}, o.conn.apiFlags()...),
				Before: func(ctx context.Context, cmd *cli.Command) (context.Context, error) {
					if o.prompt == "" {
						return ctx, usagef("--prompt is required")
					}
					if cmd.Args().Len() > 0 {
						return ctx, usagef("start takes no arguments (the prompt goes in --prompt), got %q", cmd.Args().First())
					}
					return ctx, nil
				},
				Action: func(ctx context.Context, cmd *cli.Command) error { return startF(ctx, o) },
			},
			{
				Name:    "ls",
				Aliases: []string{"list"},
				Usage:   "list the sessions",
				Flags:   append([]cli.Flag{jsonFlag}, o.conn.apiFlags()...),
				Action:  func(ctx context.Context, cmd *cli.Command) error { return lsF(ctx, o) },
			},
			{
				Name:      "show",
				Usage:     "show one session: its status, how it ended, and each question with its answer or reason",
				ArgsUsage: "ID",
				Flags:     append([]cli.Flag{jsonFlag}, o.conn.apiFlags()...),
				Before:    oneID(o, "show takes one session id (askctl session ls lists them)"),
				Action:    func(ctx context.Context, cmd *cli.Command) error { return runSessionShow(ctx, o) },
			},
			{
				Name:      "logs",
				Usage:     "what happened in one session, in order: its questions and what came of them, its status, and the end of its agent's stderr",
				ArgsUsage: "ID",
				Flags:     append([]cli.Flag{jsonFlag}, o.conn.apiFlags()...),
				Before:    oneID(o, "logs takes one session id (askctl session ls lists them)"),
				Action:    func(ctx context.Context, cmd *cli.Command) error { return runSessionLogs(ctx, o) },
			},
			{
				Name:      "stop",
				Usage:     "stop a session: close its agent's stdin, then end it",
				ArgsUsage: "ID",
				Flags:     append([]cli.Flag{jsonFlag}, o.conn.apiFlags()...),
				Before:    oneID(o, "stop takes one session id"),
				Action:    func(ctx context.Context, cmd *cli.Command) error { return stopF(ctx, o) },
			},
		},
	}
}

func runSessionStart(ctx context.Context, o *sessionOptions) error {
	c, err := o.conn.client(o.io)
	if err != nil {
		return err
	}
	so := bridgeapi.StartOptions{Prompt: o.prompt}
	if so.Scenario, so.ScenarioText, err = readScenario(o.scenario); err != nil {
		return err
	}
	ss, err := c.StartSession(ctx, so)
	if err != nil {
		return err
	}
	if o.json {
		return printJSON(o.io.out, ss)
	}
	fmt.Fprintln(o.io.out, ss.ID)
	return nil
}

// readScenario is what session start sends for --scenario: a built-in's
// name, or a file's content, read here (the bridge opens no path a client
// names), bounded and checked first so that its errors name the file, line
// and field.
func readScenario(arg string) (name, text string, err error) {
	if arg == "" {
		return "", "", nil
	}
	f, err := os.Open(arg)
	if err != nil {
		if _, berr := scenarios.Builtin(arg); berr == nil && errors.Is(err, os.ErrNotExist) {
			return arg, "", nil
		}
		return "", "", usagef("--scenario %s: neither a file (%v) nor a built-in (%s)", arg, err, strings.Join(scenarios.Names(), ", "))
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, bridgeapi.MaxScenarioText+1))
	if err != nil {
		return "", "", fmt.Errorf("--scenario %s: %w", arg, err)
	}
	if len(data) > bridgeapi.MaxScenarioText {
		return "", "", exitWithMessage{exitRejected, fmt.Sprintf("--scenario %s is over %d KiB, more than a bridge takes for a session's scenario", arg, bridgeapi.MaxScenarioText>>10)}
	}
	if _, err := scenarios.Parse(arg, data); err != nil {
		return "", "", exitWithMessage{exitRejected, err.Error()}
	}
	return "", string(data), nil
}

func runSessionLs(ctx context.Context, o *sessionOptions) error {
	c, err := o.conn.client(o.io)
	if err != nil {
		return err
	}
	all, err := c.Sessions(ctx)
	if err != nil {
		return err
	}
	if o.json {
		if all == nil {
			all = []*bridgeapi.Session{}
		}
		return printJSON(o.io.out, all)
	}
	tw := tabwriter.NewWriter(o.io.out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATUS\tEXIT\tSTARTED\tWAITING ON\tPROMPT")
	for _, ss := range all {
		exit := ""
		if ss.ExitCode != nil {
			exit = fmt.Sprint(*ss.ExitCode)
		}
		// What a client or the bridge wrote, escaped: a prompt may hold
		// anything, and a terminal acts on control sequences.
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", clip.Printable(ss.ID), clip.Printable(ss.Status), exit, ss.CreatedAt.Local().Format(time.DateTime), clip.Printable(ss.PendingQuestionID), clip.String(ss.Prompt, 50))
	}
	return tw.Flush()
}

func runSessionStop(ctx context.Context, o *sessionOptions) error {
	c, err := o.conn.client(o.io)
	if err != nil {
		return err
	}
	ss, err := c.StopSession(ctx, o.id)
	if err != nil {
		return err
	}
	if o.json {
		return printJSON(o.io.out, ss)
	}
	fmt.Fprintf(o.io.out, "%s %s\n", ss.ID, ss.Status)
	return nil
}

// sessionShown is session show's JSON: the session and its questions.
type sessionShown struct {
	*bridgeapi.Session
	Questions []*bridgeapi.Question `json:"questions"`
}

func runSessionShow(ctx context.Context, o *sessionOptions) error {
	c, err := o.conn.client(o.io)
	if err != nil {
		return err
	}
	ss, err := c.Session(ctx, o.id)
	if err != nil {
		return err
	}
	qs, err := c.Questions(ctx, "all", ss.ID)
	if err != nil {
		return err
	}
	if qs == nil {
		qs = []*bridgeapi.Question{}
	}
	if o.json {
		return printJSON(o.io.out, sessionShown{ss, qs})
	}
	w := o.io.out
	// Everything an agent or a client wrote is escaped: a terminal acts on
	// control sequences.
	status := clip.Printable(ss.Status)
	if ss.ExitCode != nil {
		status += fmt.Sprintf(" (exit status %d)", *ss.ExitCode)
	}
	fmt.Fprintf(w, "session %s: %s\n", clip.Printable(ss.ID), status)
	fmt.Fprintf(w, "  prompt:   %s\n", clip.String(ss.Prompt, 200))
	if ss.Scenario != "" {
		fmt.Fprintf(w, "  scenario: %s\n", clip.Printable(ss.Scenario))
	}
	fmt.Fprintf(w, "  agent:    %s\n", clip.Printable(ss.Claude))
	if ss.ClaudeSessionID != "" {
		fmt.Fprintf(w, "  its id:   %s (what --resume takes)\n", clip.Printable(ss.ClaudeSessionID))
	}
	fmt.Fprintf(w, "  started:  %s\n", ss.CreatedAt.Local().Format(time.DateTime))
	if !ss.EndedAt.IsZero() {
		fmt.Fprintf(w, "  ended:    %s\n", ss.EndedAt.Local().Format(time.DateTime))
	}
	if ss.Detail != "" {
		fmt.Fprintf(w, "  why:      %s\n", clip.String(ss.Detail, 500))
	}
	if len(qs) == 0 {
		fmt.Fprintln(w, "no questions")
		return nil
	}
	fmt.Fprintf(w, "%d question(s):\n", len(qs))
	for _, q := range qs {
		line := fmt.Sprintf("  %s  %s  asked %s", clip.Printable(q.ID), clip.Printable(q.Status), q.CreatedAt.Local().Format(time.TimeOnly))
		if !q.ResolvedAt.IsZero() {
			line += fmt.Sprintf(", after %v", q.ResolvedAt.Sub(q.CreatedAt).Round(time.Millisecond))
		}
		if q.Orphaned {
			line += " (its agent died with a previous bridge)"
		}
		fmt.Fprintln(w, line)
		for i, qq := range q.Questions {
			fmt.Fprintf(w, "    %d. %s\n", i+1, clip.String(qq.Question, 200))
			if a, ok := q.Answers[qq.Question]; ok {
				fmt.Fprintf(w, "       → %s\n", clip.String(a, 200))
			} else if d, ok := q.Draft[qq.Question]; ok {
				fmt.Fprintf(w, "       → %s (held: the other questions are not answered yet)\n", clip.String(d, 200))
			}
		}
		if q.Reason != "" {
			fmt.Fprintf(w, "    reason: %s\n", clip.String(q.Reason, 300))
		}
	}
	return nil
}

func runSessionLogs(ctx context.Context, o *sessionOptions) error {
	c, err := o.conn.client(o.io)
	if err != nil {
		return err
	}
	l, err := c.SessionLog(ctx, o.id)
	if err != nil {
		return err
	}
	if o.json {
		return printJSON(o.io.out, l)
	}
	w := o.io.out
	for _, e := range l.Events {
		fmt.Fprintln(w, describeBridgeEvent(e))
	}
	if len(l.Events) == 0 {
		fmt.Fprintln(w, "no events")
	}
	if strings.TrimSpace(l.Stderr) == "" {
		fmt.Fprintln(w, "the agent wrote nothing on stderr")
		return nil
	}
	fmt.Fprintln(w, "the agent's stderr (its end):")
	for _, line := range strings.Split(strings.TrimRight(l.Stderr, "\n"), "\n") {
		fmt.Fprintf(w, "  %s\n", clip.Printable(line))
	}
	return nil
}

// describeBridgeEvent is one line for a person about a logged event, every
// text from an agent or a client escaped.
func describeBridgeEvent(e bridgeapi.Event) string {
	t := e.Time.Local().Format("15:04:05.000")
	q := clip.Printable(e.QuestionID)
	by := ""
	if e.Rule != "" {
		by = " by the policy's " + clip.Printable(e.Rule)
	}
	switch e.Type {
	case bridgeapi.EventQuestion:
		var texts []string
		for _, qq := range e.Questions {
			texts = append(texts, clip.Quote(qq.Question, 200))
		}
		return fmt.Sprintf("%s %s asked %s", t, q, strings.Join(texts, ", "))
	case bridgeapi.EventAnswered, bridgeapi.EventHeld:
		keys := slices.Sorted(maps.Keys(e.Answers))
		var as []string
		for _, k := range keys {
			as = append(as, clip.Quote(k, 200)+"="+clip.Quote(e.Answers[k], 200))
		}
		verb := "answered"
		if e.Type == bridgeapi.EventHeld {
			verb = "held (" + clip.Printable(e.Reason) + ")"
		}
		return fmt.Sprintf("%s %s %s%s: %s", t, q, verb, by, strings.Join(as, ", "))
	case bridgeapi.EventStatus:
		line := fmt.Sprintf("%s session %s", t, clip.Printable(e.Status))
		if e.ExitCode != nil {
			line += fmt.Sprintf(" (exit status %d)", *e.ExitCode)
		}
		if e.PendingQuestionID != nil && *e.PendingQuestionID != "" {
			line += ", waiting for the user on " + clip.Printable(*e.PendingQuestionID)
		}
		if e.Detail != "" {
			line += ": " + clip.String(e.Detail, 300)
		}
		return line
	}
	line := fmt.Sprintf("%s %s %s%s", t, q, clip.Printable(strings.TrimPrefix(e.Type, "ask_user_")), by)
	if e.Reason != "" {
		line += ": " + clip.String(e.Reason, 300)
	}
	if e.Error != "" {
		line += ": " + clip.String(e.Error, 300)
	}
	return line
}
