package harness

import "syscall"

// dieWithParent has the kernel kill a process askctl started (a bridge, an
// exec surface) when askctl itself dies, however it dies: a run killed by
// a deadline or kill -9 leaves no bridge running, though each is in a
// process group of its own.
func dieWithParent(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
