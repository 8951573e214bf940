package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/askctl/askctl/bridgeapi"
	"github.com/askctl/askctl/internal/clip"
	"github.com/askctl/askctl/surface"
	"github.com/urfave/cli/v3"
)

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
