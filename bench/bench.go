// Package bench is askctl bench's engine: load through any bridge's
// profile. It starts the bridge, runs sessions of one scenario at a chosen
// concurrency, plays the person through the bridge's surface as each
// question shows, and reads each agent's own verdict. Run returns the
// report; printing it (text, JSON, a plot) is the caller's.
package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/askctl/askctl/harness"
	"github.com/askctl/askctl/profile"
	"github.com/askctl/askctl/scenarios"
	"github.com/askctl/askctl/surface"
)

// Options are one run's.
type Options struct {
	Profile  *profile.Profile
	Scenario *scenarios.Scenario
	// Sessions is how many sessions to run, or Duration how long to start
	// them for (one of the two).
	Sessions int
	Duration time.Duration
	// Concurrency is how many sessions run at once.
	Concurrency int
	// Harness is how the harness starts the bridge (Work must be set).
	// Its Slow scales the waits: each session's limit, and the profile's
	// op and start limits.
	Harness harness.Options
	// Started, when set, is told once the bridge is up.
	Started func()
	// Progress, when set, is told of each session as it ends: how many
	// have, and whether this one failed.
	Progress func(done int, failed bool)
}

// Outcomes of a session.
const (
	OK    = "ok"
	Error = "error" // it could not run: the bridge refused to start it, an operation failed
	Wrong = "wrong" // the agent got an answer it did not expect, or two
	Lost  = "lost"  // the agent asked, and the surface did not show it within the profile's op limit
	// Interrupted: the run's context ended it (SIGINT, SIGTERM); no
	// verdict.
	Interrupted = "interrupted"
)

// ErrScenario is a scenario the bench cannot run: not route sdk, a question
// the person neither answers nor skips, or no question at all.
var ErrScenario = errors.New("the bench cannot run this scenario")

// ErrBridge is a bridge that would not start.
var ErrBridge = errors.New("the bridge would not start")

// Report is a run's result.
type Report struct {
	Bridge      string         `json:"bridge"`
	Scenario    string         `json:"scenario"`
	Concurrency int            `json:"concurrency"`
	Sessions    int            `json:"sessions"`
	Outcomes    map[string]int `json:"outcomes"`
	Seconds     float64        `json:"seconds"`
	PerSecond   float64        `json:"sessions_per_second"`
	ToSurface   Percentiles    `json:"question_to_surface"`
	ToAgent     Percentiles    `json:"answer_to_agent"`
	Failures    []string       `json:"failures,omitempty"` // the first few, one a session
	Interrupted bool           `json:"interrupted,omitempty"`
	CPUs        int            `json:"cpus"`
	// Points are every question's latencies, for a plot.
	Points []Point `json:"-"`
}

// Point is one question: when its session started in the run, and its two
// latencies.
type Point struct {
	At      float64 // seconds since the run began
	Deliver time.Duration
	Answer  time.Duration // 0: not answered
}

// Percentiles of one latency, in milliseconds.
type Percentiles struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50_ms"`
	P90 float64 `json:"p90_ms"`
	P99 float64 `json:"p99_ms"`
	Max float64 `json:"max_ms"`
}

func percentiles(ds []time.Duration) Percentiles {
	ms := func(d time.Duration) float64 { return math.Round(float64(d)/1e4) / 100 }
	return Percentiles{N: len(ds), P50: ms(harness.Percentile(ds, 50)), P90: ms(harness.Percentile(ds, 90)), P99: ms(harness.Percentile(ds, 99)), Max: ms(harness.Percentile(ds, 100))}
}

// result is what one session came to.
type result struct {
	alias   string
	started time.Duration // since the run began
	outcome string
	detail  string
}

// Playable is nil when the bench can run sc, else an ErrScenario saying
// why.
func Playable(sc *scenarios.Scenario) error {
	_, err := asks(sc)
	return err
}

// asks is what the person does with each question of sc, in order: nil
// answers, else skips with the reason.
func asks(sc *scenarios.Scenario) ([]*string, error) {
	if sc.Route != scenarios.RouteSDK {
		return nil, fmt.Errorf("%w: route %q; the bench runs route sdk scenarios", ErrScenario, sc.Route)
	}
	var out []*string
	for _, st := range sc.Steps {
		if st.Kind != scenarios.KindAsk {
			continue
		}
		if st.User == nil || (len(st.User.Answers) == 0 && st.User.Skip == nil) {
			return nil, fmt.Errorf("%w: step %d's person neither answers nor skips; the bench needs a scenario a person plays through", ErrScenario, st.N)
		}
		out = append(out, st.User.Skip)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: it asks nothing", ErrScenario)
	}
	return out, nil
}

