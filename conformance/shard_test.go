package conformance_test

import (
	"strings"
	"testing"
	"time"

	"github.com/askctl/askctl/conformance"
)

// TestShardsCoverEveryCaseOnce: n shards together hold every case, each in
// one shard, for any n; merging their reports gives every result once.
func TestShardsCoverEveryCaseOnce(t *testing.T) {
	names := conformance.CaseNames()
	for _, n := range []int{1, 2, 3, 4, len(names), len(names) + 3} {
		count := map[string]int{}
		var reps []*conformance.Report
		for k := 1; k <= n; k++ {
			in := conformance.Shard(k, n)
			rep := &conformance.Report{Profile: "p", Agent: "fake", Started: time.Unix(int64(100-k), 0), Duration: time.Duration(k) * time.Second}
			for _, name := range names {
				if in(name) {
					count[name]++
					rep.Results = append(rep.Results, conformance.Result{Case: name, Status: conformance.Pass})
				}
			}
			reps = append(reps, rep)
		}
		for _, name := range names {
			if count[name] != 1 {
				t.Errorf("%d shards: case %s is in %d of them", n, name, count[name])
			}
		}
		m, err := conformance.Merge(reps...)
		if err != nil {
			t.Fatalf("%d shards: %v", n, err)
		}
		if len(m.Results) != len(names) || m.Duration != time.Duration(n)*time.Second || !m.Started.Equal(time.Unix(int64(100-n), 0)) {
			t.Errorf("%d shards merged: %d results, %v, started %v", n, len(m.Results), m.Duration, m.Started)
		}
		for i := 1; i < len(m.Results); i++ {
			if m.Results[i-1].Case >= m.Results[i].Case {
				t.Errorf("merged results out of order at %d", i)
			}
		}
	}
	a := &conformance.Report{Profile: "p", Agent: "fake", Results: []conformance.Result{{Case: "X"}}}
	if _, err := conformance.Merge(a, a); err == nil || !strings.Contains(err.Error(), "case X") {
		t.Errorf("a case in two reports: %v", err)
	}
	b := &conformance.Report{Profile: "q", Agent: "fake"}
	if _, err := conformance.Merge(a, b); err == nil || !strings.Contains(err.Error(), "one run") {
		t.Errorf("reports of two bridges: %v", err)
	}
}
