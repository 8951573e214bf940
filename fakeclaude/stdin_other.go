//go:build !(linux || darwin || freebsd || netbsd || openbsd)

package fakeclaude

import (
	"io"
	"os"
)

// pollableStdin is stdin as it is here.
func pollableStdin() (io.Reader, func()) { return os.Stdin, func() {} }
