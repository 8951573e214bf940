package replay_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/askctl/askctl/internal/agent"
	"github.com/askctl/askctl/internal/replay"
	"github.com/askctl/askctl/internal/shape"
	"github.com/askctl/askctl/internal/testenv"
	"github.com/askctl/askctl/scenarios"
	"github.com/askctl/askctl/transcript"
	"github.com/tidwall/gjson"
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

// TestReplayUserMessagesAndDefaultModel: with --replay-user-messages and no
// --model, fakeclaude writes what the real CLI 2.1.330 writes: the prompt
// echoed after system/init (isReplay), every control_response it receives
// echoed back, and the default model in system/init.
func TestReplayUserMessagesAndDefaultModel(t *testing.T) {
	claude := testenv.RealClaude(t)
	sc, err := scenarios.Builtin("ask-multi")
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"--output-format=stream-json", "--verbose", "--input-format=stream-json", "--permission-prompt-tool=stdio", "--replay-user-messages"}
	o := replay.Options{Timeout: 60 * time.Second, Args: args}
	fake := replay.Replay(context.Background(), sc, fake, o)
	real := replay.Replay(context.Background(), sc, agent.Real{Claude: claude}, o)
	for _, r := range []replay.Report{fake, real} {
		if r.Err != nil {
			t.Fatalf("%s: %v", r.Agent, r.Err)
		}
	}
	if d := shape.Compare(replay.Normalize(real.Records), replay.Normalize(fake.Records)); len(d) != 0 {
		t.Errorf("fakeclaude differs from the real CLI:\n%v", d)
	}
	for _, r := range []replay.Report{fake, real} {
		var model string
		replays, echoes := 0, 0
		for _, rec := range r.Records {
			if rec.Dir != transcript.FromCLI {
				continue
			}
			m := gjson.ParseBytes(rec.Msg)
			switch {
			case m.Get("subtype").String() == "init":
				model = m.Get("model").String()
			case m.Get("isReplay").Bool():
				replays++
			case m.Get("type").String() == "control_response" && m.Get("response.response.behavior").String() == "allow":
				echoes++
			}
		}
		if model != "claude-opus-5-5" || replays != 1 || echoes != 1 {
			t.Errorf("%s agent: model %q, %d prompt echoes, %d control_response echoes; want claude-opus-5-5, 1, 1", r.Agent, model, replays, echoes)
		}
	}
}
