package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/askctl/askctl/claudecli"
	"github.com/askctl/askctl/conformance"
	"github.com/askctl/askctl/internal/clip"
	"github.com/askctl/askctl/surface/browser"
	"github.com/urfave/cli/v3"
)

type conformanceOptions struct {
	cli      string
	rel      release
	bridge   string
	run      string
	agent    string
	junit    string
	json     string
	expected string
	parallel int
	claude   string
	keep     keepMode
	verbose  bool
	rows     bool
	skip     string
	failfast bool
	list     bool
	shard    string
	slow     float64
	cases    []string
	explore  time.Duration
	seed     uint64
	found    string
	io       *stdio

	match   *regexp.Regexp
	skipRE  *regexp.Regexp
	inShard func(string) bool
}

// keepMode is --keep: when the work directory outlives the run.
type keepMode string

const (
	keepNever     keepMode = ""
	keepAlways    keepMode = "always"
	keepOnFailure keepMode = "on-failure"
)

// Set takes --keep alone (always) or --keep=WHEN.
func (k *keepMode) Set(v string) error {
	switch v {
	case "true", "always":
		*k = keepAlways
	case "on-failure":
		*k = keepOnFailure
	case "false", "never":
		*k = keepNever
	default:
		return fmt.Errorf("want --keep (always), --keep=on-failure or --keep=never, got %q", v)
	}
	return nil
}

func (k *keepMode) String() string   { return string(*k) }
func (k *keepMode) Get() any         { return *k }
func (k *keepMode) IsBoolFlag() bool { return true } // --keep alone means always

// defaultProfile is the embedded profile of the reference bridge, checked
// when no --bridge is given.
const defaultProfile = "reference-ws"

