package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/askctl/askctl/claudecli"
	"github.com/askctl/askctl/harness"
	"github.com/askctl/askctl/internal/chromium"
	"github.com/rogpeppe/go-internal/testscript"
)

// Statuses of a case.
const (
	Pass = "PASS"
	Fail = "FAIL"
	Skip = "SKIP"
	// XFail: failed, and listed as an expected failure: counts as passed.
	XFail = "XFAIL"
	// Blocked: what the case checks held, but a precondition of it that
	// another requirement owns did not (Detail: "BLOCKED by ID: …"); that
	// requirement's own case fails for it. Counts as a failure.
	Blocked = "BLOCKED"
	// NotRun: the case never ran, because the bridge could not be set up
	// in another case (the run stopped there).
	NotRun = "NOT-RUN"
	// Interrupted: the run was interrupted before the case ended.
	Interrupted = "INTERRUPTED"
)

// Result is how one case went.
type Result struct {
	Case        string            `json:"case"`
	Requirement Requirement       `json:"requirement"`
	Status      string            `json:"status"`
	Duration    time.Duration     `json:"duration_ns"`
	Detail      string            `json:"detail,omitempty"` // why it failed or was skipped
	Log         string            `json:"log,omitempty"`    // the case's log, for a failure
	Latencies   []harness.Latency `json:"latencies,omitempty"`
	Expected    string            `json:"expected_failure,omitempty"` // the reason it is listed as expected to fail
	// Rows are the verdicts of the case's generated rows, in order: each
	// runs even when one before it failed.
	Rows []RowResult `json:"rows,omitempty"`
}

// RowResult is one generated row's verdict: PASS, FAIL, BLOCKED or SKIP,
// with why.
type RowResult struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	Detail string `json:"detail,omitempty"`
}

// Report is one run of the suite.
type Report struct {
	Profile string `json:"profile"`
	Bridge  string `json:"bridge"`
	Agent   string `json:"agent"`
	// CLI is the claude release the agents played or were.
	CLI      string        `json:"cli,omitempty"`
	Started  time.Time     `json:"started"`
	Duration time.Duration `json:"duration_ns"`
	Results  []Result      `json:"results"`
	// Stale lists expected failures that passed: take them off the list.
	Stale []string `json:"stale,omitempty"`
}

// Failed reports whether any case failed (expected failures aside).
func (r *Report) Failed() bool {
	for _, res := range r.Results {
		if res.Status == Fail || res.Status == Blocked {
			return true
		}
	}
	return false
}

// Failing lists the cases that failed.
func (r *Report) Failing() []string {
	var out []string
	for _, res := range r.Results {
		if res.Status == Fail || res.Status == XFail {
			out = append(out, res.Case)
		}
	}
	return out
}

// RunOptions tune RunSuite.
type RunOptions struct {
	// Match selects cases by name; nil runs all.
	Match func(string) bool
	// Parallel is how many cases run at once; default the number of CPUs
	// (at least 2).
	Parallel int
	// Progress is called as each case ends, from one goroutine at a time.
	Progress func(done, total int, r Result)
	// ExpectedFailures maps a case to why it is known to fail.
	ExpectedFailures map[string]string
	// Work is where cases run; a temporary directory when empty (removed
	// after).
	Work string
	// Retried hears of a case run again because the bridge could not be
	// set up the first time.
	Retried func(name string, err error)
	// Files, when set, are the case files to run instead of the embedded
	// cases (a case the explorer found, a case of your own); Match still
	// selects among them by name (the file's base name less .txtar).
	Files []string
	// FailFast starts no case once one has failed (an expected failure
	// aside); the cases running finish, and the rest are NOT-RUN.
	FailFast bool
}

func (o RunOptions) retried(name string, err error) {
	if o.Retried != nil {
		o.Retried(name, err)
	}
}

// ErrInterrupted: ctx ended before every case ran.
var ErrInterrupted = errors.New("interrupted")

