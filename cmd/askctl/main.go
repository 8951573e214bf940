// Command askctl tests and scripts the ask-user protocol of Claude Code: it
// replays scenarios against fakeclaude or the real CLI, records sessions,
// and serves a scripted model API. Run askctl --help.
package main

import (
	"context"
	"os"

	"github.com/askctl/askctl/fakeclaude"
)

func main() {
	// Running as fakeclaude or the real-agent shim, askctl is the agent: the
	// programs it starts (MCP servers from --mcp-config, which may be askctl
	// itself) must not become agents too.
	if role := os.Getenv(fakeclaude.EnvRunAs); role != "" {
		os.Unsetenv(fakeclaude.EnvRunAs)
		getenv := func(k string) string {
			if k == fakeclaude.EnvRunAs {
				return role
			}
			return os.Getenv(k)
		}
		os.Exit(run(context.Background(), os.Args, getenv, os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(run(context.Background(), os.Args, os.Getenv, os.Stdin, os.Stdout, os.Stderr))
}
