// Command fakeclaude is a drop-in claude executable that plays a scenario over
// Claude Code's SDK transport. Run fakeclaude --help for its environment and
// exit codes.
package main

import "github.com/askctl/askctl/fakeclaude"

func main() { fakeclaude.Main() }
