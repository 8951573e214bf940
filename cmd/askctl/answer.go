package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/askctl/askctl/bridgeapi"
	"github.com/askctl/askctl/protocol"
	"github.com/urfave/cli/v3"
)

// The commands that drive a running bridge share how they reach it: --url
// and --token (ASKCTL_URL, ASKCTL_TOKEN), else the state directory of the
// bridge askctl serve runs.

type bridgeConn struct {
	url, token, state string
	profile           string // --bridge: reach the bridge through a profile's surface
}

// flags are how a command reaches the bridge: the reference bridge's API,
// or any bridge through a profile's surface (--bridge).
func (c *bridgeConn) flags() []cli.Flag {
	return append(c.apiFlags(), &cli.StringFlag{Name: "bridge", Usage: "reach the bridge through the surface of this `PROFILE` (a file, or reference-ws|reference-http|reference-control-ws), as askctl conformance does", Destination: &c.profile})
}

// apiFlags reach the reference bridge's HTTP API only.
func (c *bridgeConn) apiFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "url", Usage: "the bridge's URL (default: the one askctl serve wrote to the state directory)", Destination: &c.url, Sources: cli.EnvVars("ASKCTL_URL")},
		&cli.StringFlag{Name: "token", Usage: "the bridge's token (default: the state directory's token file)", Destination: &c.token, Sources: cli.EnvVars("ASKCTL_TOKEN")},
		&cli.StringFlag{Name: "state", Usage: "the bridge's state directory", Destination: &c.state, Sources: cli.EnvVars(bridgeapi.EnvStateDir)},
	}
}

