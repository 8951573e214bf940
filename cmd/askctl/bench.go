package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/askctl/askctl/harness"
	"github.com/askctl/askctl/internal/clip"
	"github.com/askctl/askctl/scenarios"
	"github.com/askctl/askctl/surface"
	"github.com/urfave/cli/v3"
)

type benchOptions struct {
	cli         string
	rel         release
	bridge      string
	scenario    string
	sessions    int
	duration    time.Duration
	concurrency int
	json        bool
	plot        string
	slow        float64
	io          *stdio
}

func newBenchCmd(s *stdio, runF func(context.Context, *benchOptions) error) *cli.Command {
	o := &benchOptions{io: s}
	if runF == nil {
		runF = runBench
	}
	return &cli.Command{
		Name:  "bench",
		Usage: "load a bridge with concurrent sessions and measure question and answer latency",
		Description: `Starts the bridge a profile describes (the embedded reference bridge by
default), and runs sessions against it, --concurrency at a time (they start
one after another: the harness tells each agent what to play as the bridge
spawns it), until
--sessions have run or --duration has passed. Each session's agent is
fakeclaude playing --scenario; the person answers through the profile's
surface as soon as a question shows, with the scenario's answers, and the
agent checks each answer it gets.

It reports, for every question, the time from the agent's control_request
to the surface showing it (question → surface) and from the person's answer
to the agent's control_response (answer → agent): p50, p90, p99 and max;
sessions per second; and the sessions that failed to run (errors), whose
agent got a wrong answer (wrong), or whose question did not reach the
surface within the profile's limits.op (default 10s, times --slow) once the
agent had asked it (lost), each with its whole reason. An agent that does
not ask within the profile's limits.start (default 15s, times --slow) of its
start or of its previous answer is an error that says so. --plot writes both
latencies over the run as an SVG. On SIGINT it stops starting sessions,
reports the ones it cut short as interrupted, and exits 130.

Examples:
  askctl bench                                   # 200 sessions of ask-single, 8 at once
  askctl bench --sessions 1000 --concurrency 50 --json
  askctl bench --duration 30s --plot latency.svg
  askctl bench --bridge mybridge.json --scenario ask-multi

Exit status: 0 every session ran and every answer was right, 1 some session
failed, was answered wrongly or lost its question, 2 usage, 3 the bridge
would not start, 130 interrupted (what had finished is reported).`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "bridge", Usage: "the profile of the bridge to load (a file, or reference-ws|reference-http|reference-control-ws|reference-browser)", Value: defaultProfile, Destination: &o.bridge, Sources: cli.EnvVars("ASKCTL_BRIDGE")},
			&cli.StringFlag{Name: "scenario", Usage: "what each agent plays: a built-in name or a file (route sdk)", Value: "ask-single", Destination: &o.scenario},
			&cli.IntFlag{Name: "sessions", HideDefault: true, Usage: "how many sessions to run (default 200, unless --duration is given)", Destination: &o.sessions},
			&cli.DurationFlag{Name: "duration", HideDefault: true, Usage: "start sessions for this long instead of counting them", Destination: &o.duration},
			&cli.IntFlag{Name: "concurrency", Value: 8, Usage: "sessions running at once", Destination: &o.concurrency},
			&cli.BoolFlag{Name: "json", Usage: "print the results as JSON", Destination: &o.json},
			&cli.StringFlag{Name: "plot", Usage: "write latency over the run to this SVG `FILE`", Destination: &o.plot},
			&cli.FloatFlag{Name: "slow", Value: 1, Usage: "scale the harness's waits on the bridge (2 doubles them), for a busy machine", Destination: &o.slow},
			cliFlag(&o.cli),
		},
		Before: func(ctx context.Context, cmd *cli.Command) (context.Context, error) {
			if cmd.Args().Len() > 0 {
				return ctx, usagef("bench takes no arguments, got %q", cmd.Args().First())
			}
			switch {
			case o.sessions < 0:
				return ctx, usagef("--sessions %d: want a positive number", o.sessions)
			case o.sessions > 0 && o.duration > 0:
				return ctx, usagef("--sessions and --duration: give one")
			case o.duration < 0:
				return ctx, usagef("--duration %v: want a positive duration", o.duration)
			case o.concurrency < 1:
				return ctx, usagef("--concurrency %d: want at least 1", o.concurrency)
			case o.slow <= 0:
				return ctx, usagef("--slow %v: want a positive factor", o.slow)
			}
			if o.sessions == 0 && o.duration == 0 {
				o.sessions = 200
			}
			var err error
			o.rel, err = resolveRelease(o.cli)
			return ctx, err
		},
		Action: func(ctx context.Context, cmd *cli.Command) error { return runF(ctx, o) },
	}
}

