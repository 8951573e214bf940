// Package mutation is the oracle of `make mutate`: the conformance suite,
// run from a test in the package a mutation tool mutates (bridge, and the
// MCP ask server), against the askctl built from that mutated source.
//
// The mutation tool (gremlins) runs `go test -tags mutation` in the mutated
// package. Under that tag the package's own unit tests are left out (their
// files say //go:build !mutation), and its mutation_test.go calls Main and
// Oracle: Main builds askctl, fakeclaude and fakeclaude-mcp from the module
// the test runs in (so from the mutant), and Oracle runs the conformance
// suite against the reference bridge through one profile. A mutant is
// killed when a case fails.
//
// A coverage-guided tool tests only the mutants its coverage run reaches,
// and the bridge runs in a subprocess. When the test runs with -cover, Main
// builds askctl with -cover, collects the counters its processes write
// (GOCOVERDIR), and adds them to the test's -coverprofile, so the tool sees
// what the suite ran.
package mutation

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"go/scanner"
	gotoken "go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/askctl/askctl/conformance"
	"github.com/askctl/askctl/internal/testenv"
	"github.com/askctl/askctl/profile"
)

// EnvProfile names the profiles the oracle runs the suite through, in turn,
// comma-separated: each a surface kind of a built-in reference profile (ws,
// http, control-ws, browser) or a profile file. Default ws.
const EnvProfile = "ASKCTL_MUTATE_PROFILE"

// EnvExplore, a duration, makes the oracle explore the bridge that long
// (from seed 1, so every mutant meets the same sequences) after the suite
// passes: a mutant the cases miss and the explorer finds is killed.
const EnvExplore = "ASKCTL_MUTATE_EXPLORE"

// EnvLedger names a file the oracle appends one line to for each mutant it
// judges: where the mutant is, what it changed, and what killed it (the
// cases, the explorer) or that it lived. EnvOrigin is the unmutated module
// root the mutant is found against. One run with the explorer so gives the
// score with it and without it (the cases run first), mutant by mutant.
const (
	EnvLedger = "ASKCTL_MUTATE_LEDGER"
	EnvOrigin = "ASKCTL_MUTATE_ORIGIN"
)

// CoveredPackages are the packages whose coverage the oracle reports: those
// `make mutate` mutates.
var CoveredPackages = []string{"github.com/askctl/askctl/bridge", "github.com/askctl/askctl/internal/mcpask"}

// mainPackages must be instrumented too: a binary built with -cover writes
// its counters at exit only when its main package is.
var mainPackages = []string{"github.com/askctl/askctl/cmd/askctl"}

var askctlBin string

// mutant is where the mutant under test is and what it changed (findMutant),
// found once as the test binary starts: "" with no ledger to write, or no
// mutant (the tool's coverage run).
var mutant string

// Main is the mutation test binary's TestMain.
func Main(m *testing.M) {
	testenv.RunAsFakeclaude()
	flag.Parse()
	// The test binary built: a mutant the tool counts as killed with no
	// verdict after this line ended the run some other way (a timeout, a
	// crash); with none, it did not build.
	logf := func(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...) }
	if origin := os.Getenv(EnvOrigin); os.Getenv(EnvLedger) != "" && origin != "" {
		var err error
		if mutant, err = findMutant(origin); err != nil {
			logf("mutation ledger: %v", err)
		}
	}
	record(logf, "started")
	code, err := run(testenv.Cleaned(m))
	testenv.Cleanup() // also when the mutant did not build, and no test ran
	if err != nil {
		fmt.Fprintln(os.Stderr, "mutation:", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

func run(m testenv.TestingM) (int, error) {
	root, err := moduleRoot()
	if err != nil {
		return 1, err
	}
	dir, err := os.MkdirTemp("", "askctl-mutation-")
	if err != nil {
		return 1, err
	}
	defer os.RemoveAll(dir)
	args := []string{"build", "-o", dir + string(filepath.Separator)}
	cover := testing.CoverMode() != ""
	covDir := filepath.Join(dir, "cover")
	if cover {
		args = append(args, "-cover", "-covermode", testing.CoverMode(), "-coverpkg", strings.Join(append(CoveredPackages, mainPackages...), ","))
		if err := os.Mkdir(covDir, 0o755); err != nil {
			return 1, err
		}
		os.Setenv("GOCOVERDIR", covDir)
	}
	args = append(args, "./cmd/askctl", "./cmd/fakeclaude", "./cmd/fakeclaude-mcp")
	build := exec.Command("go", args...)
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return 1, fmt.Errorf("building askctl from the mutated source: %v\n%s", err, out)
	}
	askctlBin = filepath.Join(dir, "askctl")
	code := m.Run()
	if cover {
		if err := addCoverage(covDir, filepath.Join(dir, "cover.txt")); err != nil {
			return code, err
		}
	}
	return code, nil
}

func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %v", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", fmt.Errorf("not in a Go module")
	}
	return filepath.Dir(mod), nil
}