func newConformanceCmd(s *stdio, runF func(context.Context, *conformanceOptions) error) *cli.Command {
	o := &conformanceOptions{io: s}
	if runF == nil {
		runF = runConformance
	}
	return &cli.Command{
		Name:  "conformance",
		Usage: "check a bridge against every requirement, with fakeclaude as the agent and askctl as the person",
		Description: `Runs the conformance suite — one case per requirement (SDK-*, UI-*, MCP-*) — against the
bridge a profile describes: askctl starts the bridge, makes it spawn fakeclaude
(each session told what to play), plays the person through the bridge's user
surface (ws, control-ws, http, exec or browser), and checks what reaches the agent and
the surface. Cases of capabilities the profile does not declare are skipped.

With no --bridge it checks askctl's own reference bridge (askctl serve) over
its WebSocket surface; --bridge also takes reference-http, reference-control-ws
or a profile file. See conformance/README.md to write a profile.

Output: a line per case as it ends (stderr), then a table by requirement with
measured latencies; --junit and --json write reports for CI. Exit status 0
when every case that ran passed (expected failures aside), 1 when one failed,
2 for bad flags or an invalid profile, 3 when the bridge could not be set up
(the first case runs alone; when it cannot start the bridge, every case is
NOT-RUN — no verdict — and the reason is printed once), 130 when it was
interrupted (the cases that had not run are listed so).

Examples:
  askctl conformance
  askctl conformance --bridge ./mybridge.json --run 'SDK-ANSWER' --junit report.xml
  askctl conformance --bridge ./mybridge.json --expected-failures known.txt`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "bridge", Usage: "the profile of the bridge to check (a file, or reference-ws|reference-http|reference-control-ws|reference-browser)", Value: defaultProfile, Destination: &o.bridge, Sources: cli.EnvVars("ASKCTL_BRIDGE")},
			&cli.StringFlag{Name: "run", Usage: "run only the cases whose name matches this regular expression", Destination: &o.run},
			&cli.StringFlag{Name: "agent", Usage: "the agent the bridge spawns: fake (fakeclaude) or real (the real claude CLI against askctl's fake model API)", Value: "fake", Destination: &o.agent},
			&cli.StringFlag{Name: "claude", Usage: "with --agent real: the real claude executable (default: the pinned one askctl claude install put in your cache, else claude on PATH)", Destination: &o.claude, Sources: cli.EnvVars(claudecli.EnvClaude)},
			cliFlag(&o.cli),
			&cli.StringFlag{Name: "junit", Usage: "write a JUnit XML report to `FILE`", Destination: &o.junit},
			&cli.StringFlag{Name: "json", Usage: "write a JSON report to `FILE`", Destination: &o.json},
			&cli.StringFlag{Name: "expected-failures", Usage: "`FILE` of cases known to fail (CASE reason, a line each)", Destination: &o.expected},
			&cli.IntFlag{Name: "parallel", HideDefault: true, Usage: "cases run at once, and with --explore sequences played at once; 0 means the number of CPUs, at least 2 (for sequences, two a CPU, at most 8)", Destination: &o.parallel},
			&cli.GenericFlag{Name: "keep", Usage: "keep the work directory (bridge logs, an exec adapter's traffic, agent transcripts) and print where it is; with `=on-failure`, only when a case failed or the run could not finish", Value: &o.keep},
			&cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Usage: "print the step log of each case that fails as it ends (what the case did, what the bridge and the agent did)", Destination: &o.verbose},
			&cli.BoolFlag{Name: "rows", Usage: "list every generated row under its case in the table, with its verdict (the table counts them by default; --json and --junit always have them)", Destination: &o.rows},
			&cli.StringFlag{Name: "skip", Usage: "run no case whose name matches this regular expression (with --run: the cases --run selects, less these)", Destination: &o.skip},
			&cli.BoolFlag{Name: "failfast", Usage: "start no case once one has failed: the cases running finish, the rest are NOT-RUN (exit status 1)", Destination: &o.failfast},
			&cli.BoolFlag{Name: "list", Usage: "list the cases and their requirements, and exit", Destination: &o.list},
			&cli.FloatFlag{Name: "slow", HideDefault: true, Usage: "scale every wait of the suite and the harness by `FACTOR` (2 doubles them), for a busy machine (default 1); never a requirement's own bounds", Destination: &o.slow, Sources: cli.EnvVars(conformance.EnvSlow)},
			&cli.StringSliceFlag{Name: "case", Usage: "run the case `FILE` (a case the explorer found, or your own) instead of the built-in cases; repeat for several", Destination: &o.cases},
			&cli.DurationFlag{Name: "explore", HideDefault: true, Usage: "after the cases, explore for `DURATION`: play generated sequences of sessions, answers, skips, reconnects, takeovers and timeouts, checking the requirements' rules after every step; a failure is shrunk and written as a case (--run '^$' explores alone)", Destination: &o.explore},
			&cli.Uint64Flag{Name: "seed", HideDefault: true, Usage: "with --explore: the first sequence's seed (0: from the clock); a found case names its seed", Destination: &o.seed},
			&cli.StringFlag{Name: "found", Usage: "with --explore: write a found case to `FILE`", Value: "askctl-explored.txtar", Destination: &o.found},
			&cli.StringFlag{Name: "shard", Usage: "run shard `K/N` of the cases (N CI jobs, K = 1…N, each a share; join their --json reports with askctl conformance merge)", Destination: &o.shard},
		},
		Commands: []*cli.Command{newConformanceMergeCmd(s)},
		Before: func(ctx context.Context, cmd *cli.Command) (context.Context, error) {
			if cmd.Args().Len() > 0 {
				if cmd.Args().First() == "merge" {
					return ctx, nil // the subcommand's own
				}
				if a := cmd.Args().First(); a == "on-failure" || a == "always" || a == "never" {
					return ctx, usagef("unexpected argument %q: write --keep=%s, with the =", a, a)
				}
				return ctx, usagef("unexpected argument %q (select cases with --run)", cmd.Args().First())
			}
			var err error
			if o.rel, err = resolveRelease(o.cli); err != nil {
				return ctx, err
			}
			return ctx, o.validate()
		},
		Action: func(ctx context.Context, cmd *cli.Command) error { return runF(ctx, o) },
	}
}

func (o *conformanceOptions) validate() error {
	if o.agent != "fake" && o.agent != "real" {
		return usagef("--agent: want fake or real, got %q", o.agent)
	}
	if o.run != "" {
		re, err := regexp.Compile(o.run)
		if err != nil {
			return usagef("--run: %v", err)
		}
		o.match = re
	}
	if o.skip != "" {
		re, err := regexp.Compile(o.skip)
		if err != nil {
			return usagef("--skip: %v", err)
		}
		o.skipRE = re
	}
	if o.parallel < 0 {
		return usagef("--parallel: want a positive number, got %d", o.parallel)
	}
	if o.slow != 0 && o.slow < 1 {
		return usagef("--slow: want a factor of 1 or more, got %v", o.slow)
	}
	if o.explore < 0 {
		return usagef("--explore: want a positive duration such as 2m, got %v", o.explore)
	}
	if o.explore > 0 {
		// A found case is written after minutes of exploring: a place it
		// cannot go is said now.
		if st, err := os.Stat(filepath.Dir(o.found)); err != nil || !st.IsDir() {
			return usagef("--found %s: no directory %s to write a found case in", o.found, filepath.Dir(o.found))
		}
	}
	if o.shard != "" {
		var k, n int
		if _, err := fmt.Sscanf(o.shard, "%d/%d", &k, &n); err != nil || n < 1 || k < 1 || k > n || fmt.Sprintf("%d/%d", k, n) != o.shard {
			return usagef("--shard %q: want K/N with 1 ≤ K ≤ N, such as 2/4", o.shard)
		}
		o.inShard = conformance.Shard(k, n)
	}
	return nil
}

