//go:build linux || darwin || freebsd || netbsd || openbsd

package fakeclaude

import (
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// watchReaderGone returns a channel closed when the reading end of f — a
// pipe or socket — is closed: the SDK side closed its stdout reader or died.
// fakeclaude learns it while blocked waiting for an answer, when it writes
// nothing. For other files (a regular file, a terminal) it returns nil.
func watchReaderGone(f *os.File) <-chan struct{} {
	fi, err := f.Stat()
	if err != nil || fi.Mode()&(os.ModeNamedPipe|os.ModeSocket) == 0 {
		return nil
	}
	// The descriptor, without f.Fd(), which would put it in blocking mode.
	rc, err := f.SyscallConn()
	if err != nil {
		return nil
	}
	fd := -1
	if rc.Control(func(u uintptr) { fd = int(u) }) != nil || fd < 0 {
		return nil
	}
	gone := make(chan struct{})
	go func() {
		// POLLERR and POLLHUP are reported whatever the events asked for;
		// asking for none keeps a writable pipe from waking the poll.
		fds := []unix.PollFd{{Fd: int32(fd)}}
		for {
			_, err := unix.Poll(fds, -1)
			if err != nil && !errors.Is(err, syscall.EINTR) {
				return
			}
			if fds[0].Revents&(unix.POLLERR|unix.POLLHUP|unix.POLLNVAL) != 0 {
				close(gone)
				return
			}
		}
	}()
	return gone
}
