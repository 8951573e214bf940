package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/askctl/askctl/bridgeapi"
	"github.com/askctl/askctl/internal/clip"
	"github.com/askctl/askctl/protocol"
	"github.com/urfave/cli/v3"
)

type answerOptions struct {
	conn     bridgeConn
	id       string
	question string
	text     string
	set      []string
	labels   []string
	json     bool
	io       *stdio
}

func newAnswerCmd(s *stdio, runF func(context.Context, *answerOptions) error) *cli.Command {
	o := &answerOptions{io: s}
	if runF == nil {
		runF = runAnswer
	}
	return &cli.Command{
		Name:      "answer",
		Usage:     "answer a pending question",
		ArgsUsage: "--id ID [LABEL…]",
		Description: `Answers question ID on the running bridge. The labels are the answer:
exactly one for a single-select question, one or more (in the order the
person picked them) for a multiSelect one, which the bridge joins with ", ".
A label must be one of the question's options (exit 6 otherwise); --text
gives free text instead, verbatim.

A request can hold 1 to 4 questions. With one, the labels answer it. With
several, labels that are options of exactly one of them answer that one;
otherwise say which: --question N (its number from 1, or its full text) for
the labels or --text of this call, or --set N=LABEL for any number of them in
one call (repeat --set N=… for each label of a multiSelect question). Answers
to part of a request are held by the bridge until every question has one:
the agent never gets a partial set.

The answer goes through the bridge's surface, as a person's would: the
reference bridge's HTTP API by default, or any bridge's surface with
--bridge PROFILE. --json prints the bridge's acknowledgement:
{"status":"answered"|"held","missing":[…],"answers":{…},"resumed":true}.

` + bridgeExitHelp + `

Examples:
  askctl answer --id q_3kd9s2mf Postgres
  askctl answer --id q_3kd9s2mf --text "Whatever is already installed"
  askctl answer --id q_8a2b --set 1=Summary --set 2=Intro --set 2=Outro
  askctl answer --id q_8a2b --question 2 Intro Outro`,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "id", Usage: "the question's id (q_…)", Destination: &o.id},
			&cli.StringFlag{Name: "question", Aliases: []string{"q"}, Usage: "which question of the request the labels or --text answer: its number from 1, or its text", Destination: &o.question},
			&cli.StringFlag{Name: "text", Usage: "free text, verbatim, instead of labels", Destination: &o.text},
			&cli.StringSliceFlag{Name: "set", Usage: "N=LABEL: answer question N (number or text) with LABEL; repeatable", Destination: &o.set},
			&cli.BoolFlag{Name: "json", Usage: "print the bridge's answer as JSON", Destination: &o.json},
		}, o.conn.flags()...),
		Before: func(ctx context.Context, cmd *cli.Command) (context.Context, error) {
			o.labels = cmd.Args().Slice()
			return ctx, o.validate()
		},
		Action: func(ctx context.Context, cmd *cli.Command) error { return runF(ctx, o) },
	}
}

func (o *answerOptions) validate() error {
	switch {
	case o.id == "" && len(o.labels) > 0 && looksLikeID(o.labels[0]):
		return usagef("--id is required: did you mean askctl answer --id %s%s?", o.labels[0], quotedRest(o.labels[1:]))
	case o.id == "":
		return usagef("--id is required: the question to answer (askctl pending lists them)")
	case len(o.set) > 0 && (len(o.labels) > 0 || o.text != "" || o.question != ""):
		return usagef("--set goes alone: give each answer as --set N=LABEL")
	case o.text != "" && len(o.labels) > 0:
		return usagef("give labels or --text, not both")
	case len(o.set) == 0 && o.text == "" && len(o.labels) == 0:
		return usagef("no answer: give the label(s), --text, or --set N=LABEL")
	}
	for _, kv := range o.set {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return usagef("--set %q: want N=LABEL (N is the question's number from 1, or its text)", kv)
		}
	}
	return nil
}