func runConformance(ctx context.Context, o *conformanceOptions) (err error) {
	w, ew := o.io.out, o.io.err
	// A browser surface's Chromium would stop seconds after the run, by
	// then the command has exited: stop it now, and take its profile away.
	defer browser.StopAll()
	if o.list {
		for _, name := range conformance.CaseNames() {
			r := conformance.Requirements[name]
			fmt.Fprintf(w, "%-22s %-6s %-10s %s\n", name, r.Level, r.Capability, r.Text)
		}
		return nil
	}
	p, err := loadProfile(o.bridge)
	if err != nil {
		return err
	}
	var expected map[string]string
	if o.expected != "" {
		if expected, err = conformance.ReadExpectedFailures(o.expected); err != nil {
			return usageError{err}
		}
	}
	self, err := selfPath()
	if err != nil {
		return err
	}
	var real string
	if o.agent == "real" {
		if real, err = findReal(ctx, o.claude, o.rel.version, ew); err != nil {
			if o.claude != "" {
				return usagef("--claude %s: %v", o.claude, err)
			}
			return err
		}
	}
	work, err := os.MkdirTemp("", "askctl-conformance-")
	if err != nil {
		return err
	}
	if o.keep == keepAlways {
		fmt.Fprintf(ew, "work directory: %s\n", work)
	}
	defer func() {
		// Any error is a run that failed or could not finish.
		if o.keep == keepAlways || o.keep == keepOnFailure && err != nil {
			fmt.Fprintf(ew, "kept: %s (each case's bridge.log, surface.log and agent transcripts under run/)\n", work)
			return
		}
		os.RemoveAll(work)
	}()
	var match func(string) bool
	if o.match != nil || o.inShard != nil || o.skipRE != nil {
		match = func(n string) bool {
			return (o.match == nil || o.match.MatchString(n)) && (o.inShard == nil || o.inShard(n)) && (o.skipRE == nil || !o.skipRE.MatchString(n))
		}
	}
	total := 0
	for _, n := range conformance.CaseNames() {
		if match == nil || match(n) {
			total++
		}
	}
	if len(o.cases) > 0 {
		total = 0
		for _, f := range o.cases {
			if _, err := os.Stat(f); err != nil {
				return usagef("--case: %v", err)
			}
			if match == nil || match(strings.TrimSuffix(filepath.Base(f), ".txtar")) {
				total++
			}
		}
	}
	cfg := conformance.Config{Profile: p, Askctl: self, RealClaude: real, Slow: o.slow, CLIVersion: o.rel.play}
	if real != "" && o.rel.version == "" {
		// The report names the release the agents are.
		if v, err := claudecli.Version(ctx, real); err == nil {
			cfg.CLIVersion = v
		}
	}
	if total == 0 && o.explore > 0 {
		return runExplore(ctx, o, cfg, expected, nil, work)
	}
	if total == 0 && o.inShard != nil {
		fmt.Fprintf(ew, "shard %s holds none of the cases selected\n", o.shard)
	} else if total == 0 {
		if o.skip != "" {
			return usagef("--run %q less --skip %q leaves no case (askctl conformance --list lists them)", o.run, o.skip)
		}
		return usagef("--run %q matches no case (askctl conformance --list lists them)", o.run)
	}
	fmt.Fprintf(ew, "checking %s with the %s agent: %d cases\n", p.Name, o.agent, total)
	rep, err := conformance.RunSuite(ctx, cfg, conformance.RunOptions{
		Files: o.cases, Match: match, Parallel: o.parallel, ExpectedFailures: expected, Work: work, FailFast: o.failfast,
		Progress: func(done, total int, r conformance.Result) {
			line := fmt.Sprintf("[%d/%d] %-5s %s (%s)", done, total, r.Status, r.Case, r.Duration.Round(time.Millisecond))
			if (r.Status == conformance.Fail || r.Status == conformance.Skip || r.Status == conformance.NotRun) && r.Detail != "" {
				line += ": " + r.Detail
			}
			fmt.Fprintln(ew, clipLine(line, 200))
			if o.verbose && (r.Status == conformance.Fail || r.Status == conformance.Blocked || r.Status == conformance.XFail) {
				printStepLog(ew, r)
			}
		},
	})
	if rep == nil {
		return err
	}
	if err == nil && o.explore > 0 {
		return runExplore(ctx, o, cfg, expected, rep, work)
	}
	fmt.Fprintln(w)
	conformance.WriteTableWith(w, rep, conformance.TableOptions{Rows: o.rows})
	if err := writeReports(rep, o.json, o.junit); err != nil {
		return err
	}
	switch {
	case errors.Is(err, conformance.ErrInterrupted):
		return err // exit 130, as every command interrupted
	case err != nil:
		return err // the bridge would not start: exit 3
	case rep.Failed():
		return errMismatch
	}
	return nil
}