// benchResult is what one session came to.
type benchResult struct {
	alias   string
	started time.Duration // since the run began
	outcome string        // ok, error, wrong, lost
	detail  string
}

// Outcomes of a bench session.
const (
	benchOK    = "ok"
	benchError = "error" // it could not run: the bridge refused to start it, an operation failed
	benchWrong = "wrong" // the agent got an answer it did not expect, or two
	benchLost  = "lost"  // the agent asked, and the surface did not show it within the profile's op limit
	// benchInterrupted: SIGINT (or SIGTERM) cut it short; no verdict.
	benchInterrupted = "interrupted"
)

// BenchReport is askctl bench's result (--json).
type BenchReport struct {
	Bridge        string         `json:"bridge"`
	Scenario      string         `json:"scenario"`
	Concurrency   int            `json:"concurrency"`
	Sessions      int            `json:"sessions"`
	Outcomes      map[string]int `json:"outcomes"`
	Seconds       float64        `json:"seconds"`
	PerSecond     float64        `json:"sessions_per_second"`
	ToSurface     Percentiles    `json:"question_to_surface"`
	ToAgent       Percentiles    `json:"answer_to_agent"`
	Failures      []string       `json:"failures,omitempty"` // the first few, one a session
	Interrupted   bool           `json:"interrupted,omitempty"`
	CPUs          int            `json:"cpus"`
	questionTimes []plotPoint
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

func runBench(ctx context.Context, o *benchOptions) error {
	p, err := loadProfile(o.bridge)
	if err != nil {
		return err
	}
	sc, err := scenarios.Load(o.scenario)
	if err != nil {
		return usageError{err}
	}
	if sc.Route != scenarios.RouteSDK {
		return usagef("--scenario %s: route %q; askctl bench runs route sdk scenarios", o.scenario, sc.Route)
	}
	self, err := selfPath()
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "askctl-bench-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	ew := o.io.err
	fmt.Fprintf(ew, "askctl bench: starting %s\n", p.Name)
	env, err := harness.NewEnv(ctx, p, harness.Options{Work: work, Askctl: self, Slow: o.slow, CLIVersion: o.rel.play})
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("the bridge would not start: %w", err)
	}
	defer env.Close()

	// What the person does with each question, in order.
	var asks []*string // nil: answer; else skip with the reason
	for _, st := range sc.Steps {
		if st.Kind != scenarios.KindAsk {
			continue
		}
		if st.User == nil || (len(st.User.Answers) == 0 && st.User.Skip == nil) {
			return usagef("--scenario %s: step %d's person neither answers nor skips; askctl bench needs a scenario a person plays through", o.scenario, st.N)
		}
		asks = append(asks, st.User.Skip)
	}
	if len(asks) == 0 {
		return usagef("--scenario %s asks nothing", o.scenario)
	}
	limit := time.Duration(float64(60*time.Second) * o.slow)
	// A question the agent asked must show within the profile's op limit
	// (default 10 s), scaled by --slow; past it the session is lost.
	show := p.Limits.Op.D()
	if show <= 0 {
		show = surface.DefaultOpLimit
	}
	show = time.Duration(float64(show) * o.slow)
	// The agent asks once the bridge has given it its prompt: within the
	// profile's start limit (default 15 s), scaled, or the session ends
	// there, saying so, not at the session's whole limit.
	ask := p.Limits.Start.D()
	if ask <= 0 {
		ask = surface.DefaultStartLimit
	}
	ask = time.Duration(float64(ask) * o.slow)
	began := time.Now()
	var (
		mu      sync.Mutex
		startMu sync.Mutex // the harness starts one session at a time
		results []benchResult
		next    atomic.Int64
		done    atomic.Int64
	)
	stopStarting := func() bool {
		if ctx.Err() != nil {
			return true
		}
		if o.duration > 0 {
			return time.Since(began) >= o.duration
		}
		return false
	}
	total := o.sessions
	prog := newProgress(ew, total, o.duration, began)
	var wg sync.WaitGroup
	for w := 0; w < o.concurrency; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1))
				if (total > 0 && i > total) || stopStarting() {
					return
				}
				r := benchSession(ctx, env, &startMu, sc, asks, fmt.Sprintf("b%05d", i), limit, show, ask)
				r.started = time.Since(began)
				mu.Lock()
				results = append(results, r)
				mu.Unlock()
				prog.update(int(done.Add(1)), r.outcome != benchOK && r.outcome != benchInterrupted)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(began)
	prog.finish()

	rep := &BenchReport{Bridge: p.Name, Scenario: sc.Name, Concurrency: o.concurrency, Sessions: len(results), Outcomes: map[string]int{},
		Seconds: math.Round(elapsed.Seconds()*100) / 100, Interrupted: ctx.Err() != nil, CPUs: runtime.NumCPU()}
	if elapsed > 0 {
		rep.PerSecond = math.Round(float64(len(results))/elapsed.Seconds()*10) / 10
	}
	sort.Slice(results, func(i, j int) bool { return results[i].alias < results[j].alias })
	startOf := map[string]time.Duration{}
	for _, r := range results {
		rep.Outcomes[r.outcome]++
		startOf[r.alias] = r.started
		if r.outcome != benchOK && r.outcome != benchInterrupted && len(rep.Failures) < 10 {
			rep.Failures = append(rep.Failures, fmt.Sprintf("%s %s: %s", r.alias, r.outcome, r.detail))
		}
	}
	var toSurface, toAgent []time.Duration
	for _, l := range env.Latencies() {
		toSurface = append(toSurface, l.Deliver)
		if l.Answer > 0 {
			toAgent = append(toAgent, l.Answer)
		}
		rep.questionTimes = append(rep.questionTimes, plotPoint{at: startOf[l.Session].Seconds(), deliver: l.Deliver, answer: l.Answer})
	}
	rep.ToSurface, rep.ToAgent = percentiles(toSurface), percentiles(toAgent)
	if o.plot != "" {
		if err := writePlot(o.plot, rep); err != nil {
			return err
		}
		fmt.Fprintf(ew, "askctl bench: wrote %s\n", o.plot)
	}
	if o.json {
		if err := printJSON(o.io.out, rep); err != nil {
			return err
		}
	} else {
		writeBenchText(o.io.out, rep)
	}
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case rep.Outcomes[benchOK] != rep.Sessions:
		return errMismatch
	}
	return nil
}

