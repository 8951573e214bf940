package conformance_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/askctl/askctl/conformance"
	"github.com/askctl/askctl/harness"
)

// exploreFor is how long each exploration in the tests searches:
// ASKCTL_EXPLORE (a duration) sets it.
func exploreFor(t *testing.T, def time.Duration) time.Duration {
	if s := os.Getenv("ASKCTL_EXPLORE"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("ASKCTL_EXPLORE=%q: %v", s, err)
		}
		return d
	}
	return def
}

// TestExploreReference explores the reference bridge over each surface
// kind: it must find nothing.
func TestExploreReference(t *testing.T) {
	if testing.Short() {
		t.Skip("explores the reference bridge")
	}
	t.Parallel()
	for _, kind := range []string{"ws", "http", "control-ws"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			p, err := harness.LoadProfile(filepath.Join("profiles", "reference-"+kind+".json"))
			if err != nil {
				t.Fatal(err)
			}
			res, err := conformance.Explore(context.Background(), conformance.Config{Profile: p, Askctl: askctlBin},
				conformance.ExploreOptions{Duration: exploreFor(t, 20*time.Second), Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d sequences, %d steps, %d sessions, %d invariant checks in %v", res.Sequences, res.Steps, res.Sessions, res.Invariants, res.Elapsed)
			if f := res.Failure; f != nil {
				t.Fatalf("seed %d: %s %s: %s\n%s\nlog:\n%s", f.Seed, f.Status, f.Requirement, f.Detail, f.Case, f.Log)
			}
			if res.Sequences == 0 {
				t.Fatal("no sequence ran")
			}
		})
	}
}
