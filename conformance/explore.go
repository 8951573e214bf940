package conformance

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/askctl/askctl/profile"
	"pgregory.net/rapid"
)

// ExploreOptions say how long and from which seed the explorer runs.
type ExploreOptions struct {
	// Duration bounds the search for a failing sequence (default 1m);
	// shrinking a failure found takes at most Shrink more.
	Duration time.Duration
	// Shrink bounds the shrinking of a failure (default 2m).
	Shrink time.Duration
	// Seed is the first sequence's seed; each next one's is one more. 0
	// picks one from the clock. A failure names its own seed: --seed
	// with it plays that sequence again.
	Seed uint64
	// Steps is the mean number of steps in a sequence (default 12).
	Steps int
	// Sequences, when positive, stops the exploration after that many
	// sequences too (Duration still bounds it): a budget that a busy
	// machine does not shrink, for a test that must find a defect.
	Sequences int
	// Workers is how many sequences play at once, each against a bridge
	// of its own (default DefaultExploreWorkers). A sequence spends most
	// of its time waiting (for a timeout, or for nothing to happen), so
	// more than one a CPU pays.
	Workers int
	// Progress hears of each sequence played.
	Progress func(ExploreProgress)
	// Work is where sequences run (a temporary directory when empty).
	Work string
	// ExpectedFailures are the requirements the bridge is known to fail
	// (an --expected-failures file: case name, which is the requirement's
	// ID, to why): the checks only they own are not written, so the
	// exploration looks past them. The invariants still run.
	ExpectedFailures map[string]string
}

// ExploreProgress is where an exploration stands.
type ExploreProgress struct {
	Sequences int           `json:"sequences"`
	Steps     int           `json:"steps"`
	Sessions  int           `json:"sessions"`
	Elapsed   time.Duration `json:"elapsed_ns"`
	Shrinking bool          `json:"shrinking,omitempty"`
	// Skipped counts sequences that needed an operation the surface lacks
	// (SkipReason, the last one's why): they check nothing past it.
	Skipped    int    `json:"skipped,omitempty"`
	SkipReason string `json:"skip_reason,omitempty"`
	// SetupRetries are why sequences were run again: the bridge could
	// not be set up the first time.
	SetupRetries []string `json:"setup_retries,omitempty"`
	// Seed is the highest seed played, FirstSeed the first.
	Seed      uint64 `json:"seed"`
	FirstSeed uint64 `json:"first_seed"`
	// Ops counts the steps taken, by operation (answer, skip, restart…):
	// what the exploration exercised.
	Ops map[string]int `json:"ops,omitempty"`
}

// OpsLine is Ops on one line, most taken first.
func (p ExploreProgress) OpsLine() string {
	names := slices.Collect(maps.Keys(p.Ops))
	sort.Slice(names, func(i, j int) bool {
		if p.Ops[names[i]] != p.Ops[names[j]] {
			return p.Ops[names[i]] > p.Ops[names[j]]
		}
		return names[i] < names[j]
	})
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s %d", n, p.Ops[n])
	}
	return strings.Join(parts, ", ")
}

// InvariantChecks is how many times the rules were checked: after every
// step of every sequence, and once more at its end.
func (p ExploreProgress) InvariantChecks() int { return p.Steps + p.Sequences }

// ExploreResult is what an exploration found.
type ExploreResult struct {
	ExploreProgress
	// Failure is nil when every sequence passed.
	Failure *ExploreFailure `json:"failure,omitempty"`
	// Unreplayed are failures found whose case, run again from its file,
	// passed every time: the defect showed at a moment the case does not
	// bring about. The exploration goes on for one that does; Failure is
	// the first of these when none is found.
	Unreplayed []*ExploreFailure `json:"unreplayed,omitempty"`
}

// ExploreFailure is a failing sequence, shrunk: a case of the suite's
// own language that askctl conformance --case replays against any bridge.
type ExploreFailure struct {
	Seed        uint64 `json:"seed"`
	Requirement string `json:"requirement"`
	Status      string `json:"status"` // FAIL or BLOCKED
	Detail      string `json:"detail"`
	Case        string `json:"case"`  // the case file's text
	Steps       int    `json:"steps"` // its steps, shrunk
	// Replayed: the case, run again from its file, failed as well.
	Replayed bool `json:"replayed"`
	// ReplayRuns is how many times it was replayed: until it failed, three
	// at most.
	ReplayRuns int    `json:"replay_runs"`
	Log        string `json:"log,omitempty"`
	id         string // failureID: what its replay must fail as
}