// preflight checks what the run needs before any case: the programs the
// profile starts (where their names are known before a case runs) and a
// browser for a browser surface.
func preflight(cfg Config) error {
	p := cfg.Profile
	known := map[string]string{"ASKCTL": cfg.Askctl, "PROFILE_DIR": p.Dir}
	// Expanded as the harness starts them: a relative command is from the
	// profile's directory.
	x := p.Expanded(known)
	look := func(field, raw, cmd string) error {
		unset := false
		os.Expand(raw, func(n string) string {
			if _, ok := known[n]; !ok && os.Getenv(n) == "" {
				unset = true // named by a variable only a case sets
			}
			return ""
		})
		if cmd == "" || unset {
			return nil
		}
		if _, err := exec.LookPath(cmd); err != nil {
			where := p.File
			if where == "" {
				where = "the profile"
			}
			return fmt.Errorf("%s: %s %q: %v (build or install it, or fix the path: a relative one is from the profile's directory)", where, field, raw, err)
		}
		return nil
	}
	if p.Start != nil {
		if err := look("start.command", p.Start.Command, x.Start.Command); err != nil {
			return err
		}
	}
	if p.Surface.Kind == "exec" {
		if err := look("surface.command", p.Surface.Command, x.Surface.Command); err != nil {
			return err
		}
	}
	if p.Surface.Kind == "browser" {
		if _, err := chromium.Find(p.Surface.Browser.Chromium); err != nil {
			return fmt.Errorf("the browser surface: %w", err)
		}
	}
	return nil
}

// setUpInCase begins the reason of each case that did not run because the
// bridge could not be set up in another (the report lists those after it).
const setUpInCase = "the bridge could not be set up in case "

// ErrBridgeWontStart: no case could start the bridge; the report says why.
var ErrBridgeWontStart = errors.New("the bridge would not start")

