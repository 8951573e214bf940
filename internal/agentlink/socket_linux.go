package agentlink

import "syscall"

// socket is a non-blocking, close-on-exec stream socket, in one call.
func socket(family int) (int, error) {
	return syscall.Socket(family, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC|syscall.SOCK_NONBLOCK, 0)
}
