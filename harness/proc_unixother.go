//go:build unix && !linux

package harness

import "syscall"

// dieWithParent: only Linux can tie a child's life to its parent's.
func dieWithParent(*syscall.SysProcAttr) {}