// RunSuite runs the embedded cases against cfg's bridge outside go test.
// Ending ctx ends the waits of the cases running and skips the rest; the
// report is returned with ErrInterrupted.
func RunSuite(ctx context.Context, cfg Config, o RunOptions) (*Report, error) {
	if cfg.Askctl == "" {
		return nil, errors.New("conformance: Config.Askctl is empty")
	}
	cfg.defaults()
	cfg.ctx = ctx
	work, cleanup, err := workDir(o.Work, "askctl-conformance-")
	if err != nil {
		return nil, err
	}
	defer cleanup()
	caseDir := filepath.Join(work, "cases")
	if err := os.MkdirAll(caseDir, 0o755); err != nil {
		return nil, err
	}
	var files []string
	if len(o.Files) > 0 {
		files, err = userCases(o.Files, o.Match)
	} else {
		files, err = WriteCases(caseDir, o.Match)
	}
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no case matches")
	}
	par := o.Parallel
	if par <= 0 {
		par = max(runtime.NumCPU(), 2)
	}
	lat := &collector{lat: map[string][]harness.Latency{}}
	orig := cfg.OnCase
	cfg.OnCase = func(name string, l []harness.Latency) {
		lat.add(name, l)
		if orig != nil {
			orig(name, l)
		}
	}
	rep := &Report{Profile: cfg.Profile.File, Bridge: cfg.Profile.Name, Agent: "fake", Started: time.Now()}
	if cfg.RealClaude != "" {
		rep.Agent = "real"
	}
	rep.CLI = cfg.CLIVersion
	if rel, err := claudecli.Load(cfg.CLIVersion); err == nil {
		rep.CLI = rel.Version // latest, oldest and release files, named
	}
	results := make([]Result, len(files))
	if err := preflight(cfg); err != nil {
		// Nothing of the bridge's behaviour can be checked: every case is
		// NOT-RUN, with what is missing and how to get it.
		for i, f := range files {
			name := strings.TrimSuffix(filepath.Base(f), ".txtar")
			results[i] = Result{Case: name, Requirement: Requirements[name], Status: NotRun, Detail: "the run could not be set up: " + err.Error()}
		}
		rep.Results = results
		sort.Slice(rep.Results, func(i, j int) bool { return rep.Results[i].Case < rep.Results[j].Case })
		return rep, fmt.Errorf("%w: %v", ErrBridgeWontStart, err)
	}
	sem := make(chan struct{}, par)
	var wg sync.WaitGroup
	var pmu sync.Mutex
	done := 0
	// A case that cannot set the bridge up (it does not start, is not
	// ready, spawns no agent the harness knows) stops the run: every other
	// case would wait out the same deadlines to fail the same way.
	setup := make(chan string, 1)
	setupFailed := func() string {
		select {
		case why := <-setup:
			setup <- why
			return why
		default:
			return ""
		}
	}
	var firstFail atomic.Pointer[string] // with FailFast: the case that stopped the run
	// The first case runs alone: a bridge that cannot be set up says so
	// once, before the others start, and every case is NOT-RUN. A quick
	// one goes first.
	if i := slices.IndexFunc(files, func(f string) bool { return filepath.Base(f) == "SDK-ANSWER-SINGLE.txtar" }); i > 0 {
		files[0], files[i] = files[i], files[0]
	}
	canary := make(chan struct{})
	for i, f := range files {
		if i == 1 {
			select {
			case <-canary:
			case <-ctx.Done():
			}
		}
		wg.Add(1)
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		name := strings.TrimSuffix(filepath.Base(f), ".txtar")
		if ctx.Err() != nil || setupFailed() != "" || firstFail.Load() != nil {
			status, why := Interrupted, "the run was interrupted before it started"
			switch {
			case ctx.Err() != nil:
			case setupFailed() != "":
				status, why = NotRun, setUpInCase+setupFailed()
				<-sem
			default:
				status, why = NotRun, "the run stopped at the first failure, "+*firstFail.Load()+" (fail fast)"
				<-sem
			}
			results[i] = Result{Case: name, Requirement: Requirements[name], Status: status, Detail: why}
			wg.Done()
			continue
		}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if i == 0 {
				defer close(canary)
			}
			r, setupErr := runCaseOnce(cfg, f, filepath.Join(work, "run"))
			if r.Status == Fail && setupErr != nil && ctx.Err() == nil {
				// A bridge can fail to start once on a busy machine: try the
				// case again before the run is declared unable to set it up.
				o.retried(r.Case, setupErr)
				r, setupErr = runCaseOnce(cfg, f, filepath.Join(work, "run-again"))
			}
			if r.Status == Fail && ctx.Err() != nil {
				// Cut short by the interrupt: nothing is known of the bridge.
				r.Status, r.Detail, r.Log = Interrupted, "the run was interrupted while it ran", ""
			}
			if r.Status == Fail && setupErr != nil {
				// Not a verdict: nothing of the bridge's behaviour was
				// checked.
				r.Status, r.Detail = NotRun, "the bridge could not be set up: "+r.Detail
				select {
				case setup <- r.Case:
				default:
				}
			}
			r.Latencies = lat.get(r.Case)
			if why, ok := o.ExpectedFailures[r.Case]; ok {
				r.Expected = why
				if r.Status == Fail {
					r.Status = XFail
				}
			}
			if o.FailFast && (r.Status == Fail || r.Status == Blocked) {
				firstFail.CompareAndSwap(nil, &r.Case)
			}
			results[i] = r
			pmu.Lock()
			done++
			if o.Progress != nil {
				o.Progress(done, len(files), r)
			}
			pmu.Unlock()
		}()
	}
	wg.Wait()
	rep.Duration = time.Since(rep.Started)
	rep.Results = results
	sort.Slice(rep.Results, func(i, j int) bool { return rep.Results[i].Case < rep.Results[j].Case })
	for name := range o.ExpectedFailures {
		for _, r := range rep.Results {
			if r.Case == name && r.Status == Pass {
				rep.Stale = append(rep.Stale, name)
			}
		}
	}
	sort.Strings(rep.Stale)
	if ctx.Err() != nil {
		return rep, ErrInterrupted
	}
	if name := setupFailed(); name != "" {
		for _, r := range rep.Results {
			if r.Case == name {
				return rep, fmt.Errorf("%w (case %s): %s", ErrBridgeWontStart, name, strings.TrimPrefix(r.Detail, "the bridge could not be set up: "))
			}
		}
	}
	return rep, nil
}