// DefaultExploreWorkers is how many sequences an exploration plays at
// once by default: two a CPU, at most 8. A sequence is mostly waits (0.16 s
// of CPU in 1.4 s), so two a CPU keep a machine busy without starving the
// bridges' own timers.
func DefaultExploreWorkers() int { return min(2*runtime.NumCPU(), 8) }

var rapidOnce sync.Once

// rapidReady makes rapid usable outside go test: it reads the testing
// package's flags (testing.Short) and its own, which askctl sets.
func rapidReady() {
	rapidOnce.Do(func() {
		if flag.Lookup("test.short") == nil {
			testing.Init()
		}
		if !flag.Parsed() {
			_ = flag.CommandLine.Parse(nil)
		}
		_ = flag.Set("rapid.nofailfile", "true")
		// One sequence a Check: rapid runs a fifth of its checks under
		// go test -short, and a fifth of 1 is none.
		checks := "1"
		if testing.Short() {
			checks = "5"
		}
		_ = flag.Set("rapid.checks", checks)
	})
}

// exploreTB is the testing.TB rapid reports to, outside go test.
type exploreTB struct {
	mu     sync.Mutex
	name   string
	failed bool
	log    strings.Builder
}

func (t *exploreTB) Helper()      {}
func (t *exploreTB) Name() string { return t.name }
func (t *exploreTB) Logf(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprintf(&t.log, format+"\n", args...)
}
func (t *exploreTB) Log(args ...any) { t.Logf("%s", fmt.Sprint(args...)) }
func (t *exploreTB) Skipf(format string, args ...any) {
	t.Logf(format, args...)
	panic(errSkip)
}
func (t *exploreTB) Skip(args ...any) { t.Log(args...); panic(errSkip) }
func (t *exploreTB) SkipNow()         { panic(errSkip) }
func (t *exploreTB) Errorf(format string, args ...any) {
	t.Logf(format, args...)
	t.Fail()
}
func (t *exploreTB) Error(args ...any) { t.Log(args...); t.Fail() }
func (t *exploreTB) Fatalf(format string, args ...any) {
	t.Errorf(format, args...)
	panic(errFail)
}
func (t *exploreTB) Fatal(args ...any) { t.Error(args...); panic(errFail) }
func (t *exploreTB) FailNow()          { t.Fail(); panic(errFail) }
func (t *exploreTB) Fail() {
	t.mu.Lock()
	t.failed = true
	t.mu.Unlock()
}
func (t *exploreTB) Failed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.failed
}

// lacked finds the operation a skipped sequence needed (surface.Unsupported).
var lacked = regexp.MustCompile(`the surface has no (.+?) operation`)

// failedRequirement is the requirement a failed or blocked sequence
// broke ("" where its log names none).
func failedRequirement(r Result) string {
	if r.Status == Blocked {
		if by, _, ok := strings.Cut(strings.TrimPrefix(r.Detail, "BLOCKED by "), ":"); ok {
			return by
		}
	}
	if m := failLine.FindStringSubmatch(r.Log); m != nil {
		return m[1]
	}
	return ""
}

// failureID is a failure's identity across runs of one sequence: the
// requirement it broke (whether its own section failed, or another's was
// BLOCKED by it, as a shorter sequence may find it in another section),
// or where it names none, its detail's first line with every id and
// number blanked.
func failureID(r Result) string {
	if req := failedRequirement(r); req != "" {
		return req
	}
	first, _, _ := strings.Cut(r.Detail, "\n")
	return r.Status + " " + volatile.ReplaceAllString(first, "#")
}

// volatile matches what differs from one run of a sequence to the next in
// a failure's words: ids, numbers, durations.
var volatile = regexp.MustCompile(`[0-9A-Za-z_]*[0-9][0-9A-Za-z_.:]*`)

// failLine finds the requirement a failure names: "FAIL ID (LEVEL)".
var failLine = regexp.MustCompile(`FAIL ([A-Z]+-[A-Z0-9-]+) \(`)

