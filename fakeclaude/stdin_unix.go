//go:build linux || darwin || freebsd || netbsd || openbsd

package fakeclaude

import (
	"io"
	"os"
	"runtime"
	"syscall"
)

// pollableStdin is stdin read through the runtime's poller where it is a
// pipe or a socket, as a bridge gives it (node, which runs the real CLI,
// does the same): a read waiting for the next line then parks a goroutine,
// not a thread, and the runtime starts no thread to stand in for it. done
// puts the descriptor back in blocking mode, for whoever shares it after
// fakeclaude. A terminal or a file is left as it is.
func pollableStdin() (r io.Reader, done func()) {
	var st syscall.Stat_t
	if err := syscall.Fstat(0, &st); err != nil {
		return os.Stdin, func() {}
	}
	if kind := st.Mode & syscall.S_IFMT; kind != syscall.S_IFIFO && kind != syscall.S_IFSOCK {
		return os.Stdin, func() {}
	}
	if err := syscall.SetNonblock(0, true); err != nil {
		return os.Stdin, func() {}
	}
	// NewFile sees the non-blocking descriptor and polls it. f must stay
	// reachable: its finalizer would close descriptor 0.
	f := os.NewFile(0, "/dev/stdin")
	return f, func() {
		_ = syscall.SetNonblock(0, false)
		runtime.KeepAlive(f)
	}
}
