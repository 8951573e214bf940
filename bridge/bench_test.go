//go:build !mutation

package bridge_test

import (
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/askctl/askctl/bridge"
	"github.com/askctl/askctl/bridgeapi"
	"github.com/askctl/askctl/fakeclaude"
	"github.com/askctl/askctl/internal/events"
	"github.com/askctl/askctl/internal/testenv"
	"github.com/askctl/askctl/transcript"
	"github.com/tidwall/gjson"
)

// latencies measures, per question, what the bridge adds: from fakeclaude
// writing the can_use_tool request to the surface event, and from the answer
// call to fakeclaude reading the control_response. fakeclaude's records
// arrive live over fakeclaude.Env.Events, stamped when it wrote or read a line.
type latencies struct {
	mu       sync.Mutex
	asked    map[string]time.Time // tool_use id → can_use_tool written
	answered map[string]time.Time // request id → control_response read
	requests map[string]string    // request id → tool_use id
}

func (l *latencies) Write(r transcript.Record) error {
	if !r.IsWire() {
		return nil
	}
	m := gjson.ParseBytes(r.Msg)
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case r.Dir == transcript.FromCLI && m.Get("request.subtype").String() == "can_use_tool":
		l.asked[m.Get("request.tool_use_id").String()+"/"+r.Session] = r.T
		l.requests[m.Get("request_id").String()] = m.Get("request.tool_use_id").String() + "/" + r.Session
	case r.Dir == transcript.ToCLI && m.Get("type").String() == "control_response":
		l.answered[m.Get("response.request_id").String()] = r.T
	}
	return nil
}

func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[min(len(ds)-1, int(float64(len(ds))*p))]
}

// BenchmarkLatency: one question a session, answered as soon as it shows on
// a surface (the event stream of the bridge, in process). Reports the p50 and
// p99 of the two latencies the bridge adds.
func BenchmarkLatency(b *testing.B) {
	dir := b.TempDir()
	hub, err := events.Listen("unix", filepath.Join(dir, "ev.sock"))
	if err != nil {
		b.Fatal(err)
	}
	defer hub.Close()
	lat := &latencies{asked: map[string]time.Time{}, answered: map[string]time.Time{}, requests: map[string]string{}}
	hub.Subscribe("", lat)
	e := newEnvTB(b, bridge.Config{Env: fakeclaude.Env{Events: hub.Addr()}.Environ()}, false)
	sub := e.b.Subscribe("")
	defer sub.Close()
	var toSurface, toAgent []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s, err := e.b.StartSession(bg, bridgeapi.StartOptions{Prompt: "Set up storage.", Scenario: "ask-single"})
		if err != nil {
			b.Fatal(err)
		}
		var ev bridgeapi.Event
		for ev.Type != bridgeapi.EventQuestion || ev.SessionID != s.ID {
			ev = <-sub.C
		}
		shown := time.Now()
		q, _ := e.b.Question(bg, ev.QuestionID)
		start := time.Now()
		if _, err := e.b.Answer(bg, q.ID, map[string]bridgeapi.Answer{"1": {"Postgres"}}); err != nil {
			b.Fatal(err)
		}
		for ev.Type != bridgeapi.EventStatus || ev.SessionID != s.ID || ev.Status != bridgeapi.StatusExited {
			ev = <-sub.C
		}
		lat.mu.Lock()
		var asked time.Time
		for rid, key := range lat.requests {
			if rid == q.RequestID {
				asked = lat.asked[key]
			}
		}
		answered := lat.answered[q.RequestID]
		lat.mu.Unlock()
		if asked.IsZero() || answered.IsZero() {
			b.Fatalf("question %s: no live record of the request or the response", q.ID)
		}
		toSurface = append(toSurface, shown.Sub(asked))
		toAgent = append(toAgent, answered.Sub(start))
	}
	b.StopTimer()
	b.ReportMetric(float64(percentile(toSurface, 0.5).Microseconds())/1000, "ms-to-surface-p50")
	b.ReportMetric(float64(percentile(toSurface, 0.99).Microseconds())/1000, "ms-to-surface-p99")
	b.ReportMetric(float64(percentile(toAgent, 0.5).Microseconds())/1000, "ms-to-agent-p50")
	b.ReportMetric(float64(percentile(toAgent, 0.99).Microseconds())/1000, "ms-to-agent-p99")
}

