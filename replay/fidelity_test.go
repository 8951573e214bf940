package replay_test

import (
	"context"
	"strings"
	"testing"

	"github.com/askctl/askctl/replay"
	"github.com/askctl/askctl/scenarios"
)

// TestFidelity plays every built-in scenario with fakeclaude and with the real
// claude CLI (against the fake model API) and requires equal normalized
// transcripts.
func TestFidelity(t *testing.T) {
	real := realCLI(t)
	for _, name := range scenarios.Names() {
		t.Run(name, func(t *testing.T) {
			sc, err := scenarios.Builtin(name)
			if err != nil {
				t.Fatal(err)
			}
			fr := replay.Fidelity(context.Background(), sc, fake, real, opts)
			t.Logf("%s: fakeclaude %v, claude %s %v", name, fr.Fake.Duration, fr.RealVersion, fr.Real.Duration)
			if !fr.Equal {
				for _, d := range fr.Diffs {
					t.Errorf("fake vs real: %s", d)
				}
				for _, d := range fr.Fake.Diffs {
					t.Errorf("fake vs scenario: %s", d)
				}
				for _, d := range fr.Real.Diffs {
					t.Errorf("real vs scenario: %s", d)
				}
			}
		})
	}
}

// TestFidelityCatchesDrift: a fakeclaude that drops a key or changes a text is
// reported, at the message where it drifts.
func TestFidelityCatchesDrift(t *testing.T) {
	real := realCLI(t)
	sc, err := scenarios.Builtin("ask-multi")
	if err != nil {
		t.Fatal(err)
	}
	fr := replay.Fidelity(context.Background(), sc, mutant{fake, `,"requires_user_interaction":true`, ``}, real, opts)
	if fr.Equal {
		t.Fatal("fidelity found no difference with a fakeclaude that drops requires_user_interaction")
	}
	found := false
	for _, d := range fr.Diffs {
		if strings.Contains(d.String(), "from_cli control_request/can_use_tool: missing keys request.requires_user_interaction") {
			found = true
		}
	}
	if !found {
		t.Errorf("diffs %v do not name the missing key", fr.Diffs)
	}
}
