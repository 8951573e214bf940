package replay_test

import (
	"context"
	"testing"

	"github.com/askctl/askctl/internal/agent"
	"github.com/askctl/askctl/internal/replay"
	"github.com/askctl/askctl/internal/testenv"
	"github.com/askctl/askctl/scenarios"
)

// BenchmarkAskMulti plays the same ask-multi session with fakeclaude and with
// the real CLI against the fake model API, side by side in one run: spawn,
// initialize, prompt, question, answer, tool_result, result, exit. It reports
// time per session and the agent process's peak memory.
func BenchmarkAskMulti(b *testing.B) {
	sc, err := scenarios.Builtin("ask-multi")
	if err != nil {
		b.Fatal(err)
	}
	for _, ag := range []agent.Agent{agent.Fake{Exe: testenv.BuildFakeclaude(b)}, agent.Real{Claude: testenv.RealClaude(b)}} {
		b.Run(ag.Name(), func(b *testing.B) {
			var peak int64
			for b.Loop() {
				rep := replay.Replay(context.Background(), sc, ag, opts)
				if !rep.Match {
					b.Fatalf("%s: %s %v", ag.Name(), rep.Error, rep.Diffs)
				}
				peak = max(peak, rep.PeakRSS)
			}
			b.ReportMetric(float64(peak)/(1<<20), "peak-MiB")
		})
	}
}