// client resolves the URL and token.
func (c *bridgeConn) client(s *stdio) (*bridgeapi.Client, error) {
	dir := c.state
	if dir == "" && (c.url == "" || c.token == "") {
		var err error
		if dir, err = bridgeapi.StateDir(s.getenv); err != nil {
			return nil, err
		}
	}
	url, token := c.url, c.token
	if url == "" {
		e, err := bridgeapi.ReadEndpoint(dir)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil, fmt.Errorf("%w: no bridge is running with state directory %s (start one with askctl serve, or pass --url)", bridgeapi.ErrUnreachable, dir)
			}
			return nil, fmt.Errorf("%w: %v", bridgeapi.ErrUnreachable, err)
		}
		url = e.URL
	}
	if token == "" {
		t, err := bridgeapi.ReadToken(dir)
		if err != nil {
			return nil, fmt.Errorf("%w: no token: %v (pass --token or ASKCTL_TOKEN)", bridgeapi.ErrUnauthorized, err)
		}
		token = t
	}
	return &bridgeapi.Client{URL: url, Token: token}, nil
}

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
expired or withdrawn, 6 answer rejected, 7 bridge unreachable or token refused.`

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
several, say which: --question N (its number from 1, or its full text) for
the labels or --text of this call, or --set N=LABEL for any number of them in
one call (repeat --set N=… for each label of a multiSelect question). Answers
to part of a request are held by the bridge until every question has one:
the agent never gets a partial set.

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

// answers builds the request's answers from the options. Labels must be
// options of their question (a typo is not sent as free text); --text is
// the way to free text.
func (o *answerOptions) answers(ctx context.Context, c *bridgeapi.Client) (map[string]bridgeapi.Answer, error) {
	q, err := c.Question(ctx, o.id)
	if err != nil {
		return nil, err
	}
	return o.answersFor(q)
}

// answersFor builds the answers to q, keyed as given (number or text).
func (o *answerOptions) answersFor(q *bridgeapi.Question) (map[string]bridgeapi.Answer, error) {
	out := map[string]bridgeapi.Answer{}
	if len(o.set) > 0 {
		for _, kv := range o.set {
			k, v, _ := strings.Cut(kv, "=")
			out[k] = append(out[k], v)
		}
	} else {
		key := o.question
		if key == "" {
			if len(q.Questions) > 1 {
				return nil, usagef("question %s holds %d questions: say which this answers with --question N, or give them all with --set N=LABEL", o.id, len(q.Questions))
			}
			key = "1"
		}
		if o.text != "" {
			return map[string]bridgeapi.Answer{key: {o.text}}, nil
		}
		out[key] = bridgeapi.Answer(o.labels)
	}
	for key, labels := range out {
		qq, err := protocol.FindQuestion(q.Questions, key)
		if err != nil {
			continue // the bridge names the unknown question
		}
		for _, l := range labels {
			if !isLabel(qq, l) {
				opts := make([]string, len(qq.Options))
				for i, op := range qq.Options {
					opts[i] = op.Label
				}
				return nil, exitWithMessage{exitRejected, fmt.Sprintf("%q is not an option of %q (options: %s); for free text use --question %s --text %q", l, qq.Question, strings.Join(opts, " | "), key, l)}
			}
		}
	}
	return out, nil
}

func isLabel(q protocol.Question, label string) bool {
	for _, op := range q.Options {
		if op.Label == label {
			return true
		}
	}
	return false
}

func runAnswer(ctx context.Context, o *answerOptions) error {
	if o.conn.profile != "" {
		return runAnswerProfile(ctx, o)
	}
	c, err := o.conn.client(o.io)
	if err != nil {
		return err
	}
	answers, err := o.answers(ctx, c)
	if err != nil {
		return err
	}
	res, err := c.Answer(ctx, o.id, answers)
	if err != nil {
		return err
	}
	if o.json {
		return printJSON(o.io.out, res)
	}
	q := res.Question
	switch {
	case res.Held:
		fmt.Fprintf(o.io.out, "held %s: waiting for %s\n", q.ID, quoteAll(res.Missing))
	case res.Resumed:
		fmt.Fprintf(o.io.out, "answered %s late: its session %s was resumed with the answer\n", q.ID, q.SessionID)
	default:
		fmt.Fprintf(o.io.out, "answered %s\n", q.ID)
	}
	if !res.Held {
		for _, qq := range q.Questions {
			fmt.Fprintf(o.io.out, "  %s = %s\n", qq.Question, q.Answers[qq.Question])
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
			&cli.BoolFlag{Name: "json", Usage: "print the question as JSON", Destination: &o.json},
		}, o.conn.flags()...),
		Before: func(ctx context.Context, cmd *cli.Command) (context.Context, error) {
			if cmd.Args().Len() > 0 {
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
	if o.conn.profile != "" {
		return runSkipProfile(ctx, o)
	}
	c, err := o.conn.client(o.io)
	if err != nil {
		return err
	}
	q, err := c.Skip(ctx, o.id, o.reason, o.interrupt)
	if err != nil {
		return err
	}
	if o.json {
		return printJSON(o.io.out, q)
	}
	fmt.Fprintf(o.io.out, "skipped %s: %s\n", q.ID, q.Reason)
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
"deadline",…}), the same objects the HTTP API returns.

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
	if o.conn.profile != "" {
		return runPendingProfile(ctx, o)
	}
	c, err := o.conn.client(o.io)
	if err != nil {
		return err
	}
	qs, err := c.Pending(ctx, o.session)
	if err != nil {
		return err
	}
	if o.wait && len(qs) == 0 {
		if qs, err = waitPending(ctx, c, o.session, o.timeout); err != nil {
			return err
		}
	}
	if o.json {
		if qs == nil {
			qs = []*bridgeapi.Question{}
		}
		return printJSON(o.io.out, qs)
	}
	if len(qs) == 0 {
		fmt.Fprintln(o.io.out, "no pending questions")
		return nil
	}
	tw := tabwriter.NewWriter(o.io.out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSESSION\tAGE\tEXPIRES\tQUESTION\tOPTIONS")
	now := time.Now()
	for _, q := range qs {
		expires := q.Deadline.Sub(now).Round(time.Second).String()
		if q.Orphaned {
			expires = "agent gone: an answer resumes it"
		}
		for i, qq := range q.Questions {
			id, sess, age, exp := q.ID, q.SessionID, now.Sub(q.CreatedAt).Round(time.Second).String(), expires
			if i > 0 {
				id, sess, age, exp = "", "", "", ""
			}
			opts := optionsCell(qq)
			if held, ok := q.Draft[qq.Question]; ok {
				opts = "held: " + held
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d. %s\t%s\n", id, sess, age, exp, i+1, qq.Question, opts)
		}
	}
	return tw.Flush()
}

// optionsCell is a question's options as askctl pending lists them.
func optionsCell(q protocol.Question) string {
	labels := make([]string, len(q.Options))
	for j, op := range q.Options {
		labels[j] = op.Label
	}
	opts := strings.Join(labels, " | ")
	if q.MultiSelect {
		opts += " (multiSelect)"
	}
	return opts
}

// waitPending follows the event stream until a question is pending.
func waitPending(ctx context.Context, c *bridgeapi.Client, session string, timeout time.Duration) ([]*bridgeapi.Question, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	errFound := errors.New("found")
	for {
		err := c.Events(ctx, session, -1, func(ev bridgeapi.Event) error {
			if ev.Type == bridgeapi.EventQuestion {
				return errFound
			}
			return nil
		})
		switch {
		case errors.Is(err, errFound):
			qs, err := c.Pending(context.Background(), session)
			if err != nil || len(qs) > 0 {
				return qs, err
			}
		case ctx.Err() != nil:
			return nil, exitWithMessage{exitNothing, fmt.Sprintf("no question within %v", timeout)}
		case errors.Is(err, bridgeapi.ErrUnreachable):
			// The stream ended (a bridge restart): look again, then follow anew.
			if qs, err := c.Pending(ctx, session); err == nil && len(qs) > 0 {
				return qs, nil
			}
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		default:
			return nil, err
		}
	}
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
	if o.conn.profile != "" {
		return runWatchProfile(ctx, o)
	}
	c, err := o.conn.client(o.io)
	if err != nil {
		return err
	}
	last := int64(-1) // a new client first, then resuming where it stopped
	connected := false
	for {
		err := c.Events(ctx, o.session, last, func(ev bridgeapi.Event) error {
			connected = true
			if ev.Seq > 0 {
				last = ev.Seq
			}
			if o.json {
				b, _ := json.Marshal(ev)
				_, err := fmt.Fprintf(o.io.out, "%s\n", b)
				return err
			}
			_, err := fmt.Fprintln(o.io.out, describeEvent(ev))
			return err
		})
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, bridgeapi.ErrUnreachable) && connected:
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(500 * time.Millisecond):
			}
		default:
			return err
		}
	}
}

func describeEvent(ev bridgeapi.Event) string {
	t := ev.Time.Local().Format("15:04:05")
	switch ev.Type {
	case bridgeapi.EventQuestion:
		var qs []string
		for _, q := range ev.Questions {
			qs = append(qs, strconv.Quote(q.Question))
		}
		return fmt.Sprintf("%s %s asked %s (session %s, %ds to answer)", t, ev.QuestionID, strings.Join(qs, ", "), ev.SessionID, ev.TimeoutSeconds)
	case bridgeapi.EventAnswered, bridgeapi.EventHeld:
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
		if ev.Type == bridgeapi.EventHeld {
			verb = "held (" + ev.Reason + ")"
		}
		return fmt.Sprintf("%s %s %s: %s", t, ev.QuestionID, verb, strings.Join(as, ", "))
	case bridgeapi.EventTimeout:
		return fmt.Sprintf("%s %s timed out: %s", t, ev.QuestionID, ev.Error)
	case bridgeapi.EventSkipped, bridgeapi.EventWithdrawn, bridgeapi.EventResumed:
		return fmt.Sprintf("%s %s %s: %s", t, ev.QuestionID, strings.TrimPrefix(ev.Type, "ask_user_"), ev.Reason)
	case bridgeapi.EventStatus:
		s := fmt.Sprintf("%s session %s %s", t, ev.SessionID, ev.Status)
		if ev.PendingQuestionID != nil {
			s += ", waiting for the user on " + *ev.PendingQuestionID
		}
		return s
	}
	return fmt.Sprintf("%s %s", t, ev.Type)
}

// exitWithMessage is an error with its own exit status and a message.
type exitWithMessage struct {
	code int
	msg  string
}

func (e exitWithMessage) Error() string { return e.msg }
