package agentlink

import "time"

// SetDialTimeout sets the connect bound for a test, and returns the old one.
func SetDialTimeout(d time.Duration) time.Duration {
	old := dialTimeout
	dialTimeout = d
	return old
}