// Explore plays generated sequences of the model (model.go) against cfg's
// bridge until one fails or o.Duration has passed; the failing one is
// shrunk to the shortest that still fails and returned as a case.
func Explore(ctx context.Context, cfg Config, o ExploreOptions) (*ExploreResult, error) {
	if cfg.Askctl == "" || cfg.Profile == nil {
		return nil, errors.New("conformance: Explore needs Config.Askctl and Config.Profile")
	}
	cfg.defaults()
	cfg.ctx = ctx
	if o.Duration <= 0 {
		o.Duration = time.Minute
	}
	if o.Shrink <= 0 {
		o.Shrink = 2 * time.Minute
	}
	if o.Steps <= 0 {
		o.Steps = 12
	}
	if o.Seed == 0 {
		o.Seed = uint64(time.Now().UnixNano()%1_000_000_000) + 1
	}
	work, cleanup, err := workDir(o.Work, "askctl-explore-")
	if err != nil {
		return nil, err
	}
	defer cleanup()
	if o.Workers <= 0 {
		o.Workers = DefaultExploreWorkers()
	}
	rapidReady()
	rapidSeed.Lock()
	setFlag("rapid.steps", strconv.Itoa(o.Steps))
	rapidSeed.Unlock()
	defer shrinkBound(o.Shrink)()

	e := &explorer{cfg: cfg, o: o, work: work, caps: capsOf(cfg), start: time.Now(), next: o.Seed}
	e.caps.lacks = map[string]bool{}
	e.res.FirstSeed = o.Seed
	for {
		f := e.pool(ctx)
		if ctx.Err() != nil {
			return &e.res, ErrInterrupted
		}
		if e.setupFailed != "" {
			// Not a verdict on the bridge: nothing it is to do was reached.
			return &e.res, fmt.Errorf("%w: %s", ErrBridgeWontStart, e.setupFailed)
		}
		if e.broken != "" {
			return &e.res, errors.New(e.broken)
		}
		if f == nil {
			break
		}
		// Replay the case as written: the file is the proof. A defect
		// that shows only at some moments (an event racing a
		// subscription) is given three runs to show again.
		file := filepath.Join(work, fmt.Sprintf("found-%d.txtar", f.Seed))
		if err := os.WriteFile(file, []byte(f.Case), 0o644); err == nil {
			// It must fail as found: the same requirement, which its
			// header names.
			for f.ReplayRuns < 3 && !f.Replayed && ctx.Err() == nil {
				f.ReplayRuns++
				r, _ := runCaseOnce(cfg, file, filepath.Join(work, fmt.Sprintf("replay-%d-%d", f.Seed, f.ReplayRuns)))
				f.Replayed = (r.Status == Fail || r.Status == Blocked) && failureID(r) == f.id
			}
		}
		if f.Replayed || ctx.Err() != nil {
			e.res.Failure = f
			return &e.res, nil
		}
		// A case that does not fail again proves nothing to its reader:
		// explore on, from the next seed, for one that does.
		e.res.Unreplayed = append(e.res.Unreplayed, f)
	}
	if e.res.Failure == nil && len(e.res.Unreplayed) > 0 {
		e.res.Failure = e.res.Unreplayed[0]
	}
	return &e.res, nil
}

// explorer is one exploration: workers that each play sequences from the
// next seed, the first failure, shrunk, and what they learnt of the
// surface.
type explorer struct {
	cfg   Config
	o     ExploreOptions
	work  string
	start time.Time
	runs  atomic.Int64 // case files written, for their names

	mu          sync.Mutex
	caps        xCaps          // lacks grows as sequences learn what the surface has not
	res         ExploreResult  // the counts, as sequences end
	next        uint64         // the next seed to hand out
	taken       int            // seeds handed out
	failing     *exploreWorker // the worker shrinking a failure; the others stop
	found       *ExploreFailure
	setupFailed string // the bridge could not be set up, twice running: the exploration stops
	broken      string // rapid itself failed: the explorer's bug
	warm        bool   // the first sequence has played, alone

	progress sync.Mutex // o.Progress hears one report at a time
}

// exploreWorker is one of the explorer's workers: its own context, which
// another worker's failure cancels.
type exploreWorker struct {
	ctx    context.Context
	cancel context.CancelFunc
}

