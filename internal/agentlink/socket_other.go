//go:build unix && !linux

package agentlink

import "syscall"

// socket is a non-blocking, close-on-exec stream socket. Without Linux's
// socket flags, close-on-exec is set under the fork lock, so no child
// started meanwhile inherits it.
func socket(family int) (int, error) {
	syscall.ForkLock.RLock()
	fd, err := syscall.Socket(family, syscall.SOCK_STREAM, 0)
	if err == nil {
		syscall.CloseOnExec(fd)
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return -1, err
	}
	if err := syscall.SetNonblock(fd, true); err != nil {
		syscall.Close(fd)
		return -1, err
	}
	return fd, nil
}