// printStepLog is -v's: a failed case's whole detail and its step log,
// indented under its progress line.
func printStepLog(w io.Writer, r conformance.Result) {
	fmt.Fprintf(w, "    %s\n", strings.ReplaceAll(r.Detail, "\n", "\n    "))
	if strings.TrimSpace(r.Log) == "" {
		fmt.Fprintln(w, "    (no step log)")
		return
	}
	for _, line := range strings.Split(strings.TrimRight(r.Log, "\n"), "\n") {
		fmt.Fprintf(w, "    | %s\n", clip.Printable(line))
	}
}

func clipLine(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func writeFileWith(path string, f func(*os.File) error) error {
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	file, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := f(file); err != nil {
		file.Close()
		return err
	}
	return file.Close()
}

// selfPath is this askctl as it was invoked (a multi-call binary is
// dispatched by its name), else the executable.
func selfPath() (string, error) {
	if arg0 := os.Args[0]; filepath.Base(arg0) == "askctl" {
		if p, err := exec.LookPath(arg0); err == nil {
			return filepath.Abs(p)
		}
	}
	return os.Executable()
}

// writeReports writes rep as JSON and as JUnit XML where asked.
func writeReports(rep *conformance.Report, jsonPath, junitPath string) error {
	if jsonPath != "" {
		if err := writeFileWith(jsonPath, func(f *os.File) error {
			enc := json.NewEncoder(f)
			enc.SetIndent("", "  ")
			return enc.Encode(rep)
		}); err != nil {
			return err
		}
	}
	if junitPath != "" {
		if err := writeFileWith(junitPath, func(f *os.File) error { return conformance.WriteJUnit(f, rep) }); err != nil {
			return err
		}
	}
	return nil
}

func newConformanceMergeCmd(s *stdio) *cli.Command {
	var jsonPath, junitPath string
	return &cli.Command{
		Name:      "merge",
		Usage:     "join the JSON reports of a sharded run (--shard K/N) into one report",
		ArgsUsage: "REPORT.json…",
		Description: `Reads the --json reports of the shards of one run (the same bridge and agent),
prints the table of the whole run, and writes it as JSON and JUnit XML where
asked. A case in two reports, or reports of different bridges, is an error.
Exit status as askctl conformance's: 0 every case passed, 1 one failed.

Example (a CI matrix of 4 jobs, then one job that joins them):
  askctl conformance --shard 2/4 --json shard-2.json
  askctl conformance merge --junit conformance.xml shard-*.json`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "json", Usage: "write the merged JSON report to `FILE`", Destination: &jsonPath},
			&cli.StringFlag{Name: "junit", Usage: "write the merged JUnit XML report to `FILE`", Destination: &junitPath},
		},
		Before: func(ctx context.Context, cmd *cli.Command) (context.Context, error) {
			if cmd.Args().Len() == 0 {
				return ctx, usagef("merge: name the shards' JSON reports")
			}
			return ctx, nil
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			var reps []*conformance.Report
			for _, path := range cmd.Args().Slice() {
				r, err := conformance.ReadReport(path)
				if err != nil {
					return usageError{err}
				}
				reps = append(reps, r)
			}
			rep, err := conformance.Merge(reps...)
			if err != nil {
				return usageError{err}
			}
			conformance.WriteTable(s.out, rep)
			if err := writeReports(rep, jsonPath, junitPath); err != nil {
				return err
			}
			if rep.Failed() {
				return errMismatch
			}
			return nil
		},
	}
}