// addCoverage appends the counters askctl's processes wrote in covDir to
// the test's -coverprofile (the testing package wrote it when m.Run ended).
func addCoverage(covDir, txt string) error {
	f := flag.Lookup("test.coverprofile")
	if f == nil || f.Value.String() == "" {
		return nil
	}
	profile := f.Value.String()
	if !filepath.IsAbs(profile) {
		if d := flag.Lookup("test.outputdir"); d != nil && d.Value.String() != "" {
			profile = filepath.Join(d.Value.String(), profile)
		}
	}
	if out, err := exec.Command("go", "tool", "covdata", "textfmt", "-i", covDir, "-o", txt).CombinedOutput(); err != nil {
		return fmt.Errorf("go tool covdata: %v\n%s", err, out)
	}
	in, err := os.Open(txt)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(profile, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(out)
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "mode:") {
			continue
		}
		fmt.Fprintln(w, sc.Text())
	}
	if err := sc.Err(); err != nil {
		out.Close()
		return err
	}
	if err := w.Flush(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// Oracle runs the conformance suite against the reference bridge built from
// the mutated source, through each profile EnvProfile names in turn (a
// comma-separated list), and then explores it through the first.
func Oracle(t *testing.T) {
	names := os.Getenv(EnvProfile)
	if names == "" {
		names = "ws"
	}
	var ps []*profile.Profile
	for _, name := range strings.Split(names, ",") {
		p, ok, err := profile.Builtin("reference-" + name)
		if !ok {
			p, err = profile.Load(name)
		}
		if err != nil {
			t.Fatalf("%s=%s (surface kinds of the built-in reference profiles, or profile files, comma-separated): %v", EnvProfile, names, err)
		}
		ps = append(ps, p)
	}
	verdict := "error"
	t.Cleanup(func() { record(t.Logf, verdict) })
	for _, p := range ps {
		// Every case at once (they mostly wait), and the first failure
		// ends the run: a mutant that hangs the bridge is killed in
		// seconds, not at the tool's timeout.
		ctx, cancel := context.WithCancel(context.Background())
		var first string
		rep, err := conformance.RunSuite(ctx, conformance.Config{Profile: p, Askctl: askctlBin, ClaimTimeout: 5 * time.Second},
			conformance.RunOptions{Parallel: 8, Progress: func(_, _ int, r conformance.Result) {
				if (r.Status == conformance.Fail || r.Status == conformance.Blocked) && first == "" {
					first = fmt.Sprintf("%s %s: %s", r.Case, r.Status, r.Detail)
					cancel()
				}
			}})
		cancel()
		switch {
		case first != "":
			verdict = "cases\t" + first
			t.Fatal(first)
		case err != nil:
			verdict = "cases\tthe suite could not run: " + err.Error()
			t.Fatal(err)
		case rep.Failed():
			verdict = fmt.Sprintf("cases\tfailing: %v", rep.Failing())
			t.Fatalf("failing: %v", rep.Failing())
		}
	}
	p := ps[0]
	verdict = "lived"
	defer func() {
		if t.Failed() && verdict == "lived" {
			verdict = "explore-error"
		}
	}()
	if s := os.Getenv(EnvExplore); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("%s=%q: %v", EnvExplore, s, err)
		}
		res, err := conformance.Explore(context.Background(), conformance.Config{Profile: p, Askctl: askctlBin, ClaimTimeout: 5 * time.Second},
			conformance.ExploreOptions{Duration: d, Seed: 1, Shrink: time.Second})
		switch {
		case err != nil:
			verdict = "explore-error\t" + err.Error()
			t.Fatal(err)
		case res.Failure != nil:
			verdict = fmt.Sprintf("explore\tseed %d: %s %s", res.Failure.Seed, res.Failure.Status, res.Failure.Requirement)
			t.Fatalf("explored: seed %d: %s %s: %s", res.Failure.Seed, res.Failure.Status, res.Failure.Requirement, res.Failure.Detail)
		}
	}
}

