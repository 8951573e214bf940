// Command askctl tests and scripts the ask-user protocol of Claude Code: it
// replays scenarios against fakeclaude or the real CLI, records sessions,
// and serves a scripted model API. Run askctl --help.
package main

import (
	"context"
	"os"
)

func main() {
	os.Exit(run(context.Background(), os.Args, os.Getenv, os.Stdin, os.Stdout, os.Stderr))
}