// benchSession runs one session: start, answer each question as the
// scenario says as soon as it shows, and read the agent's verdict.
func benchSession(ctx context.Context, env *harness.Env, startMu *sync.Mutex, sc *scenarios.Scenario, asks []*string, alias string, limit, show, ask time.Duration) benchResult {
	r := benchResult{alias: alias}
	run := ctx
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	fail := func(outcome string, err error) benchResult {
		if run.Err() != nil {
			outcome = benchInterrupted // cut short: no verdict on the bridge
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
		return fail(benchError, err)
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
			return fail(benchError, err)
		}
		sctx, scancel := context.WithTimeout(ctx, show)
		qid, err := s.AwaitQuestion(sctx, "main", false)
		scancel()
		if err != nil {
			if ctx.Err() == nil {
				return fail(benchLost, fmt.Errorf("the agent asked its question %d, and the surface did not show it within %v (the profile's op limit): %w", i+1, show, err))
			}
			return fail(benchError, err)
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
			return fail(benchError, err)
		}
	}
	problems, err := s.Check(ctx)
	if err != nil {
		return fail(benchError, err)
	}
	if len(problems) > 0 {
		return fail(benchWrong, errors.New(strings.Join(problems, "; ")))
	}
	r.outcome = benchOK
	return r
}

