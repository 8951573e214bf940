//go:build unix

package proc

import (
	"os/exec"
	"syscall"
)

// SetGroup puts cmd (a bridge, an exec surface) in a process group of its
// own, so KillGroup can end whatever it left running, and has it die with
// askctl (DieWithParent).
func SetGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	DieWithParent(cmd.SysProcAttr)
}

// Terminate asks cmd to end (SIGTERM).
func Terminate(cmd *exec.Cmd) error { return cmd.Process.Signal(syscall.SIGTERM) }

// KillGroup kills cmd's process group (SIGKILL).
func KillGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
