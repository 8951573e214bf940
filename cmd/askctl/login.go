package main

import (
	"context"
	"fmt"
	"time"

	"github.com/urfave/cli/v3"
)

type loginOptions struct {
	conn bridgeConn
	json bool
	io   *stdio
}

func newLoginCmd(s *stdio, runF func(context.Context, *loginOptions) error) *cli.Command {
	o := &loginOptions{io: s}
	if runF == nil {
		runF = runLogin
	}
	return &cli.Command{
		Name:  "login",
		Usage: "print a one-time link that opens the bridge's page in a browser",
		Description: `askctl serve serves a page at / where a person sees every session and answers
its questions. A browser logs in with a link that works once, within 10
minutes: it hands the page a key (signed with the token, good for 30 days or
until the token changes), which the page keeps in the browser's storage for
the bridge's address, and goes on to the page. The token itself is never in
a URL, so a link pasted later, or left in a history, opens nothing.

askctl serve prints such a link when it starts; this command prints another.

Examples:
  askctl login                # open what it prints
  xdg-open "$(askctl login)"
  askctl login --json         # {"url": "…", "expires_at": "…"}

` + bridgeExitHelp,
		Flags: append(o.conn.apiFlags(), &cli.BoolFlag{Name: "json", Usage: "print JSON", Destination: &o.json}),
		Before: func(ctx context.Context, cmd *cli.Command) (context.Context, error) {
			if cmd.Args().Len() > 0 {
				return ctx, usagef("login takes no arguments, got %q", cmd.Args().First())
			}
			return ctx, nil
		},
		Action: func(ctx context.Context, cmd *cli.Command) error { return runF(ctx, o) },
	}
}

func runLogin(ctx context.Context, o *loginOptions) error {
	c, err := o.conn.client(o.io)
	if err != nil {
		return err
	}
	url, exp, err := c.LoginURL(ctx)
	if err != nil {
		return err
	}
	if o.json {
		return printJSON(o.io.out, map[string]any{"url": url, "expires_at": exp.UTC().Format(time.RFC3339)})
	}
	fmt.Fprintln(o.io.out, url)
	return nil
}