// runExplore explores cfg's bridge after the cases of rep (nil: none ran),
// adds what it found to the report, and prints and writes it.
func runExplore(ctx context.Context, o *conformanceOptions, cfg conformance.Config, expected map[string]string, rep *conformance.Report, work string) error {
	w, ew := o.io.out, o.io.err
	if rep == nil {
		rep = &conformance.Report{Profile: cfg.Profile.File, Bridge: cfg.Profile.Name, Agent: o.agent, Started: time.Now()}
	}
	fmt.Fprintf(ew, "exploring %s for %v (seed %s)\n", cfg.Profile.Name, o.explore, seedText(o.seed))
	last := time.Time{}
	res, err := conformance.Explore(ctx, cfg, conformance.ExploreOptions{Duration: o.explore, Seed: o.seed, Workers: o.parallel, Work: filepath.Join(work, "explore"), ExpectedFailures: expected,
		Progress: func(p conformance.ExploreProgress) {
			if time.Since(last) < time.Second {
				return
			}
			last = time.Now()
			state := "exploring"
			if p.Shrinking {
				state = "shrinking a failure"
			}
			fmt.Fprintf(ew, "  %s: %d sequences, %d steps, %d sessions, %d invariant checks, seed %d (%s)\n",
				state, p.Sequences, p.Steps, p.Sessions, p.InvariantChecks(), p.Seed, p.Elapsed.Round(time.Second))
		}})
	if res != nil {
		seeds := fmt.Sprintf("seeds %d…%d", res.FirstSeed, res.Seed)
		if res.Seed <= res.FirstSeed {
			seeds = fmt.Sprintf("seed %d", res.FirstSeed)
		}
		r := conformance.Result{Case: "explore (" + seeds + ")", Status: conformance.Pass, Duration: res.Elapsed,
			Detail: fmt.Sprintf("%d sequences, %d steps, %d sessions, %d invariant checks", res.Sequences, res.Steps, res.Sessions, res.InvariantChecks())}
		if res.Skipped > 0 {
			r.Detail += fmt.Sprintf("; %d skipped for an operation the surface lacks (%s)", res.Skipped, res.SkipReason)
		}
		if len(res.Ops) > 0 {
			r.Detail += "; steps taken: " + res.OpsLine()
			fmt.Fprintf(ew, "  steps taken: %s\n", res.OpsLine())
		}
		if errors.Is(err, conformance.ErrBridgeWontStart) || errors.Is(err, conformance.ErrInterrupted) {
			r.Status, r.Detail = conformance.NotRun, err.Error()
			if errors.Is(err, conformance.ErrInterrupted) {
				r.Status = conformance.Interrupted
			}
		}
		if f := res.Failure; f != nil {
			r.Case = fmt.Sprintf("explore (seed %d)", f.Seed)
			r.Requirement = conformance.Requirements[f.Requirement]
			r.Status, r.Detail, r.Log = conformance.Fail, f.Detail, f.Log
			if err := os.WriteFile(o.found, []byte(f.Case), 0o644); err != nil {
				return err
			}
			replay := "it failed again when replayed from the file"
			if f.ReplayRuns > 1 {
				replay = fmt.Sprintf("it failed again when replayed from the file, at the %s run: it depends on timing", ordinal(f.ReplayRuns))
			}
			if !f.Replayed {
				replay = fmt.Sprintf("it did NOT fail again in %d replays from the file: the defect depends on timing; run it a few times", f.ReplayRuns)
			} else if n := len(res.Unreplayed); n > 0 {
				replay += fmt.Sprintf("; %d failing sequence(s) found before it did not fail again when replayed, so the exploration went on", n)
			}
			fmt.Fprintf(ew, "found: %s %s, shrunk to %d steps; written to %s (%s)\n  replay it: askctl conformance --bridge %s --case %s\n",
				f.Status, f.Requirement, f.Steps, o.found, replay, o.bridge, o.found)
		}
		rep.Results = append(rep.Results, r)
		for _, why := range res.SetupRetries {
			fmt.Fprintf(ew, "a sequence was run again: the bridge could not be set up the first time: %s\n", why)
		}
	}
	rep.Duration = time.Since(rep.Started)
	fmt.Fprintln(w)
	conformance.WriteTable(w, rep)
	if err := writeReports(rep, o.json, o.junit); err != nil {
		return err
	}
	switch {
	case err != nil:
		return err
	case rep.Failed():
		return errMismatch
	}
	return nil
}

func seedText(s uint64) string {
	if s == 0 {
		return "from the clock"
	}
	return fmt.Sprint(s)
}

// ordinal is n as "1st", "2nd", "3rd", "4th"…
func ordinal(n int) string {
	switch n {
	case 1:
		return "1st"
	case 2:
		return "2nd"
	case 3:
		return "3rd"
	}
	return fmt.Sprintf("%dth", n)
}
