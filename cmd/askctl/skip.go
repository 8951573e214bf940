package main

import (
	"context"
	"fmt"

	"github.com/askctl/askctl/bridgeapi"
	"github.com/askctl/askctl/internal/clip"
	"github.com/askctl/askctl/surface"
	"github.com/urfave/cli/v3"
)

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
