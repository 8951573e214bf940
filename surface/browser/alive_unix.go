//go:build unix

package browser

import (
	"errors"
	"syscall"
)

// alive reports whether a process with this pid runs (it may be another
// program that took the pid of one ended: its profile is then swept later).
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
