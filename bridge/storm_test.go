//go:build !mutation

package bridge_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/askctl/askctl/bridge"
	"github.com/askctl/askctl/bridgeapi"
)

// BenchmarkAnswersDuringStartStorm measures what an answer waits while a
// burst of sessions starts (ASKCTL_STORM starts, default 300): answers to
// live questions, and late answers to questions a restart orphaned (each
// resumes its session). Neither may queue behind the starts: a resume takes
// a start slot of its own kind. Reported: p50 and p99 of each, the answer
// call's own time. Run it with -benchtime=1x.
func BenchmarkAnswersDuringStartStorm(b *testing.B) {
	storm := envInt("ASKCTL_STORM", 300)
	const each = 20
	for range b.N {
		e := newEnvTB(b, bridge.Config{}, false)
		// Orphans: sessions whose bridge stopped with their question pending.
		var orphans []*bridgeapi.Question
		for range each {
			s := e.start("late-answer", "Set up storage.")
			orphans = append(orphans, e.pending(s.ID, 1)[0])
		}
		e.b.Close()
		b2, err := bridge.New(e.cfg)
		if err != nil {
			b.Fatal(err)
		}
		e2 := withBridge(b, e, b2)
		var live []*bridgeapi.Question
		for range each {
			s := e2.start("ask-single", "Set up storage.")
			live = append(live, e2.pending(s.ID, 1)[0])
		}
		// The person answers through a surface of their own, connected
		// before the storm as a page or a chat client is: its answers
		// measure the bridge, not a new TCP connection waiting in the
		// accept queue behind a thousand (which a first call does here:
		// about 120 ms at 1000 starts).
		person := &bridgeapi.Client{URL: e2.c.URL, Token: e2.c.Token, HTTP: &http.Client{Transport: &http.Transport{}}}
		if _, err := person.Pending(context.Background(), ""); err != nil {
			b.Fatal(err)
		}
		// The storm: every start at once.
		var wg sync.WaitGroup
		for range storm {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _ = e2.c.StartSession(context.Background(), bridgeapi.StartOptions{Prompt: "storm", Scenario: "ask-single"})
			}()
		}
		time.Sleep(200 * time.Millisecond) // the storm is under way
		var liveT, lateT []time.Duration
		for i := range each {
			t0 := time.Now()
			if _, err := person.Answer(context.Background(), live[i].ID, map[string]bridgeapi.Answer{"1": {"Postgres"}}); err != nil {
				b.Errorf("live answer: %v", err)
			}
			liveT = append(liveT, time.Since(t0))
			t0 = time.Now()
			if _, err := person.Answer(context.Background(), orphans[i].ID, map[string]bridgeapi.Answer{"1": {"Postgres"}}); err != nil {
				b.Errorf("late answer: %v", err)
			}
			lateT = append(lateT, time.Since(t0))
		}
		wg.Wait()
		if testing.Verbose() {
			b.Logf("live answers: %v", liveT)
			b.Logf("late answers: %v", lateT)
		}
		b.ReportMetric(float64(percentile(liveT, 0.5).Microseconds())/1000, "live-p50-ms")
		b.ReportMetric(float64(percentile(liveT, 0.99).Microseconds())/1000, "live-p99-ms")
		b.ReportMetric(float64(percentile(lateT, 0.5).Microseconds())/1000, "late-p50-ms")
		b.ReportMetric(float64(percentile(lateT, 0.99).Microseconds())/1000, "late-p99-ms")
	}
}