func writeBenchText(w io.Writer, rep *BenchReport) {
	fmt.Fprintf(w, "bridge %s, scenario %s, %d at once, %d CPUs\n", rep.Bridge, rep.Scenario, rep.Concurrency, rep.CPUs)
	fmt.Fprintf(w, "sessions   %d in %.2fs (%.1f/s): %d ok, %d errors, %d wrong, %d lost", rep.Sessions, rep.Seconds, rep.PerSecond,
		rep.Outcomes[benchOK], rep.Outcomes[benchError], rep.Outcomes[benchWrong], rep.Outcomes[benchLost])
	if n := rep.Outcomes[benchInterrupted]; n > 0 {
		fmt.Fprintf(w, ", %d interrupted", n)
	}
	fmt.Fprintln(w)
	line := func(name string, p Percentiles) {
		fmt.Fprintf(w, "%-19s p50 %7.2fms  p90 %7.2fms  p99 %7.2fms  max %7.2fms  (%d)\n", name, p.P50, p.P90, p.P99, p.Max, p.N)
	}
	line("question → surface", rep.ToSurface)
	line("answer → agent", rep.ToAgent)
	for _, f := range rep.Failures {
		// Whole, each line of a reason indented under its session.
		fmt.Fprintf(w, "  %s\n", strings.ReplaceAll(clip.Printable(f), `\n`, "\n    "))
	}
	if rep.Interrupted {
		fmt.Fprintln(w, "interrupted: the figures cover the sessions that had finished")
	}
}

// progress draws a progress bar on a terminal, and a line every tenth of
// the run elsewhere.
type progress struct {
	w       io.Writer
	total   int
	dur     time.Duration
	began   time.Time
	tty     bool
	mu      sync.Mutex
	last    time.Time
	lastPct int
	failed  int
}

func newProgress(w io.Writer, total int, dur time.Duration, began time.Time) *progress {
	p := &progress{w: w, total: total, dur: dur, began: began}
	if f, ok := w.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			p.tty = true
		}
	}
	return p
}

func (p *progress) update(done int, failed bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if failed {
		p.failed++
	}
	frac := 0.0
	if p.total > 0 {
		frac = float64(done) / float64(p.total)
	} else if p.dur > 0 {
		frac = min(1, time.Since(p.began).Seconds()/p.dur.Seconds())
	}
	rate := float64(done) / max(time.Since(p.began).Seconds(), 1e-3)
	if p.tty {
		if time.Since(p.last) < 100*time.Millisecond && done != p.total {
			return
		}
		p.last = time.Now()
		const width = 30
		n := int(frac * width)
		fmt.Fprintf(p.w, "\r[%s%s] %d sessions  %.1f/s  %d failed ", strings.Repeat("=", n), strings.Repeat(" ", width-n), done, rate, p.failed)
		return
	}
	if pct := int(frac * 10); pct > p.lastPct {
		p.lastPct = pct
		fmt.Fprintf(p.w, "askctl bench: %d%%: %d sessions, %.1f/s, %d failed\n", pct*10, done, rate, p.failed)
	}
}

func (p *progress) finish() {
	if p.tty {
		fmt.Fprintln(p.w)
	}
}
