package learn

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/askctl/askctl/claudecli"
	"github.com/askctl/askctl/fakeclaude"
	"github.com/askctl/askctl/internal/agent"
	"github.com/askctl/askctl/internal/replay"
	"github.com/askctl/askctl/scenarios"
	"github.com/tidwall/gjson"
)

// Options says what to learn from.
type Options struct {
	Version   string                // the release
	Real      agent.Real            // that release, installed
	Fake      agent.Fake            // fakeclaude; its CLIVersion is set here
	Scenarios []*scenarios.Scenario // what to play (the built-ins)
	Timeout   time.Duration         // each wait's deadline
	Work      string                // a directory for the drafts
	Progress  io.Writer             // one line per scenario played
	Now       func() time.Time
}

// Outcome is what Learn found.
type Outcome struct {
	Release     *claudecli.Release
	Unexpressed []string // differences data cannot say
	Remaining   []string // differences the last check still found, by scenario
	Equal       int      // scenarios equal with the learned data
	Total       int
	Rounds      int
}

// maxRounds bounds the learn-and-check rounds: a second round learns what
// only a session equal in its first part shows (a resumed session).
const maxRounds = 3

// Learn plays every scenario with the real release and with fakeclaude
// playing what is learned so far, learns from the differences, and plays
// again, until the two are equal or nothing more can be learned.
func Learn(ctx context.Context, o Options) (Outcome, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	draft := &claudecli.Release{Version: o.Version}
	var out Outcome
	for round := 1; round <= maxRounds; round++ {
		out.Rounds = round
		file := filepath.Join(o.Work, fmt.Sprintf("%s.round%d.json", o.Version, round))
		if err := Write(file, draft); err != nil {
			return out, err
		}
		fake := o.Fake
		fake.CLIVersion = file
		var sessions []Session
		out.Equal, out.Total, out.Remaining = 0, len(o.Scenarios), nil
		for i, sc := range o.Scenarios {
			fr := replay.Fidelity(ctx, sc, fake, o.Real, replay.Options{Timeout: o.Timeout})
			if err := ctx.Err(); err != nil {
				return out, err
			}
			for _, r := range []replay.Report{fr.Fake, fr.Real} {
				if r.Error != "" {
					return out, fmt.Errorf("%s: %s agent: %s", sc.Name, r.Agent, r.Error)
				}
			}
			status := "equal"
			if fr.Equal {
				out.Equal++
			} else {
				status = fmt.Sprintf("%d difference(s)", len(fr.Diffs)+len(fr.Fake.Diffs)+len(fr.Real.Diffs))
				for _, d := range fr.Diffs {
					out.Remaining = append(out.Remaining, sc.Name+": "+d.String())
				}
				for _, d := range fr.Real.Diffs {
					out.Remaining = append(out.Remaining, sc.Name+": the release vs the scenario: "+d.String())
				}
				for _, d := range fr.Fake.Diffs {
					out.Remaining = append(out.Remaining, sc.Name+": fakeclaude vs the scenario: "+d.String())
				}
			}
			if o.Progress != nil {
				fmt.Fprintf(o.Progress, "round %d [%d/%d] %s: %s\n", round, i+1, len(o.Scenarios), sc.Name, status)
			}
			sessions = append(sessions, Session{Scenario: sc.Name, Real: replay.Kept(fr.Real.Records), Fake: replay.Kept(fr.Fake.Records), RealRows: fr.Real.Sessions, FakeRows: fr.Fake.Sessions})
			if fr.ResumedReal != nil && fr.ResumedFake != nil {
				sessions = append(sessions, Session{Scenario: sc.Name + " (resumed)", Real: replay.Kept(fr.ResumedReal.Records), Fake: replay.Kept(fr.ResumedFake.Records),
					RealRows: fr.ResumedReal.Sessions, FakeRows: fr.ResumedFake.Sessions})
			}
		}
		if out.Equal == out.Total {
			out.Unexpressed = nil
			break
		}
		res := Derive(o.Version, sessions, o.Now())
		out.Unexpressed = res.Unexpressed
		if round == maxRounds {
			break // what a last round would learn would go unchecked
		}
		if !Merge(draft, res.Release) {
			break // nothing more to learn: what is left is not data
		}
	}
	out.Release = draft
	if len(o.Scenarios) > 0 {
		model, err := defaultModel(ctx, o)
		if err != nil {
			return out, err
		}
		if model != fakeclaude.DefaultModel {
			draft.DefaultModel = model
		}
	}
	return out, nil
}

