//go:build unix && !linux

package harness

import "syscall"

// dieWithParent: only Linux can tie a child's life to its parent's.
func dieWithParent(*syscall.SysProcAttr) {}

// procStart: no portable way to tell a process from a later one given its
// pid, so the harness kills no agent by pid here.
func procStart(int) (uint64, bool) { return 0, false }

func killAgent(int, uint64) {}
