package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/askctl/askctl/bridgeapi"
	"github.com/askctl/askctl/internal/clip"
	"github.com/askctl/askctl/protocol"
	"github.com/askctl/askctl/surface"
	"github.com/urfave/cli/v3"
)

// Exit statuses of the commands that drive a bridge.
const (
	exitNothing    = 1 // pending --wait: nothing came within --timeout
	exitNotFound   = 4 // no such question or session
	exitResolved   = 5 // already answered, skipped, expired or withdrawn
	exitRejected   = 6 // the bridge refused the answer (unknown question, blank, wrong shape)
	exitBridgeDown = 7 // the bridge is unreachable, or the token is wrong
)

const bridgeExitHelp = `Exit status: 0 done, 1 nothing came in time (pending --wait), 2 usage,
3 another error, 4 no such question or session, 5 already answered, skipped,
expired or withdrawn (pending --wait --session: the session has ended, and
why), 6 answer rejected, 7 bridge unreachable or token refused,
130 interrupted (Ctrl-C, SIGTERM) before done; watch, which runs until
interrupted, exits 0 then.`

// ---- answer

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

// ---- skip

type skipOptions struct {
	conn      bridgeConn
	id        string
	reason    string
	interrupt bool
	json      bool
	io        *stdio
}

func newSkipCmd(s *stdio, runF func(context.Context, *skipOptions) error) *cli.Command {
	o := &skipOptions{io: s}
	if runF == nil {
		runF = runSkip
	}
	return &cli.Command{
		Name:  "skip",
		Usage: "decline a pending question: the agent gets a deny with the reason",
		Description: `Skips question ID: the bridge answers the agent with a deny whose message is
--reason (or a default that says the user skipped it), never an allow.
--interrupt also aborts the agent's turn.

` + bridgeExitHelp,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "id", Usage: "the question's id (q_…)", Destination: &o.id},
			&cli.StringFlag{Name: "reason", Usage: "what the agent is told", Destination: &o.reason},
			&cli.BoolFlag{Name: "interrupt", Usage: "also abort the agent's turn", Destination: &o.interrupt},
			&cli.BoolFlag{Name: "json", Usage: `print {"question_id","status","reason"} as JSON`, Destination: &o.json},
		}, o.conn.flags()...),
		Before: func(ctx context.Context, cmd *cli.Command) (context.Context, error) {
			if cmd.Args().Len() > 0 {
				if first := cmd.Args().First(); o.id == "" && looksLikeID(first) {
					return ctx, usagef("skip takes the question as --id: did you mean askctl skip --id %s?", first)
				}
				return ctx, usagef("skip takes no arguments (the reason goes in --reason), got %q", cmd.Args().First())
			}
			if o.id == "" {
				return ctx, usagef("--id is required: the question to skip")
			}
			return ctx, nil
		},
		Action: func(ctx context.Context, cmd *cli.Command) error { return runF(ctx, o) },
	}
}

func runSkip(ctx context.Context, o *skipOptions) error {
	p, err := o.conn.open(ctx, o.io, "", nil)
	if err != nil {
		return err
	}
	defer p.Close()
	reason := o.reason
	if reason == "" {
		reason = bridgeapi.DefaultSkipReason
	}
	if o.interrupt {
		in, ok := p.Conn.(surface.Interrupter)
		if !ok {
			return usagef("--interrupt: the %s surface cannot abort the agent's turn", p.surf.Kind())
		}
		err = in.SkipInterrupt(ctx, o.id, reason)
	} else {
		err = p.Skip(ctx, o.id, reason)
	}
	if err != nil {
		return surfaceErr(err)
	}
	if o.json {
		return printJSON(o.io.out, map[string]string{"question_id": o.id, "status": bridgeapi.QuestionSkipped, "reason": reason})
	}
	fmt.Fprintf(o.io.out, "skipped %s: %s\n", o.id, clip.Printable(reason))
	return nil
}

// ---- pending

type pendingOptions struct {
	conn    bridgeConn
	session string
	json    bool
	wait    bool
	timeout time.Duration
	io      *stdio
}