// answersFor builds the answers to the request whose questions are qs
// (nil when the surface does not show it: the answer goes as given, and the
// bridge says why it is not pending), keyed by question text where qs are
// known. The answer rules are protocol's; labels must be options of their
// question (a typo is not sent as free text), and --text is the way to free
// text.
func (o *answerOptions) answersFor(qs []protocol.Question) (map[string][]string, error) {
	given := map[string][]string{}
	switch {
	case len(o.set) > 0:
		for _, kv := range o.set {
			k, v, _ := strings.Cut(kv, "=")
			given[k] = append(given[k], v)
		}
	default:
		key := o.question
		if key == "" && len(qs) > 1 {
			// Labels that name options of exactly one question answer it.
			i, ok := -1, false
			if o.text == "" {
				i, ok = protocol.QuestionOfLabels(qs, o.labels)
			}
			if !ok && o.text == "" {
				if err := notAnOption(o.id, qs, o.labels); err != nil {
					return nil, err
				}
			}
			if !ok {
				return nil, usagef("question %s holds %d questions: say which this answers with --question N, or give them all with --set N=LABEL", o.id, len(qs))
			}
			key = qs[i].Question
		}
		if key == "" {
			key = "1"
		}
		if o.text != "" {
			given[key] = []string{o.text}
		} else {
			given[key] = o.labels
		}
	}
	if len(qs) == 0 {
		return given, nil
	}
	out := map[string][]string{}
	for key, labels := range given {
		q, err := protocol.FindQuestion(qs, key)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", bridgeapi.ErrInvalid, err)
		}
		if o.text == "" {
			for _, l := range labels {
				if !protocol.IsLabel(q, l) {
					return nil, exitWithMessage{exitRejected, fmt.Sprintf("%q is not an option of %q (options: %s); for free text use --question %s --text %q", l, q.Question, strings.Join(q.Labels(), " | "), key, l)}
				}
			}
		}
		if _, dup := out[q.Question]; dup {
			return nil, fmt.Errorf("%w: question %q is answered twice", bridgeapi.ErrInvalid, q.Question)
		}
		out[q.Question] = labels
	}
	return out, nil
}

func runAnswer(ctx context.Context, o *answerOptions) error {
	p, err := o.conn.open(ctx, o.io, "", nil)
	if err != nil {
		return err
	}
	defer p.Close()
	q, _, err := p.find(ctx, o.id)
	if err != nil {
		return err
	}
	answers, err := o.answersFor(q.Questions)
	if err != nil {
		return err
	}
	ack, err := p.Answer(ctx, o.id, answers)
	if err != nil {
		return surfaceErr(err)
	}
	if o.json {
		return printJSON(o.io.out, ack)
	}
	w := o.io.out
	switch {
	case ack.Status == bridgeapi.AckHeld:
		fmt.Fprintf(w, "held %s: waiting for %s\n", o.id, quoteAll(ack.Missing))
		return nil
	case ack.Resumed:
		fmt.Fprintf(w, "answered %s late: its agent had stopped, and its session was resumed with the question and this answer as its next message.\n"+
			"  The agent goes on from there. If it asks again (fakeclaude does when its scenario has no resume.jsonl: the steps play again), that is a new question, with a new id.\n", o.id)
	default:
		fmt.Fprintf(w, "answered %s\n", o.id)
	}
	for _, qq := range q.Questions {
		if a, ok := ack.Answers[qq.Question]; ok {
			fmt.Fprintf(w, "  %s = %s\n", clip.Printable(qq.Question), clip.Printable(a))
		}
	}
	return nil
}

func quoteAll(xs []string) string {
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = strconv.Quote(x)
	}
	return strings.Join(q, ", ")
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// looksLikeID is a question's or a permission prompt's id, as the bridge
// makes them (q_…, p_…), given where a label was expected.
func looksLikeID(s string) bool {
	return len(s) > 2 && (strings.HasPrefix(s, "q_") || strings.HasPrefix(s, "p_")) && !strings.ContainsAny(s, " \t")
}

// quotedRest is words as a shell would take them back, each after a space.
func quotedRest(words []string) string {
	var b strings.Builder
	for _, w := range words {
		b.WriteByte(' ')
		if w != "" && !strings.ContainsAny(w, " \t'\"\\$`*?[]{}()<>|&;#~!") {
			b.WriteString(w)
		} else {
			b.WriteString("'" + strings.ReplaceAll(w, "'", `'\''`) + "'")
		}
	}
	return b.String()
}

// notAnOption is the error for a label that is an option of none of qs (a
// typo, most often): it names the nearest option, and every question's.
func notAnOption(id string, qs []protocol.Question, labels []string) error {
	for _, l := range labels {
		found := false
		for _, q := range qs {
			if protocol.IsLabel(q, l) {
				found = true
				break
			}
		}
		if found {
			continue
		}
		best, bestD := "", 3
		var options []string
		for i, q := range qs {
			options = append(options, fmt.Sprintf("%d. %s", i+1, strings.Join(q.Labels(), " | ")))
			for _, o := range q.Labels() {
				d := editDistance(strings.ToLower(l), strings.ToLower(o))
				if d < bestD && 2*d <= len(l) {
					best, bestD = o, d
				}
			}
		}
		msg := fmt.Sprintf("%q is not an option of any question of %s (options: %s)", l, id, strings.Join(options, "; "))
		if best != "" {
			msg += fmt.Sprintf("; did you mean %q?", best)
		}
		return exitWithMessage{exitRejected, msg + "; for free text use --question N --text"}
	}
	return nil
}