// TestConcurrentSessions: 50 sessions at once, no error, no lost answer.
func TestConcurrentSessions(t *testing.T) {
	if _, err := load(t, testenv.BuildFakeclaude(t), 50); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkLoad: ASKCTL_BENCH_SESSIONS (default 1000) sessions started at
// once through one bridge (Config.MaxStarting from
// ASKCTL_BENCH_MAX_STARTING, default the bridge's), with fakeclaude as make
// build builds it. Every
// question is answered over the HTTP API as soon as it shows on a surface
// (the bridge's event stream). Run it with -benchtime=1x. It reports, from
// the agents' own live records: question → surface (fakeclaude wrote the
// can_use_tool, the surface saw the question) and answer → agent (the
// answer call began, fakeclaude read the control_response), p50 and p99;
// sessions/s from the first start to the last exit; and the bridge's peak
// memory (this process; the agents are processes of their own). Every
// agent checks its answer: one wrong or lost fails the run.
func BenchmarkLoad(b *testing.B) {
	n := envInt("ASKCTL_BENCH_SESSIONS", 1000)
	bin := testenv.BuildFakeclaude(b)
	for i := 0; i < b.N; i++ {
		var self0, kids0 syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self0)
		_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids0)
		r, err := load(b, bin, n)
		if err != nil {
			b.Fatal(err)
		}
		var self1, kids1 syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self1)
		_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids1)
		// CPU per session: this process (the bridge, and the bench playing
		// the surfaces and reading the agents' records) and the agents.
		b.ReportMetric(cpuMs(self0, self1)/float64(n), "cpu-ms-bridge+bench/session")
		b.ReportMetric(cpuMs(kids0, kids1)/float64(n), "cpu-ms-agent/session")
		b.ReportMetric(float64(n)/r.elapsed.Seconds(), "sessions/s")
		for _, m := range []struct {
			name string
			ds   []time.Duration
			p    float64
		}{{"ms-to-surface-p50", r.toSurface, 0.5}, {"ms-to-surface-p99", r.toSurface, 0.99},
			{"ms-to-agent-p50", r.toAgent, 0.5}, {"ms-to-agent-p99", r.toAgent, 0.99}} {
			b.ReportMetric(float64(percentile(m.ds, m.p).Microseconds())/1000, m.name)
		}
	}
	if s, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, l := range strings.Split(string(s), "\n") {
			if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
				var kb float64
				fmt.Sscanf(strings.TrimSpace(v), "%f", &kb)
				b.ReportMetric(kb/1024, "bridge-peak-MiB")
			}
		}
	}
}

type loadResult struct {
	elapsed            time.Duration
	toSurface, toAgent []time.Duration
}

