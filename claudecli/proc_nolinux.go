//go:build !linux

package claudecli

import "os/exec"

// dieWithParent is Linux's alone; elsewhere the CLI outlives a launcher
// killed outright.
func dieWithParent(*exec.Cmd) {}