func (c *collector) get(name string) []harness.Latency {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lat[name]
}

// runCaseOnce runs one case, with BLOCKED for the preconditions other
// requirements own, and says whether the bridge could not be set up.
func runCaseOnce(cfg Config, file, root string) (Result, *harness.SetupError) {
	var setupErr *harness.SetupError
	var once sync.Once
	var blocked []string // "ID: observed" of preconditions owned by other requirements
	var bmu sync.Mutex
	cfg.setupFailed = func(se *harness.SetupError) { once.Do(func() { setupErr = se }) }
	cfg.blocked = func(by, why string) {
		bmu.Lock()
		if b := by + ": " + why; !slices.Contains(blocked, b) { // the rules are checked again and again
			blocked = append(blocked, b)
		}
		bmu.Unlock()
	}
	var stopped bool
	cfg.stopped = func() {
		bmu.Lock()
		stopped = true
		bmu.Unlock()
	}
	var unsupported string
	cfg.unsupported = func(why string) {
		bmu.Lock()
		unsupported = why
		bmu.Unlock()
	}
	var rows []string // generated rows skipped: `"row" (why)`
	cfg.rowSkipped = func(row, why string) {
		bmu.Lock()
		rows = append(rows, fmt.Sprintf("%q (%s)", row, why))
		bmu.Unlock()
	}
	var rowResults []RowResult
	cfg.row = func(name, status, why string) {
		bmu.Lock()
		defer bmu.Unlock()
		if status == "" {
			rowResults = append(rowResults, RowResult{Name: name, Status: Pass})
			return
		}
		i := slices.IndexFunc(rowResults, func(r RowResult) bool { return r.Name == name })
		if i < 0 {
			rowResults = append(rowResults, RowResult{Name: name, Status: Pass})
			i = len(rowResults) - 1
		}
		// The worst verdict a row got is its own; its first reason of it.
		rank := map[string]int{Pass: 0, Skip: 1, Blocked: 2, Fail: 3}
		if r := &rowResults[i]; rank[status] > rank[r.Status] {
			r.Status, r.Detail = status, why
		}
	}
	r := runCase(cfg, file, root)
	bmu.Lock()
	defer bmu.Unlock()
	r.Rows = rowResults
	var failedRows []RowResult
	for _, row := range rowResults {
		if row.Status == Fail {
			failedRows = append(failedRows, row)
		}
	}
	if len(failedRows) > 0 && (r.Status == Pass || r.Status == Skip && unsupported == "") {
		// The case's own lines held; rows of it failed.
		r.Status = Fail
		r.Detail = fmt.Sprintf("row %q: %s", failedRows[0].Name, firstLine(failedRows[0].Detail, 500))
		if n := len(failedRows) - 1; n > 0 {
			r.Detail += fmt.Sprintf(" (and %d more row(s) failed: see rows)", n)
		}
	}
	switch {
	case unsupported != "" && r.Status == Fail:
		r.Status, r.Detail, r.Log = Skip, unsupported, ""
	case len(blocked) > 0 && r.Status == Pass:
		r.Status, r.Detail = Blocked, "BLOCKED by "+strings.Join(blocked, "; BLOCKED by ")+" (what it checks itself held)"
	case len(blocked) > 0 && stopped && r.Status == Fail:
		r.Status, r.Detail = Blocked, "BLOCKED by "+strings.Join(blocked, "; BLOCKED by ")+" (it could not go on to check its own requirement)"
	case len(blocked) > 0 && r.Status == Fail:
		r.Detail += " (also BLOCKED by " + strings.Join(blocked, "; ") + ")"
	}
	if r.Status == Pass {
		r.Log = ""
	}
	if len(rows) > 0 && (r.Status == Pass || r.Status == Blocked) {
		r.Detail = strings.TrimPrefix(r.Detail+"; rows skipped: "+strings.Join(rows, "; "), "; ")
	}
	return r, setupErr
}