// shrinkBounds are the shrink bounds of the explorations under way in the
// process (several, in the suite's own tests).
var shrinkBounds = struct {
	sync.Mutex
	live []time.Duration
}{}

// shrinkBound adds an exploration's bound on shrinking, and returns its
// removal. rapid's own bound is one global flag, read as a shrink begins:
// it is kept at the least of the explorations', so rapid never shrinks
// past an exploration's bound. Past it, the exploration skips every
// candidate at once, and rapid, shrinking on, would try (and remember)
// thousands of them a second until its own bound: gigabytes.
func shrinkBound(d time.Duration) func() {
	set := func() {
		if len(shrinkBounds.live) > 0 {
			setFlag("rapid.shrinktime", slices.Min(shrinkBounds.live).String())
		}
	}
	shrinkBounds.Lock()
	shrinkBounds.live = append(shrinkBounds.live, d)
	rapidSeed.Lock()
	set()
	rapidSeed.Unlock()
	shrinkBounds.Unlock()
	return func() {
		shrinkBounds.Lock()
		defer shrinkBounds.Unlock()
		rapidSeed.Lock()
		defer rapidSeed.Unlock()
		if i := slices.Index(shrinkBounds.live, d); i >= 0 {
			shrinkBounds.live = slices.Delete(shrinkBounds.live, i, i+1)
		}
		set()
	}
}

// rapidSeed serializes rapid's start: it reads its seed from a global
// flag as Check begins, so a worker holds this from setting the flag
// until its property first runs.
var rapidSeed sync.Mutex

// checkSeed is rapid.Check of prop from seed alone (one sequence, and its
// shrinking when it fails), safe to call from workers at once: each plays
// the sequence of its own seed. A Fatal or Skip of prop's ends it quietly
// (tb holds the verdict).
func checkSeed(tb *exploreTB, seed uint64, prop func(*rapid.T)) {
	rapidSeed.Lock()
	release := sync.OnceFunc(rapidSeed.Unlock)
	defer release()
	setFlag("rapid.seed", strconv.FormatUint(seed, 10))
	defer func() {
		if v := recover(); v != nil && v != errFail && v != errSkip {
			panic(v)
		}
	}()
	rapid.Check(tb, func(t *rapid.T) {
		release()
		prop(t)
	})
}

// pool runs o.Workers workers until the time or the sequences are spent,
// ctx is done, the bridge cannot be set up, or a sequence failed: that
// failure, shrunk, is returned (nil for none).
func (e *explorer) pool(ctx context.Context) *ExploreFailure {
	n := e.o.Workers
	e.mu.Lock()
	e.failing, e.found = nil, nil
	workers := make([]*exploreWorker, n)
	for i := range workers {
		wctx, cancel := context.WithCancel(ctx)
		workers[i] = &exploreWorker{ctx: wctx, cancel: cancel}
	}
	e.mu.Unlock()
	if !e.warm {
		// The first sequence plays alone, as the suite's first case does:
		// a bridge that cannot be set up is found once, not once a worker.
		e.warm = true
		if seed, ok := e.take(ctx, workers[0]); ok {
			e.check(workers[0], workers, seed)
		}
	}
	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer w.cancel()
			for {
				seed, ok := e.take(ctx, w)
				if !ok {
					return
				}
				e.check(w, workers, seed)
			}
		}()
	}
	wg.Wait()
	return e.found
}

// take hands out the next seed, or reports that the exploration is over
// for w.
func (e *explorer) take(ctx context.Context, w *exploreWorker) (uint64, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if ctx.Err() != nil || w.ctx.Err() != nil || e.failing != nil || e.setupFailed != "" || e.broken != "" ||
		time.Since(e.start) >= e.o.Duration || e.o.Sequences > 0 && e.taken >= e.o.Sequences {
		return 0, false
	}
	seed := e.next
	e.next++
	e.taken++
	return seed, true
}

