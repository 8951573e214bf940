package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/askctl/askctl/bench"
	"github.com/askctl/askctl/harness"
	"github.com/askctl/askctl/internal/clip"
	"github.com/askctl/askctl/scenarios"
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

func runBench(ctx context.Context, o *benchOptions) error {
	p, err := loadProfile(o.bridge)
	if err != nil {
		return err
	}
	sc, err := scenarios.Load(o.scenario)
	if err != nil {
		return usageError{err}
	}
	if err := bench.Playable(sc); err != nil {
		return usagef("--scenario %s: %v", o.scenario, strings.TrimPrefix(err.Error(), bench.ErrScenario.Error()+": "))
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
	var prog *progress
	rep, err := bench.Run(ctx, bench.Options{Profile: p, Scenario: sc, Sessions: o.sessions, Duration: o.duration, Concurrency: o.concurrency,
		Harness:  harness.Options{Work: work, Askctl: self, Slow: o.slow, CLIVersion: o.rel.play},
		Started:  func() { prog = newProgress(ew, o.sessions, o.duration, time.Now()) },
		Progress: func(done int, failed bool) { prog.update(done, failed) }})
	if err != nil {
		return err
	}
	prog.finish()
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
	case rep.Outcomes[bench.OK] != rep.Sessions:
		return errMismatch
	}
	return nil
}

func writeBenchText(w io.Writer, rep *bench.Report) {
	fmt.Fprintf(w, "bridge %s, scenario %s, %d at once, %d CPUs\n", rep.Bridge, rep.Scenario, rep.Concurrency, rep.CPUs)
	fmt.Fprintf(w, "sessions   %d in %.2fs (%.1f/s): %d ok, %d errors, %d wrong, %d lost", rep.Sessions, rep.Seconds, rep.PerSecond,
		rep.Outcomes[bench.OK], rep.Outcomes[bench.Error], rep.Outcomes[bench.Wrong], rep.Outcomes[bench.Lost])
	if n := rep.Outcomes[bench.Interrupted]; n > 0 {
		fmt.Fprintf(w, ", %d interrupted", n)
	}
	fmt.Fprintln(w)
	line := func(name string, p bench.Percentiles) {
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