// workDir is dir, made if need be, or a new temporary directory named
// after prefix that done removes.
func workDir(dir, prefix string) (work string, cleanup func(), err error) {
	if dir != "" {
		return dir, func() {}, os.MkdirAll(dir, 0o755)
	}
	if dir, err = os.MkdirTemp("", prefix); err != nil {
		return "", nil, err
	}
	return dir, func() { os.RemoveAll(dir) }, nil
}

// userCases are case files of the user's, run where they are (so that a
// failure names the file), selected by match on their names.
func userCases(paths []string, match func(string) bool) ([]string, error) {
	var out []string
	names := map[string]string{}
	for _, p := range paths {
		name := strings.TrimSuffix(filepath.Base(p), ".txtar")
		if match != nil && !match(name) {
			continue
		}
		if _, err := os.Stat(p); err != nil {
			return nil, err
		}
		if first, ok := names[name]; ok {
			return nil, fmt.Errorf("%s and %s: two cases named %s (a case is known by its file's name)", first, p, name)
		}
		names[name] = p
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, err
		}
		out = append(out, abs)
	}
	return out, nil
}

// runCase runs one case file through testscript with a T of our own.
func runCase(cfg Config, file, root string) Result {
	name := strings.TrimSuffix(filepath.Base(file), ".txtar")
	r := Result{Case: name, Requirement: Requirements[name]}
	if r.Requirement.ID == "" {
		r.Requirement = Requirement{ID: name}
	}
	_ = os.MkdirAll(root, 0o755)
	t := &caseT{}
	p := testscript.Params{Files: []string{file}, WorkdirRoot: root}
	start := time.Now()
	if err := Setup(&p, cfg); err != nil {
		r.Status, r.Detail = Fail, err.Error()
		return r
	}
	func() {
		defer func() {
			switch v := recover(); v {
			case nil, errSkip, errFail:
			default:
				t.failed = true
				t.log.WriteString(fmt.Sprintf("panic: %v\n", v))
			}
		}()
		testscript.RunT(t, p)
	}()
	r.Duration = time.Since(start)
	r.Log = t.log.String()
	if _, known := Requirements[name]; !known && t.failed {
		// A case of the user's (an explored one) checks several
		// requirements: the failure names the one it broke.
		if m := failLine.FindStringSubmatch(r.Log); m != nil {
			r.Requirement = Requirements[m[1]]
		}
	}
	switch {
	case t.failed:
		r.Status, r.Detail = Fail, failureDetail(r.Log)
	case t.skipped:
		r.Status, r.Detail, r.Log = Skip, t.skipMsg, ""
	default:
		r.Status = Pass // its log goes once no row of it failed (runCaseOnce)
	}
	return r
}

// failureDetail is the "FAIL ID … observed: …" part of a failed case's log.
func failureDetail(log string) string {
	if i := strings.Index(log, "observed: "); i >= 0 {
		// The observation and its indented lines, up to the session summary.
		lines := strings.Split(log[i+len("observed: "):], "\n")
		out := []string{strings.TrimSpace(lines[0])}
		for _, l := range lines[1:] {
			if !strings.HasPrefix(l, "  ") || len(out) >= 6 {
				break
			}
			out = append(out, strings.TrimSpace(l))
		}
		return strings.Join(out, "\n    ")
	}
	lines := strings.Split(strings.TrimSpace(log), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(lines[i], "FAIL") {
			return strings.TrimSpace(lines[i])
		}
	}
	return "failed"
}

