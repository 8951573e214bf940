package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/askctl/askctl/fakeclaude/fakeapi"
	"github.com/askctl/askctl/scenarios"
	"github.com/askctl/askctl/transcript"
	"github.com/urfave/cli/v3"
)

func newModelCmd() *cli.Command {
	var addr string
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
		Flags: []cli.Flag{&cli.StringFlag{Name: "addr", Value: "127.0.0.1:0", Usage: "address to listen on (loopback)", Destination: &addr}},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.Args().Len() != 1 {
				return usagef("model: want one scenario, got %d", cmd.Args().Len())
			}
			sc, err := scenarios.Load(cmd.Args().First())
			if err != nil {
				return usageError{err}
			}
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return err
			}
			log := transcript.NewWriter(cmd.Root().ErrWriter)
			srv := &http.Server{Handler: fakeapi.New(sc, log), ReadHeaderTimeout: 10 * time.Second}
			fmt.Fprintf(cmd.Root().Writer, "ANTHROPIC_BASE_URL=http://%s\nANTHROPIC_API_KEY=sk-askctl-fake-key\nCLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1\n", ln.Addr())
			go func() { <-ctx.Done(); srv.Close() }()
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		},
	}
}