// load runs n sessions at once with agent bin and answers each question as
// it shows; every agent must get exactly its answer and exit 0. See
// BenchmarkLoad.
func load(tb testing.TB, bin string, n int) (*loadResult, error) {
	dir := tb.TempDir()
	hub, err := events.Listen("unix", filepath.Join(dir, "ev.sock"))
	if err != nil {
		return nil, err
	}
	defer hub.Close()
	lat := &latencies{asked: map[string]time.Time{}, answered: map[string]time.Time{}, requests: map[string]string{}}
	hub.Subscribe("", lat)
	b, err := bridge.New(bridge.Config{DB: filepath.Join(dir, "load.db"), Claude: bin, Dir: dir,
		Env:         fakeclaude.Env{Events: hub.Addr(), Timeout: 2 * time.Minute, Linger: 2 * time.Second}.Environ(),
		MaxStarting: envInt("ASKCTL_BENCH_MAX_STARTING", 0), SessionEnv: func(name, _ string) ([]string, string, error) {
			return fakeclaude.Env{Scenario: name}.Environ(), name, nil
		},
		StopGrace: 2 * time.Second})
	if err != nil {
		return nil, err
	}
	defer b.Close()
	srv := httptest.NewServer((&bridge.Server{B: b, Token: "t"}).Handler())
	defer srv.Close()
	c := &bridgeapi.Client{URL: srv.URL, Token: "t"}
	sub := b.Subscribe("")
	defer sub.Close()
	type shown struct {
		qid string
		at  time.Time
	}
	var (
		mu      sync.Mutex
		seen    []shown
		started []time.Time // answer calls' starts, by index in seen
		wg      sync.WaitGroup
		errs    = make(chan error, 2*n)
	)
	start := time.Now()
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c.StartSession(bg, bridgeapi.StartOptions{Prompt: "Set up storage.", Scenario: "ask-single"}); err != nil {
				errs <- err
			}
		}()
	}
	ended := map[string]bool{}
	deadline := time.After(10 * time.Minute)
	for len(ended) < n {
		select {
		case ev, ok := <-sub.C:
			if !ok {
				return nil, fmt.Errorf("the event subscription fell behind")
			}
			switch {
			case ev.Type == bridgeapi.EventQuestion:
				mu.Lock()
				i := len(seen)
				seen = append(seen, shown{ev.QuestionID, time.Now()})
				started = append(started, time.Time{})
				mu.Unlock()
				wg.Add(1)
				go func() {
					defer wg.Done()
					mu.Lock()
					qid := seen[i].qid
					started[i] = time.Now()
					mu.Unlock()
					if _, err := c.Answer(bg, qid, map[string]bridgeapi.Answer{"Which database should I use?": {"Postgres"}}); err != nil {
						errs <- fmt.Errorf("answer %s: %w", qid, err)
					}
				}()
			case ev.Type == bridgeapi.EventStatus && ev.Status == bridgeapi.StatusExited:
				ended[ev.SessionID] = true
			}
		case err := <-errs:
			return nil, err
		case <-deadline:
			return nil, fmt.Errorf("%d of %d sessions ended after 10 minutes", len(ended), n)
		}
	}
	r := &loadResult{elapsed: time.Since(start)}
	wg.Wait()
	close(errs)
	for err := range errs {
		return nil, err
	}
	all, _ := b.Sessions(bg)
	var bad []string
	for _, s := range all {
		if s.ExitCode == nil || *s.ExitCode != 0 {
			bad = append(bad, fmt.Sprintf("%s: %v %s", s.ID, s.ExitCode, s.Detail))
		}
	}
	if len(all) != n || len(bad) > 0 || len(seen) != n {
		return nil, fmt.Errorf("%d sessions, %d questions shown, failed: %s", len(all), len(seen), strings.Join(bad, "; "))
	}
	// Each agent checked its own answer (fakeclaude exits 4 otherwise); and
	// the database holds exactly n answered questions.
	if qs, _ := b.Questions(bg, bridgeapi.QuestionAnswered, ""); len(qs) != n {
		return nil, fmt.Errorf("%d answered questions in the database, want %d", len(qs), n)
	}
	lat.mu.Lock()
	defer lat.mu.Unlock()
	for i, sh := range seen {
		q, err := b.Question(bg, sh.qid)
		if err != nil {
			return nil, err
		}
		asked, answered := lat.asked[lat.requests[q.RequestID]], lat.answered[q.RequestID]
		if asked.IsZero() || answered.IsZero() {
			return nil, fmt.Errorf("question %s: no live record of the request or the response", q.ID)
		}
		r.toSurface = append(r.toSurface, sh.at.Sub(asked))
		r.toAgent = append(r.toAgent, answered.Sub(started[i]))
	}
	return r, nil
}

// envInt is the number in environment variable name, else def.
func envInt(name string, def int) int {
	n := def
	if v := os.Getenv(name); v != "" {
		fmt.Sscan(v, &n)
	}
	return n
}

func cpuMs(a, b syscall.Rusage) float64 {
	d := func(t syscall.Timeval) float64 { return float64(t.Sec)*1000 + float64(t.Usec)/1000 }
	return d(b.Utime) - d(a.Utime) + d(b.Stime) - d(a.Stime)
}
