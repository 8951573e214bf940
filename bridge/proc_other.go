//go:build !linux

package bridge

// procStart is "" where the bridge cannot tell one process from a later
// one with its pid: a restarted bridge then does not wait for a lost
// session's agent (see awaitAgentGone).
func procStart(int) string { return "" }

func killGroup(int) {}