// check plays the sequence of seed on worker w, and shrinks it when it
// fails, while the other workers stop.
func (e *explorer) check(w *exploreWorker, all []*exploreWorker, seed uint64) {
	cfg := e.cfg
	cfg.ctx = w.ctx
	var last struct {
		script []byte
		r      Result
		steps  int
		id     string
		root   string
	}
	shrinking := false
	var shrinkStart time.Time
	prop := func(t *rapid.T) {
		e.mu.Lock()
		stop := e.setupFailed != "" || e.failing != nil && e.failing != w || w.ctx.Err() != nil
		caps := e.caps
		caps.lacks = maps.Clone(e.caps.lacks)
		e.mu.Unlock()
		if stop {
			t.Skip("the exploration stopped")
		}
		if shrinking && time.Since(shrinkStart) > e.o.Shrink {
			// rapid looks at its shrink deadline between passes, and a
			// sequence that waits out timeouts is seconds long: past the
			// bound every candidate is dropped, so shrinking ends.
			t.Skip("the time to shrink is up")
		}
		m := &xModel{caps: caps, known: e.o.ExpectedFailures}
		m.generate(t)
		n := e.runs.Add(1)
		script := m.script()
		file := filepath.Join(e.work, fmt.Sprintf("explore-%d.txtar", n))
		if err := os.WriteFile(file, script, 0o644); err != nil {
			t.Fatalf("%v", err)
		}
		root := filepath.Join(e.work, fmt.Sprintf("run-%d", n))
		r, se := runCaseOnce(cfg, file, root)
		if se != nil && (r.Status == Fail || r.Status == Blocked) && w.ctx.Err() == nil {
			// The bridge could not be set up (it did not start, or would
			// not start a session): once more, as the suite does, before
			// it counts.
			e.mu.Lock()
			e.res.SetupRetries = append(e.res.SetupRetries, firstLines(r.Detail, 3))
			e.mu.Unlock()
			_ = os.RemoveAll(root)
			if r, se = runCaseOnce(cfg, file, root); se != nil && (r.Status == Fail || r.Status == Blocked) && w.ctx.Err() == nil {
				e.mu.Lock()
				if e.setupFailed == "" {
					e.setupFailed = r.Detail
				}
				e.mu.Unlock()
				t.Skip("the bridge could not be set up")
			}
		}
		_ = os.Remove(file)
		failed := (r.Status == Fail || r.Status == Blocked) && w.ctx.Err() == nil
		if !failed {
			_ = os.RemoveAll(root) // a long exploration keeps only what failed
		}
		if w.ctx.Err() != nil {
			t.Skip("the exploration stopped") // not played to its end: it counts for nothing
		}
		e.mu.Lock()
		if failed && e.failing != nil && e.failing != w {
			e.mu.Unlock()
			t.Skip("another sequence failed first")
		}
		if r.Status == Skip {
			if m := lacked.FindStringSubmatch(r.Detail); m != nil {
				e.caps.lacks[m[1]] = true // generated no more
			}
			if !shrinking {
				e.res.Skipped++
				e.res.SkipReason = r.Detail
			}
		}
		if !shrinking {
			e.res.Sequences++
			e.res.Steps += m.steps
			e.res.Sessions += len(m.sessions)
			if e.res.Ops == nil {
				e.res.Ops = map[string]int{}
			}
			for op, n := range m.ops {
				e.res.Ops[op] += n
			}
			e.res.Seed = max(e.res.Seed, seed)
		}
		if failed && e.failing == nil {
			// The first failure: the others stop, and this one is shrunk
			// on a quiet machine.
			e.failing = w
			for _, o := range all {
				if o != w {
					o.cancel()
				}
			}
		}
		e.res.Elapsed = time.Since(e.start)
		p := e.res.ExploreProgress
		p.Shrinking, p.Ops = shrinking || failed, maps.Clone(e.res.Ops)
		e.mu.Unlock()
		if e.o.Progress != nil {
			e.progress.Lock()
			e.o.Progress(p)
			e.progress.Unlock()
		}
		if failed {
			// What rapid tells failures apart by, and replays a failure
			// to see again before it shrinks it: the requirement broken,
			// never the detail, which names ids and
			// times of its own run (with them, no failure was seen again,
			// and none was shrunk). While shrinking, a shorter sequence
			// that breaks another requirement is another failure: it does
			// not count, so the case found blames what was found.
			id := failureID(r)
			if shrinking && id != last.id {
				_ = os.RemoveAll(root)
				return
			}
			if last.root != "" && last.root != root {
				_ = os.RemoveAll(last.root) // a longer run of the same failure
			}
			last.script, last.r, last.steps, last.id, last.root = script, r, m.steps, id, root
			if !shrinking {
				shrinking, shrinkStart = true, time.Now()
			}
			t.Fatalf("%s", id)
		}
	}
	tb := &exploreTB{name: fmt.Sprintf("explore-%d", seed)}
	checkSeed(tb, seed, prop)
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case w.ctx.Err() != nil && e.failing != w:
		// Stopped: by ctx, or for another worker's failure.
	case tb.Failed() && last.script != nil:
		f := &ExploreFailure{Seed: seed, Status: last.r.Status, Detail: last.r.Detail, Steps: last.steps, Log: last.r.Log, Requirement: failedRequirement(last.r), id: last.id}
		f.Case = string(header(f, e.cfg)) + string(last.script)
		e.found = f
	case tb.Failed() && e.setupFailed == "":
		// No sequence failed: rapid itself did (a model that generates
		// nothing valid, a panic). That is the explorer's bug, not the
		// bridge's.
		e.broken = fmt.Sprintf("the explorer failed at seed %d:\n%s", seed, firstLines(tb.log.String(), 40))
	}
}

