package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/askctl/askctl/bridgeapi"
	"github.com/askctl/askctl/internal/mcpask"
	"github.com/askctl/askctl/protocol"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/urfave/cli/v3"
)

type mcpOptions struct {
	conn        bridgeConn
	name        string
	printConfig bool
	io          *stdio
}

func newMCPCmd(s *stdio, runF func(context.Context, *mcpOptions) error) *cli.Command {
	o := &mcpOptions{io: s}
	if runF == nil {
		runF = runMCP
	}
	return &cli.Command{
		Name:  "mcp",
		Usage: "serve an MCP ask_user tool on stdio that asks through the running bridge",
		Description: `Runs an MCP server on stdin/stdout (for claude --mcp-config) with one tool,
ask_user: question (required), options (label, description) and multiSelect.
Each call becomes a question on the running bridge (askctl serve), shown on
every surface exactly like an AskUserQuestion — same ids, askctl answer and
skip, same timeout — and the call blocks until it is resolved:

  answered   text content naming the selected label(s), or the free text
  skipped    isError: the user declined, with their reason
  timed out  isError: the user did not respond in time
  The CLI going away withdraws the question from the surfaces.

--print-config writes the --mcp-config JSON that runs this server:

  askctl mcp --print-config > askctl-mcp.json
  claude -p "…" --mcp-config askctl-mcp.json --allowedTools mcp__askctl__ask_user

` + bridgeExitHelp,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "name", Value: "askctl", Usage: "the server's name in --print-config (the CLI names the tool mcp__NAME__ask_user)", Destination: &o.name},
			&cli.BoolFlag{Name: "print-config", Usage: "print the --mcp-config JSON that runs this server, and exit", Destination: &o.printConfig},
		}, o.conn.apiFlags()...),
		Before: func(ctx context.Context, cmd *cli.Command) (context.Context, error) {
			if cmd.Args().Len() > 0 {
				return ctx, usagef("mcp takes no arguments, got %q", cmd.Args().First())
			}
			if strings.TrimSpace(o.name) == "" || strings.ContainsAny(o.name, " _") {
				return ctx, usagef("--name %q: want a name without spaces or underscores", o.name)
			}
			return ctx, nil
		},
		Action: func(ctx context.Context, cmd *cli.Command) error { return runF(ctx, o) },
	}
}

func runMCP(ctx context.Context, o *mcpOptions) error {
	if o.printConfig {
		self, err := selfPath()
		if err != nil {
			return err
		}
		args := []string{"mcp"}
		if o.conn.state != "" {
			args = append(args, "--state", o.conn.state)
		}
		if o.conn.url != "" {
			args = append(args, "--url", o.conn.url)
		}
		cfg := map[string]any{"mcpServers": map[string]any{o.name: map[string]any{"type": "stdio", "command": self, "args": args}}}
		return printJSON(o.io.out, cfg)
	}
	c, err := o.conn.client(o.io)
	if err != nil {
		return err
	}
	label := fmt.Sprintf("askctl mcp (for pid %d)", os.Getppid())
	ss, err := c.OpenMCP(ctx, label)
	if err != nil {
		return err
	}
	fmt.Fprintf(o.io.err, "askctl mcp: asking through %s, session %s\n", c.URL, ss.ID)
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5e9)
		defer cancel()
		_, _ = c.StopSession(sctx, ss.ID)
	}()
	server := mcp.NewServer(&mcp.Implementation{Name: "askctl", Version: protocol.CLIVersion}, nil)
	mcp.AddTool(server, mcpask.Tool(),
		func(ctx context.Context, _ *mcp.CallToolRequest, in mcpask.Input) (*mcp.CallToolResult, any, error) {
			return askThroughBridge(ctx, c, ss.ID, in), nil, nil
		})
	t := &mcp.IOTransport{Reader: io.NopCloser(o.io.in), Writer: nopWriteCloser{o.io.out}}
	if err := server.Run(ctx, t); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
		return fmt.Errorf("mcp: %w", err)
	}
	return nil
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// askThroughBridge asks in the bridge and turns the resolution into the
// tool's result.
func askThroughBridge(ctx context.Context, c *bridgeapi.Client, session string, in mcpask.Input) *mcp.CallToolResult {
	if strings.TrimSpace(in.Question) == "" {
		return mcpask.Invalid("ask_user needs a question.")
	}
	res, err := c.AskMCP(ctx, session, []protocol.Question{in.AsQuestion()})
	if err != nil {
		if ctx.Err() != nil {
			return mcpask.Withdrawn("the call was cancelled.")
		}
		return mcpask.Invalid("The question could not be asked: " + err.Error())
	}
	switch res.Status {
	case bridgeapi.QuestionAnswered:
		return mcpask.Answered(in, res.Answers[in.Question])
	case bridgeapi.QuestionSkipped:
		return mcpask.Declined(res.Reason)
	case bridgeapi.QuestionExpired:
		return mcpask.TimedOut(res.TimeoutSeconds)
	}
	return mcpask.Withdrawn(fmt.Sprintf("%s: %s", res.Status, res.Reason))
}
