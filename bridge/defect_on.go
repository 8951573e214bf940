//go:build askctl_broken

package bridge

import "os"

// A bridge built with -tags askctl_broken has the one defect named by
// ASKCTL_DEFECT, for the conformance suite's own tests. Never shipped.
var activeDefect = os.Getenv("ASKCTL_DEFECT")

func defect(name string) bool { return activeDefect == name }

// Defects are the defects a broken bridge can have, each a mistake seen in
// real bridges.
var Defects = []string{
	"skip-allow-empty", "multi-comma", "multi-one-label", "keys-index", "no-timeout", "timeout-allow",
	"late-forwarded", "double-answer", "lost-on-reconnect", "takeover-ignored", "sessions-crossed",
	"descriptions-dropped", "cancel-ignored", "lost-on-restart", "partial-sent",
}
