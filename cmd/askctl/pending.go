package main

import (
	"context"
	"fmt"
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
