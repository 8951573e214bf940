package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/askctl/askctl/claudecli"
	"github.com/askctl/askctl/internal/agent"
	"github.com/askctl/askctl/internal/learn"
	"github.com/askctl/askctl/internal/replay"
	"github.com/tidwall/gjson"
)

func runClaudeReleases(o *claudeOptions) error {
	rs := claudecli.Releases()
	if o.json {
		type row struct {
			Version    string   `json:"version"`
			Default    bool     `json:"default,omitempty"`
			AgentSDK   string   `json:"agent_sdk,omitempty"`
			Behaviours []string `json:"behaviours"`
		}
		var out []row
		for _, v := range rs {
			r := row{Version: v, Default: v == claudecli.Newest(), Behaviours: []string{}}
			if rel, err := claudecli.Load(v); err == nil {
				r.AgentSDK = rel.AgentSDK
			}
			for _, b := range claudecli.Behaviours {
				if b.In(v) {
					r.Behaviours = append(r.Behaviours, b.Name)
				}
			}
			out = append(out, r)
		}
		return printJSON(o.io.out, out)
	}
	for _, v := range rs {
		mark := ""
		if v == claudecli.Newest() {
			mark = "  (default: the newest)"
		}
		if v == claudecli.Base {
			mark += "  (the base fakeclaude's code writes)"
		}
		fmt.Fprintf(o.io.out, "%s%s\n", v, mark)
	}
	for _, b := range claudecli.Behaviours {
		fmt.Fprintf(o.io.out, "\nbehaviour %s, since %s:\n  %s\n", b.Name, b.Since, b.What)
	}
	return nil
}

// sourceReleaseDir is claudecli/releases of the askctl source tree dir
// is in, if it is in one.
func sourceReleaseDir(dir string) (string, bool) {
	for d := dir; ; d = filepath.Dir(d) {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil {
			if strings.HasPrefix(string(b), "module github.com/askctl/askctl\n") {
				return filepath.Join(d, filepath.FromSlash(claudecli.ReleaseDir)), true
			}
			return "", false
		}
		if filepath.Dir(d) == d {
			return "", false
		}
	}
}