// defaultModel is the model the release reports when no --model is given,
// read off the system/init of the first scenario played so.
func defaultModel(ctx context.Context, o Options) (string, error) {
	args := []string{"--output-format=stream-json", "--verbose", "--input-format=stream-json", "--permission-prompt-tool=stdio"}
	r := replay.Replay(ctx, o.Scenarios[0], o.Real, replay.Options{Timeout: o.Timeout, Args: args})
	for _, rec := range replay.Kept(r.Records) {
		if claudecli.Kind(rec.Msg) == "system/init" {
			return gjson.GetBytes(rec.Msg, "model").String(), nil
		}
	}
	return "", fmt.Errorf("%s with no --model: no system/init (%s)", o.Scenarios[0].Name, r.Error)
}

// Merge adds what more learned to r; false when there was nothing new.
func Merge(r, more *claudecli.Release) bool {
	changed := false
	for kind, p := range more.Messages {
		if r.Messages == nil {
			r.Messages = map[string]*claudecli.Patch{}
		}
		q := r.Messages[kind]
		if q == nil {
			q = &claudecli.Patch{}
			r.Messages[kind] = q
		}
		for _, k := range p.Drop {
			if !slices.Contains(q.Drop, k) {
				q.Drop = append(q.Drop, k)
				changed = true
			}
		}
		for _, a := range p.Add {
			if !slices.ContainsFunc(q.Add, func(b claudecli.Addition) bool { return b.Key == a.Key }) {
				q.Add = append(q.Add, a)
				changed = true
			}
		}
		slices.Sort(q.Drop)
		slices.SortFunc(q.Add, func(a, b claudecli.Addition) int { return strings.Compare(a.Key, b.Key) })
	}
	return changed
}

// Write writes a release file, indented, with a final newline.
func Write(path string, r *claudecli.Release) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// Summary says what sets r apart from old, a learned release, for a
// reviewer: per kind, the keys one writes and the other does not, and
// the behaviours (claudecli.Behaviours) that differ.
func Summary(r, old *claudecli.Release) []string {
	keys := func(rel *claudecli.Release) map[string]string {
		m := map[string]string{}
		if rel == nil {
			return m
		}
		for kind, p := range rel.Messages {
			for _, k := range p.Drop {
				m[kind+" "+k] = "does not write"
			}
			for _, a := range p.Add {
				v := string(a.Value)
				if a.Gen != "" {
					v = "a fresh " + a.Gen
				}
				m[kind+" "+a.Key] = "writes (" + v + ")"
			}
		}
		return m
	}
	nk, ok := keys(r), keys(old)
	var out []string
	for _, k := range sortedKeys(nk) {
		if ok[k] != nk[k] {
			was := ok[k]
			if was == "" {
				was = "as the base"
			}
			out = append(out, fmt.Sprintf("%s: %s %s; %s %s", k, r.Version, nk[k], old.Version, was))
		}
	}
	for _, k := range sortedKeys(ok) {
		if _, in := nk[k]; !in {
			out = append(out, fmt.Sprintf("%s: %s as the base; %s %s", k, r.Version, old.Version, ok[k]))
		}
	}
	if r.DefaultModel != old.DefaultModel {
		model := func(rel *claudecli.Release) string {
			if rel.DefaultModel == "" {
				return "the base's " + fakeclaude.DefaultModel
			}
			return rel.DefaultModel
		}
		out = append(out, fmt.Sprintf("default model: %s reports %s; %s %s", r.Version, model(r), old.Version, model(old)))
	}
	for _, b := range claudecli.Behaviours {
		if b.In(r.Version) != b.In(old.Version) {
			has := r.Version
			if !b.In(r.Version) {
				has = old.Version
			}
			out = append(out, fmt.Sprintf("behaviour %s (since %s): %s has it: %s", b.Name, b.Since, has, b.What))
		}
	}
	return out
}

// Nearest is the learned release closest to version, the older when two
// are as close; "" when none is learned but version itself.
func Nearest(version string, learned []string) string {
	best := ""
	for _, v := range learned {
		if v == version {
			continue
		}
		if best == "" || distance(v, version) < distance(best, version) ||
			distance(v, version) == distance(best, version) && claudecli.CompareVersions(v, best) < 0 {
			best = v
		}
	}
	return best
}

// distance counts releases between two versions by their last number
// (releases of one minor line), else by order alone.
func distance(a, b string) int {
	ai, bi := strings.LastIndex(a, "."), strings.LastIndex(b, ".")
	if ai < 0 || bi < 0 || a[:ai] != b[:bi] {
		return 1 << 20
	}
	var x, y int
	fmt.Sscan(a[ai+1:], &x)
	fmt.Sscan(b[bi+1:], &y)
	if x > y {
		return x - y
	}
	return y - x
}
