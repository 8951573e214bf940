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
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

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
	Seed         uint64   `json:"seed"`
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
}

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
		_ = flag.Set("rapid.checks", "1")
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
	rapidReady()
	_ = flag.Set("rapid.steps", strconv.Itoa(o.Steps))
	_ = flag.Set("rapid.shrinktime", o.Shrink.String())

	caps := capsOf(cfg)
	caps.lacks = map[string]bool{}
	res := &ExploreResult{}
	start := time.Now()
	runs := 0
	var last struct {
		script []byte
		r      Result
		steps  int
	}
	shrinking := false
	var shrinkStart time.Time
	var setupFailed string // the bridge could not be set up, twice running: the exploration stops
	prop := func(t *rapid.T) {
		if setupFailed != "" {
			t.Skip("the bridge could not be set up")
		}
		if shrinking && time.Since(shrinkStart) > o.Shrink {
			// rapid looks at its shrink deadline between passes, and a
			// sequence that waits out timeouts is seconds long: past the
			// bound every candidate is dropped, so shrinking ends.
			t.Skip("the time to shrink is up")
		}
		m := &xModel{caps: caps, known: o.ExpectedFailures}
		m.generate(t)
		runs++
		script := m.script()
		file := filepath.Join(work, fmt.Sprintf("explore-%d.txtar", runs))
		if err := os.WriteFile(file, script, 0o644); err != nil {
			t.Fatalf("%v", err)
		}
		root := filepath.Join(work, fmt.Sprintf("run-%d", runs))
		r, se := runCaseOnce(cfg, file, root)
		if se != nil && (r.Status == Fail || r.Status == Blocked) {
			// The bridge could not be set up (it did not start, or would
			// not start a session): once more, as the suite does, before
			// it counts.
			res.SetupRetries = append(res.SetupRetries, firstLines(r.Detail, 3))
			_ = os.RemoveAll(root)
			if r, se = runCaseOnce(cfg, file, root); se != nil && (r.Status == Fail || r.Status == Blocked) {
				setupFailed = r.Detail
				t.Skip("the bridge could not be set up")
			}
		}
		_ = os.Remove(file)
		if r.Status != Fail && r.Status != Blocked {
			_ = os.RemoveAll(root) // a long exploration keeps only what failed
		}
		if r.Status == Skip {
			if m := lacked.FindStringSubmatch(r.Detail); m != nil {
				caps.lacks[m[1]] = true // generated no more
			}
			if !shrinking {
				res.Skipped++
				res.SkipReason = r.Detail
			}
		}
		if !shrinking {
			res.Sequences++
			res.Steps += m.steps
			res.Sessions += len(m.sessions)
			if res.Ops == nil {
				res.Ops = map[string]int{}
			}
			for op, n := range m.ops {
				res.Ops[op] += n
			}
		}
		res.Elapsed = time.Since(start)
		if o.Progress != nil {
			p := res.ExploreProgress
			p.Shrinking, p.Ops = shrinking, maps.Clone(res.Ops)
			o.Progress(p)
		}
		if ctx.Err() != nil {
			t.Skip("interrupted")
		}
		if r.Status == Fail || r.Status == Blocked {
			last.script, last.r, last.steps = script, r, m.steps
			if !shrinking {
				shrinking, shrinkStart = true, time.Now()
			}
			t.Fatalf("%s %s", r.Status, r.Detail)
		}
	}
	for seed := o.Seed; time.Since(start) < o.Duration && ctx.Err() == nil && (o.Sequences <= 0 || res.Sequences < o.Sequences); seed++ {
		res.Seed = seed
		_ = flag.Set("rapid.seed", strconv.FormatUint(seed, 10))
		tb := &exploreTB{name: fmt.Sprintf("explore-%d", seed)}
		func() {
			defer func() {
				if v := recover(); v != nil && v != errFail && v != errSkip {
					panic(v)
				}
			}()
			rapid.Check(tb, prop)
		}()
		if ctx.Err() != nil {
			return res, ErrInterrupted
		}
		if setupFailed != "" {
			// Not a verdict on the bridge: nothing it is to do was reached.
			return res, fmt.Errorf("%w: %s", ErrBridgeWontStart, setupFailed)
		}
		if tb.Failed() && last.script != nil {
			f := &ExploreFailure{Seed: seed, Status: last.r.Status, Detail: last.r.Detail, Steps: last.steps, Log: last.r.Log}
			if m := failLine.FindStringSubmatch(last.r.Log); m != nil {
				f.Requirement = m[1]
			}
			if last.r.Status == Blocked {
				if by, _, ok := strings.Cut(strings.TrimPrefix(last.r.Detail, "BLOCKED by "), ":"); ok {
					f.Requirement = by
				}
			}
			f.Case = string(header(f, cfg)) + string(last.script)
			// Replay the case as written: the file is the proof. A defect
			// that shows only at some moments (an event racing a
			// subscription) is given three runs to show again.
			file := filepath.Join(work, fmt.Sprintf("found-%d.txtar", seed))
			if err := os.WriteFile(file, []byte(f.Case), 0o644); err == nil {
				for f.ReplayRuns < 3 && !f.Replayed && ctx.Err() == nil {
					f.ReplayRuns++
					r, _ := runCaseOnce(cfg, file, filepath.Join(work, fmt.Sprintf("replay-%d-%d", seed, f.ReplayRuns)))
					f.Replayed = r.Status == Fail || r.Status == Blocked
				}
			}
			if f.Replayed || ctx.Err() != nil {
				res.Failure = f
				return res, nil
			}
			// A case that does not fail again proves nothing to its
			// reader: explore on, from the next seed, for one that does.
			res.Unreplayed = append(res.Unreplayed, f)
			last.script = nil
			shrinking = false
			continue
		}
		if tb.Failed() {
			// No sequence failed: rapid itself did (a model that
			// generates nothing valid, a panic). That is the explorer's
			// bug, not the bridge's.
			return res, fmt.Errorf("the explorer failed at seed %d:\n%s", seed, firstLines(tb.log.String(), 40))
		}
		shrinking = false
	}
	if res.Failure == nil && len(res.Unreplayed) > 0 {
		res.Failure = res.Unreplayed[0]
	}
	return res, nil
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

// capsOf is what the model may do with cfg's bridge.
func capsOf(cfg Config) xCaps {
	p := cfg.Profile
	c := p.Capabilities
	return xCaps{
		seconds:    c.Timeout.D().Seconds(),
		reconnect:  c.Reconnect,
		takeover:   c.Takeover,
		persist:    c.Persist,
		mcp:        c.MCP && p.MCP != nil,
		resume:     p.Surface.ResumesStreams(),
		allowTools: !c.Permissions && p.Policy.OtherTools != "deny",
		denyTools:  !c.Permissions && p.Policy.OtherTools == "deny",
	}
}
