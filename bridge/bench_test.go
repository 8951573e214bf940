package bridge_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/askctl/askctl/bridge"
	"github.com/askctl/askctl/bridgeapi"
	"github.com/askctl/askctl/fakeclaude"
	"github.com/askctl/askctl/internal/events"
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

// concurrentSessions runs n sessions at once through one bridge, each
// answered over the HTTP API as soon as it asks, and checks every agent got
// exactly its answer and exited 0.
func concurrentSessions(tb testing.TB, n int) (time.Duration, error) {
	d, _, err := concurrentSessionsTimed(tb, n)
	return d, err
}

// loadTimes are what a person waits for while sessions start: reading a
// question (GET /api/questions/ID) and answering it (the answer is in the
// agent's stdin when the call returns).
type loadTimes struct {
	mu           sync.Mutex
	read, answer []time.Duration
}

func concurrentSessionsTimed(tb testing.TB, n int) (time.Duration, *loadTimes, error) {
	lt := &loadTimes{}
	e := newEnvTB(tb, bridge.Config{}, false)
	sub := e.b.Subscribe("")
	defer sub.Close()
	start := time.Now()
	ids := make(chan string, n)
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := e.c.StartSession(bg, bridgeapi.StartOptions{Prompt: "Set up storage.", Scenario: "ask-single"})
			if err != nil {
				errs <- err
				return
			}
			ids <- s.ID
		}()
	}
	// Answer each question as it shows; count the sessions that end.
	answered, ended := 0, 0
	deadline := time.After(5 * time.Minute)
	exits := map[string]int{}
	for ended < n {
		select {
		case ev, ok := <-sub.C:
			if !ok {
				return 0, nil, fmt.Errorf("the event subscription fell behind")
			}
			switch {
			case ev.Type == bridgeapi.EventQuestion:
				qid := ev.QuestionID
				wg.Add(1)
				go func() {
					defer wg.Done()
					t0 := time.Now()
					if _, err := e.c.Question(bg, qid); err != nil {
						errs <- fmt.Errorf("question %s: %w", qid, err)
						return
					}
					t1 := time.Now()
					if _, err := e.c.Answer(bg, qid, map[string]bridgeapi.Answer{"Which database should I use?": {"Postgres"}}); err != nil {
						errs <- fmt.Errorf("answer %s: %w", qid, err)
					}
					lt.mu.Lock()
					lt.read, lt.answer = append(lt.read, t1.Sub(t0)), append(lt.answer, time.Since(t1))
					lt.mu.Unlock()
				}()
				answered++
			case ev.Type == bridgeapi.EventStatus && ev.Status == bridgeapi.StatusExited:
				if _, seen := exits[ev.SessionID]; !seen {
					exits[ev.SessionID] = 0
					ended++
				}
			}
		case err := <-errs:
			return 0, nil, err
		case <-deadline:
			return 0, nil, fmt.Errorf("%d of %d sessions ended after 5 minutes", ended, n)
		}
	}
	elapsed := time.Since(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		return 0, nil, err
	}
	all, _ := e.b.Sessions(bg)
	var bad []string
	for _, s := range all {
		if s.ExitCode == nil || *s.ExitCode != 0 {
			bad = append(bad, fmt.Sprintf("%s: %v %s", s.ID, s.ExitCode, s.Detail))
		}
	}
	if len(all) != n || len(bad) > 0 || answered != n {
		return 0, nil, fmt.Errorf("%d sessions, %d questions answered, failed: %s", len(all), answered, strings.Join(bad, "; "))
	}
	// Each agent checked its own answer (fakeclaude exits 4 otherwise); and
	// the database holds exactly n answered questions.
	qs, _ := e.b.Questions(bg, bridgeapi.QuestionAnswered, "")
	if len(qs) != n {
		return 0, nil, fmt.Errorf("%d answered questions in the database, want %d", len(qs), n)
	}
	return elapsed, lt, nil
}

// TestConcurrentSessions: 50 sessions at once, no error, no lost answer.
func TestConcurrentSessions(t *testing.T) {
	if _, err := concurrentSessions(t, 50); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkSessions500: 500 concurrent fakeclaude sessions through one
// bridge. Run it with -benchtime=1x; it reports sessions/s and the peak
// resident memory of this process (the bridge; the agents are processes of
// their own).
func BenchmarkSessions500(b *testing.B) {
	for i := 0; i < b.N; i++ {
		d, lt, err := concurrentSessionsTimed(b, 500)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(500/d.Seconds(), "sessions/s")
		// What a person waits for while the other sessions start.
		b.ReportMetric(float64(percentile(lt.read, 0.99).Microseconds())/1000, "ms-read-question-p99")
		b.ReportMetric(float64(percentile(lt.answer, 0.5).Microseconds())/1000, "ms-answer-p50")
		b.ReportMetric(float64(percentile(lt.answer, 0.99).Microseconds())/1000, "ms-answer-p99")
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