func newPendingCmd(s *stdio, runF func(context.Context, *pendingOptions) error) *cli.Command {
	o := &pendingOptions{io: s}
	if runF == nil {
		runF = runPending
	}
	return &cli.Command{
		Name:  "pending",
		Usage: "list the questions waiting for an answer (--wait: block until one is)",
		Description: `Lists the pending questions, oldest first: a table, or with --json an array of
questions ({"question_id","session_id","questions":[…],"timeout_seconds",
"created_at","deadline","draft","orphaned"}; a surface that does not tell
the time or the draft leaves those out).

--wait blocks until at least one question is pending (at once if one is),
at most --timeout: the building block of scripted answering. This loop
answers every question with its first option (examples/shell in askctl's
repository):

  set -o pipefail
  while q=$(askctl pending --wait --timeout 60s --json | jq -ce '.[0]'); do
    mapfile -t sets < <(jq -r '.questions | to_entries[] |
      "--set=\(.key + 1)=\(.value.options[0].label)"' <<<"$q")
    askctl answer --id "$(jq -r .question_id <<<"$q")" "${sets[@]}" || exit
  done

The table marks the questions of a request already answered and held.

` + bridgeExitHelp,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "session", Usage: "only this session's questions", Destination: &o.session},
			&cli.BoolFlag{Name: "json", Usage: "print a JSON array", Destination: &o.json},
			&cli.BoolFlag{Name: "wait", Usage: "block until a question is pending", Destination: &o.wait},
			&cli.DurationFlag{Name: "timeout", Value: 5 * time.Minute, Usage: "with --wait, how long to wait at most", Destination: &o.timeout},
		}, o.conn.flags()...),
		Before: func(ctx context.Context, cmd *cli.Command) (context.Context, error) {
			if cmd.Args().Len() > 0 {
				return ctx, usagef("pending takes no arguments, got %q", cmd.Args().First())
			}
			if o.timeout <= 0 {
				return ctx, usagef("--timeout: want a positive duration, got %v", o.timeout)
			}
			return ctx, nil
		},
		Action: func(ctx context.Context, cmd *cli.Command) error { return runF(ctx, o) },
	}
}

func runPending(ctx context.Context, o *pendingOptions) error {
	changed := make(chan struct{}, 1)
	var mu sync.Mutex
	var ended *surface.Event // the session's end, when --session names one that ended
	p, err := o.conn.open(ctx, o.io, o.session, func(e surface.Event) {
		if o.session != "" && e.Type == surface.EventStatus && e.Session == o.session && (e.Status == bridgeapi.StatusExited || e.Status == bridgeapi.StatusLost) {
			mu.Lock()
			ended = &e
			mu.Unlock()
		}
		select {
		case changed <- struct{}{}:
		default:
		}
	})
	if err != nil {
		return err
	}
	defer p.Close()
	ps, err := p.Pending(ctx)
	if err != nil {
		return surfaceErr(err)
	}
	if o.wait && len(ps) == 0 {
		deadline := time.NewTimer(o.timeout)
		defer deadline.Stop()
		for len(ps) == 0 {
			mu.Lock()
			e := ended
			mu.Unlock()
			if e != nil {
				// Nothing more will come: say why, at once.
				why := "it has ended"
				if e.Exit != nil {
					why = fmt.Sprintf("its agent exited with status %d", *e.Exit)
				}
				if e.Reason != "" && (e.Exit == nil || *e.Exit != 0) {
					why = clip.Printable(e.Reason)
				}
				return exitWithMessage{exitResolved, fmt.Sprintf("session %s will ask nothing more: %s", o.session, why)}
			}
			select {
			case <-changed:
			case <-deadline.C:
				return exitWithMessage{exitNothing, fmt.Sprintf("no question within %v", o.timeout)}
			case <-ctx.Done():
				return ctx.Err()
			}
			if ps, err = p.Pending(ctx); err != nil {
				return surfaceErr(err)
			}
		}
	}
	if o.json {
		if ps == nil {
			ps = []surface.Pending{}
		}
		return printJSON(o.io.out, ps)
	}
	if len(ps) == 0 {
		fmt.Fprintln(o.io.out, "no pending questions")
		return nil
	}
	tw := tabwriter.NewWriter(o.io.out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSESSION\tAGE\tEXPIRES\tQUESTION\tOPTIONS")
	now := time.Now()
	for _, q := range ps {
		age, expires := "", ""
		if !q.CreatedAt.IsZero() {
			age = now.Sub(q.CreatedAt).Round(time.Second).String()
		}
		if !q.Deadline.IsZero() {
			expires = q.Deadline.Sub(now).Round(time.Second).String()
		}
		if q.Orphaned {
			expires = "agent gone: an answer resumes it"
		}
		for i, qq := range q.Questions {
			id, sess, a, exp := q.QuestionID, q.Session, age, expires
			if i > 0 {
				id, sess, a, exp = "", "", "", ""
			}
			opts := optionsCell(qq)
			if held, ok := q.Draft[qq.Question]; ok {
				opts = "held: " + clip.Printable(held)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d. %s\t%s\n", id, sess, a, exp, i+1, clip.Printable(qq.Question), opts)
		}
	}
	return tw.Flush()
}

// optionsCell is a question's options as askctl pending lists them.
func optionsCell(q protocol.Question) string {
	labels := q.Labels()
	for i, l := range labels {
		labels[i] = clip.Printable(l)
	}
	opts := strings.Join(labels, " | ")
	if q.MultiSelect {
		opts += " (multiSelect)"
	}
	return opts
}

// ---- watch

type watchOptions struct {
	conn    bridgeConn
	session string
	json    bool
	io      *stdio
}

func newWatchCmd(s *stdio, runF func(context.Context, *watchOptions) error) *cli.Command {
	o := &watchOptions{io: s}
	if runF == nil {
		runF = runWatch
	}
	return &cli.Command{
		Name:  "watch",
		Usage: "stream the bridge's events: questions, answers, timeouts, sessions",
		Description: `Prints the bridge's events as they happen, until interrupted: one line each,
or with --json one JSON object a line (the event objects of the SSE stream,
with "seq"). It first prints the questions already pending. A dropped stream
is resumed where it stopped.

` + bridgeExitHelp,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "session", Usage: "only this session's events", Destination: &o.session},
			&cli.BoolFlag{Name: "json", Usage: "one JSON object a line", Destination: &o.json},
		}, o.conn.flags()...),
		Before: func(ctx context.Context, cmd *cli.Command) (context.Context, error) {
			if cmd.Args().Len() > 0 {
				return ctx, usagef("watch takes no arguments, got %q", cmd.Args().First())
			}
			return ctx, nil
		},
		Action: func(ctx context.Context, cmd *cli.Command) error { return runF(ctx, o) },
	}
}