// Run runs the bench. The report covers the sessions that ended, also when
// ctx ended the run (Report.Interrupted); an error is a run that could not
// be made (ErrScenario, ErrBridge).
func Run(ctx context.Context, o Options) (*Report, error) {
	sc, p := o.Scenario, o.Profile
	questions, err := asks(sc)
	if err != nil {
		return nil, err
	}
	env, err := harness.NewEnv(ctx, p, o.Harness)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%w: %w", ErrBridge, err)
	}
	defer env.Close()
	if o.Started != nil {
		o.Started()
	}
	slow := o.Harness.Slow
	if slow <= 0 {
		slow = 1
	}
	scaled := func(d time.Duration) time.Duration { return time.Duration(float64(d) * slow) }
	limit := scaled(60 * time.Second)
	// A question the agent asked must show within the profile's op limit
	// (default 10 s), scaled; past it the session is lost.
	show := scaled(cmp.Or(p.Limits.Op.D(), surface.DefaultOpLimit))
	// The agent asks once the bridge has given it its prompt: within the
	// profile's start limit (default 15 s), scaled, or the session ends
	// there, saying so, not at the session's whole limit.
	ask := scaled(cmp.Or(p.Limits.Start.D(), surface.DefaultStartLimit))
	began := time.Now()
	var (
		mu      sync.Mutex
		startMu sync.Mutex // the harness starts one session at a time
		results []result
		next    atomic.Int64
		done    atomic.Int64
	)
	stopStarting := func() bool {
		if ctx.Err() != nil {
			return true
		}
		return o.Duration > 0 && time.Since(began) >= o.Duration
	}
	total := o.Sessions
	var wg sync.WaitGroup
	for range max(o.Concurrency, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1))
				if (total > 0 && i > total) || stopStarting() {
					return
				}
				r := session(ctx, env, &startMu, sc, questions, fmt.Sprintf("b%05d", i), limit, show, ask)
				r.started = time.Since(began)
				mu.Lock()
				results = append(results, r)
				mu.Unlock()
				if o.Progress != nil {
					o.Progress(int(done.Add(1)), r.outcome != OK && r.outcome != Interrupted)
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(began)

	rep := &Report{Bridge: p.Name, Scenario: sc.Name, Concurrency: o.Concurrency, Sessions: len(results), Outcomes: map[string]int{},
		Seconds: math.Round(elapsed.Seconds()*100) / 100, Interrupted: ctx.Err() != nil, CPUs: runtime.NumCPU()}
	if elapsed > 0 {
		rep.PerSecond = math.Round(float64(len(results))/elapsed.Seconds()*10) / 10
	}
	sort.Slice(results, func(i, j int) bool { return results[i].alias < results[j].alias })
	startOf := map[string]time.Duration{}
	for _, r := range results {
		rep.Outcomes[r.outcome]++
		startOf[r.alias] = r.started
		if r.outcome != OK && r.outcome != Interrupted && len(rep.Failures) < 10 {
			rep.Failures = append(rep.Failures, fmt.Sprintf("%s %s: %s", r.alias, r.outcome, r.detail))
		}
	}
	var toSurface, toAgent []time.Duration
	for _, l := range env.Latencies() {
		toSurface = append(toSurface, l.Deliver)
		if l.Answer > 0 {
			toAgent = append(toAgent, l.Answer)
		}
		rep.Points = append(rep.Points, Point{At: startOf[l.Session].Seconds(), Deliver: l.Deliver, Answer: l.Answer})
	}
	rep.ToSurface, rep.ToAgent = percentiles(toSurface), percentiles(toAgent)
	return rep, nil
}

// session runs one session: start, answer each question as the scenario
// says as soon as it shows, and read the agent's verdict.
func session(ctx context.Context, env *harness.Env, startMu *sync.Mutex, sc *scenarios.Scenario, asks []*string, alias string, limit, show, ask time.Duration) result {
	r := result{alias: alias}
	run := ctx
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	fail := func(outcome string, err error) result {
		if run.Err() != nil {
			outcome = Interrupted // cut short: no verdict on the bridge
		}
		r.outcome, r.detail = outcome, strings.TrimSpace(err.Error()) // whole: the reason is what a bridge author acts on
		return r
	}
	// The harness tells each agent what to play as the bridge spawns it,
	// so sessions start one after another, and then run side by side.
	startMu.Lock()
	err := env.Start(ctx, alias, sc, limit)
	startMu.Unlock()
	if err != nil {
		return fail(Error, err)
	}
	defer env.Disconnect(alias, "main")
	s := env.Session(alias)
	for i, skip := range asks {
		// The agent asks at its own pace; once it has, the surface shows
		// the question within the op limit, or the session is lost.
		actx, acancel := context.WithTimeout(ctx, ask)
		err := env.Await(actx, harness.Asked(alias, i+1))
		acancel()
		if err != nil {
			if ctx.Err() == nil && actx.Err() != nil {
				err = fmt.Errorf("the agent did not ask its question %d within %v (the profile's start limit) of the one before, or of its start: did the bridge give it its prompt, or the answer before? %w", i+1, ask, err)
			}
			return fail(Error, err)
		}
		sctx, scancel := context.WithTimeout(ctx, show)
		qid, err := s.AwaitQuestion(sctx, "main", false)
		scancel()
		if err != nil {
			if ctx.Err() == nil {
				return fail(Lost, fmt.Errorf("the agent asked its question %d, and the surface did not show it within %v (the profile's op limit): %w", i+1, show, err))
			}
			return fail(Error, err)
		}
		if skip != nil {
			err = s.Skip(ctx, "main", qid, *skip)
		} else {
			var answers map[string][]string
			if answers, err = s.ScenarioAnswers(qid); err == nil {
				_, err = s.Answer(ctx, "main", qid, answers)
			}
		}
		if err != nil {
			return fail(Error, err)
		}
	}
	problems, err := s.Check(ctx)
	if err != nil {
		return fail(Error, err)
	}
	if len(problems) > 0 {
		return fail(Wrong, errors.New(strings.Join(problems, "; ")))
	}
	r.outcome = OK
	return r
}
