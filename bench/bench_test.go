package bench

import (
	"errors"
	"testing"

	"github.com/askctl/askctl/scenarios"
)

// TestPlayable: the bench runs route sdk scenarios whose person answers or
// skips every question, and says why it cannot run another.
func TestPlayable(t *testing.T) {
	for name, ok := range map[string]bool{"ask-single": true, "ask-multi": true, "mcp-ask-single": false, "cancel-pending": false} {
		sc, err := scenarios.Builtin(name)
		if err != nil {
			t.Fatal(err)
		}
		err = Playable(sc)
		if (err == nil) != ok || err != nil && !errors.Is(err, ErrScenario) {
			t.Errorf("%s: Playable = %v, want ok=%v", name, err, ok)
		}
	}
}