func runWatch(ctx context.Context, o *watchOptions) error {
	events := make(chan surface.Event, 256)
	p, err := o.conn.open(ctx, o.io, o.session, func(e surface.Event) {
		select {
		case events <- e:
		case <-ctx.Done():
		}
	})
	if err != nil {
		return err
	}
	defer p.Close()
	for {
		select {
		case <-ctx.Done():
			return nil
		case e := <-events:
			if o.json {
				// The surface's own message where it has one (the
				// reference bridge's events, with seq), else the
				// harness's view of it.
				b := []byte(e.Raw)
				if len(b) == 0 {
					b, _ = json.Marshal(e)
				}
				fmt.Fprintf(o.io.out, "%s\n", b)
			} else {
				fmt.Fprintln(o.io.out, describeEvent(e))
			}
			if e.Type == surface.EventClosed {
				return fmt.Errorf("%w: the surface closed: %s", bridgeapi.ErrUnreachable, e.Reason)
			}
		}
	}
}

// describeEvent is one line for a person; text from the agent is quoted,
// so a control character in it cannot reach the terminal.
func describeEvent(ev surface.Event) string {
	at := ev.At
	if at.IsZero() {
		at = ev.T
	}
	t := at.Local().Format("15:04:05")
	switch ev.Type {
	case surface.EventQuestion:
		var qs []string
		for _, q := range ev.Questions {
			qs = append(qs, strconv.Quote(q.Question))
		}
		s := fmt.Sprintf("%s %s asked %s (session %s", t, ev.QuestionID, strings.Join(qs, ", "), ev.Session)
		if ev.Timeout > 0 {
			s += fmt.Sprintf(", %ds to answer", ev.Timeout)
		}
		return s + ")"
	case surface.EventAnswered, surface.EventHeld:
		keys := make([]string, 0, len(ev.Answers))
		for k := range ev.Answers {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var as []string
		for _, k := range keys {
			as = append(as, fmt.Sprintf("%q=%q", k, ev.Answers[k]))
		}
		verb := "answered"
		if ev.Type == surface.EventHeld {
			verb = "held (" + clip.Printable(ev.Reason) + ")"
		}
		if ev.By != "" {
			verb += " by the policy's " + clip.Printable(ev.By)
		}
		return fmt.Sprintf("%s %s %s: %s", t, ev.QuestionID, verb, strings.Join(as, ", "))
	case surface.EventExpired:
		return fmt.Sprintf("%s %s timed out: %s", t, ev.QuestionID, clip.Printable(ev.Reason))
	case surface.EventSkipped, surface.EventWithdrawn, surface.EventResumed:
		verb := ev.Type
		if ev.By != "" {
			verb += " by the policy's " + clip.Printable(ev.By)
		}
		return fmt.Sprintf("%s %s %s: %s", t, ev.QuestionID, verb, clip.Printable(ev.Reason))
	case surface.EventStatus:
		s := fmt.Sprintf("%s session %s %s", t, ev.Session, ev.Status)
		if ev.Exit != nil {
			s += fmt.Sprintf(" (exit %d)", *ev.Exit)
		}
		if ev.PendingID != "" {
			s += ", waiting for the user on " + ev.PendingID
		}
		if ev.Reason != "" {
			s += ": " + clip.Printable(ev.Reason)
		}
		return s
	case surface.EventTaken:
		return fmt.Sprintf("%s session %s taken over by another connection", t, ev.Session)
	case surface.EventClosed:
		return fmt.Sprintf("%s connection closed: %s", t, clip.Printable(ev.Reason))
	case surface.EventOther:
		if ev.QuestionID == "" && ev.Reason != "" {
			return fmt.Sprintf("%s %s", t, clip.Printable(ev.Reason))
		}
	}
	return fmt.Sprintf("%s %s %s", t, ev.Type, ev.QuestionID)
}

// exitWithMessage is an error with its own exit status and a message.
type exitWithMessage struct {
	code int
	msg  string
}

func (e exitWithMessage) Error() string { return e.msg }

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
