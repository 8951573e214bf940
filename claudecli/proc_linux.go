package claudecli

import (
	"os/exec"
	"syscall"
)

// dieWithParent has the kernel kill cmd when the process that started it
// dies. (The kernel means the thread that started it: the Go runtime ends
// a thread only when a goroutine locked to it exits, which ours never do.)
func dieWithParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