var (
	errSkip = fmt.Errorf("skip")
	errFail = fmt.Errorf("fail")
)

// caseT is testscript.T outside go test, as go-internal's cmd/testscript
// has it.
type caseT struct {
	mu      sync.Mutex
	log     strings.Builder
	failed  bool
	skipped bool
	skipMsg string
}

func (t *caseT) Skip(args ...any) {
	t.mu.Lock()
	t.skipped, t.skipMsg = true, strings.TrimSpace(fmt.Sprint(args...))
	t.mu.Unlock()
	panic(errSkip)
}

func (t *caseT) Fatal(args ...any) {
	t.Log(args...)
	t.FailNow()
}

func (t *caseT) Parallel() {}

func (t *caseT) Log(args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	msg := fmt.Sprint(args...)
	t.log.WriteString(msg)
	if !strings.HasSuffix(msg, "\n") {
		t.log.WriteString("\n")
	}
}

func (t *caseT) FailNow() {
	t.mu.Lock()
	t.failed = true
	t.mu.Unlock()
	panic(errFail)
}

func (t *caseT) Run(_ string, f func(testscript.T)) {
	defer func() {
		switch v := recover(); v {
		case nil, errSkip:
		case errFail:
			t.mu.Lock()
			t.failed = true
			t.mu.Unlock()
		default:
			panic(v)
		}
	}()
	f(t)
}

func (t *caseT) Verbose() bool { return false }

// Shard selects shard k of n (1 ≤ k ≤ n) of the cases: the cases in name
// order, dealt round-robin, so that n CI jobs each run one shard and
// together run every case once.
func Shard(k, n int) func(string) bool {
	names := CaseNames()
	sort.Strings(names)
	mine := map[string]bool{}
	for i, name := range names {
		if i%n == k-1 {
			mine[name] = true
		}
	}
	return func(name string) bool { return mine[name] }
}

// ReadReport reads a JSON report (askctl conformance --json).
func ReadReport(path string) (*Report, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Report
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if r.Profile == "" && len(r.Results) == 0 {
		return nil, fmt.Errorf("%s: not a conformance report (no profile, no results)", path)
	}
	return &r, nil
}

// Merge joins the reports of the shards of one run (the same bridge and
// agent) into one: every case's result, the earliest start, the longest
// shard's duration. A case run by two shards, or reports of different
// bridges or agents, are an error.
func Merge(reps ...*Report) (*Report, error) {
	if len(reps) == 0 {
		return nil, errors.New("no reports to merge")
	}
	out := &Report{Profile: reps[0].Profile, Bridge: reps[0].Bridge, Agent: reps[0].Agent, CLI: reps[0].CLI, Started: reps[0].Started}
	seen := map[string]int{}
	stale := map[string]bool{}
	for i, r := range reps {
		if r.Profile != out.Profile || r.Agent != out.Agent {
			return nil, fmt.Errorf("report %d is of %s with the %s agent, report 1 of %s with the %s agent: merge the shards of one run", i+1, r.Profile, r.Agent, out.Profile, out.Agent)
		}
		if r.Started.Before(out.Started) {
			out.Started = r.Started
		}
		if r.Duration > out.Duration {
			out.Duration = r.Duration
		}
		for _, res := range r.Results {
			if j, dup := seen[res.Case]; dup {
				return nil, fmt.Errorf("case %s is in reports %d and %d: each case belongs to one shard", res.Case, j, i+1)
			}
			seen[res.Case] = i + 1
			out.Results = append(out.Results, res)
		}
		for _, s := range r.Stale {
			stale[s] = true
		}
	}
	sort.Slice(out.Results, func(i, j int) bool { return out.Results[i].Case < out.Results[j].Case })
	for s := range stale {
		out.Stale = append(out.Stale, s)
	}
	sort.Strings(out.Stale)
	return out, nil
}
