// Command fakeclaude-mcp is fakeclaude's MCP client: fakeclaude starts it
// when a session has --mcp-config servers and asks it, over its stdin and
// stdout, to connect to them and call their tools with the official Go MCP
// SDK, which fakeclaude itself does not link (its start stays fast). It is
// not meant to be run by hand; it ends when its input ends.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/askctl/askctl/claudecli/mcpclient"
	"github.com/askctl/askctl/fakeclaude/mcplink"
)

func main() {
	// A terminal's Ctrl-C reaches fakeclaude, which closes this helper's
	// input; SIGTERM ends it the same way.
	signal.Ignore(syscall.SIGINT)
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		<-term
		_ = os.Stdin.Close()
	}()
	if err := mcplink.Serve(context.Background(), mcpclient.Dialer{}, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
