//go:build unix

package claudecli

import (
	"os/exec"
	"syscall"
)

// ownGroup starts the CLI in a process group of its own: a terminal's
// Ctrl-C reaches the program that launched it (a bridge, which then stops
// its sessions in order and keeps their questions), not the CLI directly.
func ownGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

// killGroup ends the CLI and what it started (MCP servers, tools).
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Process.Kill()
	}
}