// setFlag sets one of rapid's flags, and only when it changes: explorations
// that run at once (the tests') then never write what another reads.
func setFlag(name, value string) {
	if f := flag.Lookup(name); f != nil && f.Value.String() == value {
		return
	}
	_ = flag.Set(name, value)
}

// header is a found case's comment: where it came from, what it breaks,
// and how to run it again.
func header(f *ExploreFailure, cfg Config) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "# Found by askctl conformance --explore against %s, seed %d; shrunk to %d steps.\n", cfg.Profile.Name, f.Seed, f.Steps)
	fmt.Fprintf(&b, "# It breaks %s: %s\n", f.Requirement, Requirements[f.Requirement].Text)
	for _, l := range strings.Split(strings.TrimSpace(firstLines(f.Detail, 6)), "\n") {
		fmt.Fprintf(&b, "#   %s\n", l)
	}
	fmt.Fprintf(&b, "# Run it again: askctl conformance --bridge PROFILE --case THIS_FILE\n")
	fmt.Fprintf(&b, "# (or generate it again: askctl conformance --explore 1m --seed %d).\n", f.Seed)
	return []byte(b.String())
}

func firstLines(s string, n int) string {
	ls := strings.SplitN(s, "\n", n+1)
	if len(ls) > n {
		ls = ls[:n]
	}
	return strings.Join(ls, "\n")
}

// paceOf is how many times slower than a socket's a step is through a
// surface of kind. Through the reference page in Chromium, on a busy
// machine, a found case of 39 steps played in 20–25 s: about half a second
// a step (a tab opened, a click, the page's snapshot heard), where a step
// over a socket takes milliseconds.
func paceOf(kind string) float64 {
	if kind == "browser" {
		return 4
	}
	return 1
}

// crashPoints are the points the model may crash cfg's bridge at: those
// of a person's answer or skip that it declares, with persist, and with
// fakeclaude as the agent (the resumed agent plays the model's script).
func crashPoints(cfg Config) []string {
	c := cfg.Profile.Capabilities
	if !c.Persist || cfg.RealClaude != "" {
		return nil
	}
	var out []string
	for _, p := range []string{profile.CrashAnswerCommitted, profile.CrashAnswerWritten, profile.CrashSkipCommitted} {
		if c.HasCrashPoint(p) {
			out = append(out, p)
		}
	}
	return out
}

// capsOf is what the model may do with cfg's bridge.
func capsOf(cfg Config) xCaps {
	p := cfg.Profile
	c := p.Capabilities
	return xCaps{
		seconds:    c.Timeout.D().Seconds(),
		pace:       paceOf(p.Surface.Kind),
		reconnect:  c.Reconnect,
		takeover:   c.Takeover,
		persist:    c.Persist,
		crashAt:    crashPoints(cfg),
		mcp:        c.MCP && p.MCP != nil,
		resume:     p.Surface.ResumesStreams(),
		offline:    p.Surface.GoesOffline(),
		allowTools: !c.Permissions && p.Policy.OtherTools != "deny",
		denyTools:  !c.Permissions && p.Policy.OtherTools == "deny",
	}
}
