//go:build !unix

package browser

// alive is true where the package cannot ask: no profile directory is swept.
func alive(int) bool { return true }