func runClaudeLearn(ctx context.Context, o *claudeOptions) error {
	w, ew := o.io.out, o.io.err
	dir, source := o.dir, false
	if dir == "" {
		source = true
		cwd, _ := os.Getwd()
		d, ok := sourceReleaseDir(cwd)
		if !ok {
			return usagef("learn writes into the askctl source tree, and %s is not in one: run it there, or pass --dir", cwd)
		}
		dir = d
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return usagef("--dir %s: not a directory", dir)
	}
	bin, err := claudecli.InstallOf(ctx, o.version, ew)
	if err != nil {
		return err
	}
	// Flags are code (claudecli.ParseArgs): a new one is named, not data.
	var newFlags []string
	if help, err := exec.CommandContext(ctx, bin, "--help").Output(); err == nil {
		newFlags = claudecli.UnknownFlags(string(help))
	}
	work, err := os.MkdirTemp("", "askctl-learn-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	scs, err := loadScenarios(nil) // every built-in
	if err != nil {
		return err
	}
	fmt.Fprintf(ew, "learning claude %s from %d built-in scenarios …\n", o.version, len(scs))
	out, err := learn.Learn(ctx, learn.Options{Version: o.version, Real: agent.Real{Claude: bin}, Fake: fakeAgent(), Scenarios: scs,
		Timeout: o.timeout, Work: work, Progress: ew})
	if err != nil {
		return err
	}
	rel := out.Release
	rel.AgentSDK = agentSDKFor(ctx, o.version)
	rel.Learned = fmt.Sprintf("%s, by askctl claude learn from the %d built-in scenarios", time.Now().UTC().Format("2006-01-02"), len(scs))
	if out.Equal != out.Total {
		fmt.Fprintf(w, "claude %s: %d of %d scenarios equal after learning; nothing written. What data cannot say:\n", o.version, out.Equal, out.Total)
		for _, u := range out.Unexpressed {
			fmt.Fprintf(w, "  - %s\n", u)
		}
		for _, r := range out.Remaining {
			fmt.Fprintf(w, "  - %s\n", r)
		}
		fmt.Fprintf(w, "A behaviour like this is code: a claudecli.Behaviour gated by the first release that has it.\n")
		return errMismatch
	}
	path := filepath.Join(dir, o.version+".json")
	if err := learn.Write(path, rel); err != nil {
		return err
	}
	fmt.Fprintf(w, "claude %s learned: %d of %d scenarios equal (%d round(s)); wrote %s\n", o.version, out.Equal, out.Total, out.Rounds, path)
	if source {
		// The default release is a constant, kept here.
		pkg := filepath.Dir(dir)
		if err := os.WriteFile(filepath.Join(pkg, "newest.go"), claudecli.NewestSource(claudecli.NewestIn(os.DirFS(pkg))), 0o644); err != nil {
			return err
		}
	}
	learned, load := claudecli.Releases(), claudecli.Load
	if source {
		// The source tree's, which may hold releases this askctl was
		// built without.
		learned = claudecli.ReleasesIn(os.DirFS(filepath.Dir(dir)))
		load = func(v string) (*claudecli.Release, error) { return claudecli.Load(filepath.Join(dir, v+".json")) }
	}
	if near := learn.Nearest(o.version, learned); near != "" {
		old, err := load(near)
		if err == nil {
			lines := learn.Summary(rel, old)
			fmt.Fprintf(w, "against %s, the nearest learned release: %d difference(s)\n", near, len(lines))
			for _, l := range lines {
				fmt.Fprintf(w, "  - %s\n", l)
			}
		}
	}
	for _, f := range newFlags {
		fmt.Fprintf(w, "not data: claude %s --help lists %s, which claudecli.ParseArgs does not know (fakeclaude keeps it as an unknown flag); teach ParseArgs\n", o.version, f)
	}
	fmt.Fprintf(w, "next: make build, then askctl fidelity --cli %s\n", o.version)
	return nil
}

// agentSDKFor is the TypeScript Agent SDK release npm published nearest in
// time to claude version, or "" when npm does not say.
func agentSDKFor(ctx context.Context, version string) string {
	times := func(pkg string) gjson.Result {
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		b, err := exec.CommandContext(ctx, "npm", "view", pkg, "time", "--json").Output()
		if err != nil {
			return gjson.Result{}
		}
		return gjson.ParseBytes(b)
	}
	cli := times("@anthropic-ai/claude-code").Get(gjson.Escape(version))
	if !cli.Exists() {
		return ""
	}
	at, err := time.Parse(time.RFC3339, cli.String())
	if err != nil {
		return ""
	}
	best, bestD := "", time.Duration(1<<62)
	times("@anthropic-ai/claude-agent-sdk").ForEach(func(k, v gjson.Result) bool {
		t, err := time.Parse(time.RFC3339, v.String())
		if err != nil || k.String() == "created" || k.String() == "modified" {
			return true
		}
		d := t.Sub(at)
		if d < 0 {
			d = -d
		}
		if d < bestD {
			best, bestD = k.String(), d
		}
		return true
	})
	if bestD > 24*time.Hour {
		return ""
	}
	return best
}

func runClaudeDrift(ctx context.Context, o *claudeOptions) error {
	w, ew := o.io.out, o.io.err
	askCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	b, err := exec.CommandContext(askCtx, "npm", "view", "@anthropic-ai/claude-code", "version").Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%w: %s", err, strings.TrimSpace(string(ee.Stderr)))
		}
		return fmt.Errorf("asking npm for the newest claude release: %w", err)
	}
	latest := strings.TrimSpace(string(b))
	learned := claudecli.Newest()
	newer := claudecli.CompareVersions(latest, learned) > 0
	report := map[string]any{"latest": latest, "learned": learned, "needs_learning": newer}
	var diffs []string
	equal, total := 0, 0
	if newer && !o.quick {
		// Play it against the newest learned release: what a bridge
		// tested with askctl today would meet.
		bin, err := claudecli.InstallOf(ctx, latest, ew)
		if err != nil {
			return err
		}
		fake := fakeAgent()
		fake.CLIVersion = learned
		scs, err := loadScenarios(nil)
		if err != nil {
			return err
		}
		for _, sc := range scs {
			n := sc.Name
			fr := replay.Fidelity(ctx, sc, fake, agent.Real{Claude: bin}, replay.Options{Timeout: o.timeout})
			if err := ctx.Err(); err != nil {
				return err
			}
			total++
			if fr.Equal {
				equal++
			}
			fmt.Fprintf(ew, "[%d/%d] %s: equal %v\n", total, len(scs), n, fr.Equal)
			for _, d := range append(append(fr.Diffs, prefixed("fake vs scenario", fr.Fake.Diffs)...), prefixed("real vs scenario", fr.Real.Diffs)...) {
				diffs = append(diffs, n+": "+d.String())
			}
		}
		report["equal"], report["scenarios"], report["differences"] = equal, total, diffs
	}
	switch {
	case o.json:
		if err := printJSON(w, report); err != nil {
			return err
		}
	case newer:
		fmt.Fprintf(w, "claude %s is out; the newest learned release is %s.\n", latest, learned)
		if total > 0 {
			fmt.Fprintf(w, "played against fakeclaude as %s: %d of %d scenarios equal\n", learned, equal, total)
			for _, d := range diffs {
				fmt.Fprintf(w, "  - %s\n", d)
			}
		}
		fmt.Fprintf(w, "next: askctl claude learn %s (in the askctl source tree), then askctl fidelity --cli %s\n", latest, latest)
	case latest == learned:
		fmt.Fprintf(w, "claude %s is the newest release, and it is learned\n", latest)
	default:
		fmt.Fprintf(w, "npm's newest claude is %s; askctl has learned a newer one, %s: nothing to learn\n", latest, learned)
	}
	if newer {
		return errMismatch
	}
	return nil
}
