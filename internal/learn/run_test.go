package learn_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/askctl/askctl/claudecli"
	"github.com/askctl/askctl/internal/agent"
	"github.com/askctl/askctl/internal/learn"
	"github.com/askctl/askctl/internal/testenv"
	"github.com/askctl/askctl/scenarios"
)

// TestLearnRestoresARelease: learning the pinned release again, from the
// real CLI, gives the release file askctl ships, word for word but the
// date: deleting a release's data and learning it restores it, with no
// hand edits (the end-to-end tier: it runs the real CLI).
func TestLearnRestoresARelease(t *testing.T) {
	claude := testenv.RealClaude(t)
	v, err := claudecli.Version(context.Background(), claude)
	if err != nil {
		t.Fatal(err)
	}
	shipped, err := claudecli.Load(v)
	if err != nil {
		t.Fatalf("the real CLI is %s: %v", v, err)
	}
	var scs []*scenarios.Scenario
	for _, n := range scenarios.Names() {
		sc, err := scenarios.Load(n)
		if err != nil {
			t.Fatal(err)
		}
		scs = append(scs, sc)
	}
	var progress bytes.Buffer
	out, err := learn.Learn(context.Background(), learn.Options{Version: v, Real: agent.Real{Claude: claude}, Fake: agent.Fake{RunAs: "fakeclaude"},
		Scenarios: scs, Timeout: time.Minute, Work: t.TempDir(), Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	if out.Equal != out.Total {
		t.Fatalf("%d of %d equal after learning; unexpressed %q; remaining %q\n%s", out.Equal, out.Total, out.Unexpressed, out.Remaining, progress.String())
	}
	out.Release.AgentSDK, out.Release.Learned = shipped.AgentSDK, shipped.Learned
	got, _ := json.MarshalIndent(out.Release, "", "  ")
	want, _ := json.MarshalIndent(shipped, "", "  ")
	if !bytes.Equal(got, want) {
		t.Errorf("learned %s:\n%s\nshipped:\n%s", v, got, want)
	}
}