// record appends the mutant's line to the ledger EnvLedger names:
// file:line:col, the text it replaced and its replacement, and the verdict
// (or "started"). With no mutant found (no ledger asked for, or the tool's
// coverage run) it writes nothing.
func record(logf func(string, ...any), verdict string) {
	if mutant == "" {
		return
	}
	f, err := os.OpenFile(os.Getenv(EnvLedger), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		logf("mutation ledger: %v", err)
		return
	}
	defer f.Close()
	// One write of one short line: O_APPEND keeps the workers' lines whole.
	verdict = strings.ReplaceAll(verdict, "\n", " ")
	if len(verdict) > 300 {
		verdict = verdict[:300] + "…"
	}
	if _, err := fmt.Fprintf(f, "%s\t%s\n", mutant, verdict); err != nil {
		logf("mutation ledger: %v", err)
	}
}

// findMutant compares the Go files of the package the test runs in (in the
// tool's copy of the module) with the same files under origin, token by
// token (the tool writes a mutant back reformatted), and says where the
// first token differs, as the tool names a mutant's position, with the
// token before and after.
func findMutant(origin string) (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	rel, err := filepath.Rel(root, wd)
	if err != nil {
		return "", err
	}
	files, err := filepath.Glob(filepath.Join(wd, "*.go"))
	if err != nil {
		return "", err
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		now, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		was, err := os.ReadFile(filepath.Join(origin, rel, filepath.Base(f)))
		if err != nil {
			return "", err
		}
		if d := describe(filepath.Base(f), was, now); d != "" {
			return d, nil
		}
	}
	return "", nil
}

type token1 struct {
	pos  gotoken.Position
	text string
}

// tokens are src's tokens, comments left out.
func tokens(name string, src []byte) []token1 {
	fset := gotoken.NewFileSet()
	file := fset.AddFile(name, -1, len(src))
	var sc scanner.Scanner
	sc.Init(file, src, nil, 0)
	var out []token1
	for {
		pos, tok, lit := sc.Scan()
		if tok == gotoken.EOF {
			return out
		}
		text := lit
		if text == "" || tok == gotoken.SEMICOLON {
			text = tok.String()
		}
		out = append(out, token1{fset.Position(pos), text})
	}
}

// describe names the first token that differs between was and now, at its
// place in was ("" if none does).
func describe(name string, was, now []byte) string {
	a, b := tokens(name, was), tokens(name, now)
	i := 0
	for i < len(a) && i < len(b) && a[i].text == b[i].text {
		i++
	}
	if i == len(a) && i == len(b) {
		return ""
	}
	at, before, after := "end", "", ""
	if i < len(a) {
		at, before = fmt.Sprintf("%d:%d", a[i].pos.Line, a[i].pos.Column), a[i].text
	}
	if i < len(b) {
		after = b[i].text
	}
	return fmt.Sprintf("%s:%s\t%q→%q", name, at, before, after)
}
