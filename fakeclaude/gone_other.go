//go:build !(linux || darwin || freebsd || netbsd || openbsd)

package fakeclaude

import "os"

// watchReaderGone is not available here: a closed stdout is found at the
// next write.
func watchReaderGone(*os.File) <-chan struct{} { return nil }
