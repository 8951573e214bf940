package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"

	"github.com/askctl/askctl/fakeclaude/fakeapi"
	"github.com/askctl/askctl/internal/httpserve"
	"github.com/askctl/askctl/scenarios"
	"github.com/askctl/askctl/transcript"
	"github.com/urfave/cli/v3"
)

type modelOptions struct {
	addr     string
	scenario string
	io       *stdio
}

func newModelCmd(s *stdio, runF func(context.Context, *modelOptions) error) *cli.Command {
	o := &modelOptions{io: s}
	if runF == nil {
		runF = runModel
	}
	return &cli.Command{
		Name:      "model",
		Usage:     "serve a scenario's model turns as a fake Anthropic Messages API",
		ArgsUsage: "SCENARIO",
		Description: `Serves POST /v1/messages (streaming and not) and /v1/messages/count_tokens on
loopback, answering with the scenario's model turns, so the real claude CLI
plays the scenario offline and for free. It prints the environment to give the
CLI, then logs each request on stderr until interrupted.

Example:
  askctl model ask-multi &
  ANTHROPIC_BASE_URL=http://127.0.0.1:PORT ANTHROPIC_API_KEY=any \
  CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 claude -p --input-format stream-json \
    --output-format stream-json --verbose --permission-prompt-tool stdio`,
		Flags: []cli.Flag{&cli.StringFlag{Name: "addr", Value: "127.0.0.1:0", Usage: "address to listen on (loopback)", Destination: &o.addr}},
		Before: func(ctx context.Context, cmd *cli.Command) (context.Context, error) {
			if cmd.Args().Len() != 1 {
				return ctx, usagef("want one scenario, got %d", cmd.Args().Len())
			}
			o.scenario = cmd.Args().First()
			return ctx, o.validate()
		},
		Action: func(ctx context.Context, cmd *cli.Command) error { return runF(ctx, o) },
	}
}

func (o *modelOptions) validate() error {
	if _, _, err := net.SplitHostPort(o.addr); err != nil {
		return usagef("--addr: %v", err)
	}
	return nil
}

func runModel(ctx context.Context, o *modelOptions) error {
	sc, err := scenarios.Load(o.scenario)
	if err != nil {
		return usageError{err}
	}
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return err
	}
	log := transcript.NewWriter(o.io.err)
	srv := httpserve.New(fakeapi.New(sc, log))
	fmt.Fprintf(o.io.out, "ANTHROPIC_BASE_URL=http://%s\nANTHROPIC_API_KEY=sk-askctl-fake-key\nCLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1\n", ln.Addr())
	go func() { <-ctx.Done(); srv.Close() }()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
