//go:build !mutation

package bridge_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptrace"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
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
		// The storm: every start at once, from another process, as the
		// clients of a bridge are (in this one, their thousand goroutines
		// would be ahead of the person's in this process's run queue).
		driver := exec.Command(os.Args[0], "-test.run=^$")
		driver.Env = append(os.Environ(), envStormDriver+"="+e2.c.URL+" "+e2.c.Token+" "+strconv.Itoa(storm))
		driver.Stderr = os.Stderr
		stdout, err := driver.StdoutPipe()
		if err != nil {
			b.Fatal(err)
		}
		if err := driver.Start(); err != nil {
			b.Fatal(err)
		}
		// It says when its requests are all sent; the answers follow.
		if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "sent\n" {
			b.Fatalf("the storm driver: %q %v", line, err)
		}
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
		if err := driver.Wait(); err != nil {
			b.Fatalf("the storm driver: %v", err)
		}
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

// envStormDriver makes this test binary the storm's clients: "URL TOKEN N"
// starts N sessions at once on the bridge at URL, says "sent" on stdout
// once every request is on its way, and exits when all are answered (1 if
// one failed).
const envStormDriver = "_ASKCTL_STORM_DRIVER"

func stormDriver() {
	spec := os.Getenv(envStormDriver)
	if spec == "" {
		return
	}
	var url, token string
	var n int
	if _, err := fmt.Sscan(spec, &url, &token, &n); err != nil {
		fmt.Fprintf(os.Stderr, "storm driver: %q: %v\n", spec, err)
		os.Exit(2)
	}
	c := &bridgeapi.Client{URL: url, Token: token, HTTP: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n}}}
	var wg sync.WaitGroup
	var sent sync.WaitGroup
	var failed atomic.Int32
	for range n {
		wg.Add(1)
		sent.Add(1)
		go func() {
			defer wg.Done()
			wrote := sync.OnceFunc(sent.Done) // once, retried or failed
			defer wrote()
			trace := &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { wrote() }}
			ctx := httptrace.WithClientTrace(context.Background(), trace)
			if _, err := c.StartSession(ctx, bridgeapi.StartOptions{Prompt: "storm", Scenario: "ask-single"}); err != nil {
				fmt.Fprintf(os.Stderr, "storm driver: %v\n", err)
				failed.Add(1)
			}
		}()
	}
	sent.Wait()
	fmt.Println("sent")
	wg.Wait()
	if failed.Load() > 0 {
		os.Exit(1)
	}
	os.Exit(0)
}
