package replay

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/askctl/askctl/agent"
	"github.com/askctl/askctl/scenarios"
	"github.com/askctl/askctl/transcript"
	"github.com/tidwall/gjson"
)

// Report is how one scenario replayed.
type Report struct {
	Scenario string              `json:"scenario"`
	File     string              `json:"file"`
	Agent    string              `json:"agent"`
	Version  string              `json:"agent_version,omitempty"`
	Mode     string              `json:"mode"` // "steps" or "recording"
	Match    bool                `json:"match"`
	Messages int                 `json:"messages"` // messages the agent wrote
	Exit     int                 `json:"exit"`
	Duration time.Duration       `json:"duration_ns"`
	PeakRSS  int64               `json:"agent_peak_rss_bytes"`
	Diffs    []Diff              `json:"diffs,omitempty"`
	Error    string              `json:"error,omitempty"`
	Records  []transcript.Record `json:"-"`
	Notes    []transcript.Record `json:"-"` // the agent's own notes and failures
}

// Options tune Replay.
type Options struct {
	Timeout time.Duration // the whole session; zero means one minute
	Log     transcript.Sink
}

// Replay plays sc's SDK side against a fresh agent and checks what the agent
// wrote: against the recording for a recorded scenario, else against the
// steps.
func Replay(ctx context.Context, sc *scenarios.Scenario, ag agent.Agent, opts Options) Report {
	rep := Report{Scenario: sc.Name, File: sc.File, Agent: ag.Name(), Mode: "steps"}
	if len(sc.Wire) > 0 {
		rep.Mode = "recording"
	}
	start := time.Now()
	plan, err := PlanFor(sc, ag.CancelsItself())
	if err != nil {
		rep.Error = err.Error()
		return rep
	}
	var (
		mu    sync.Mutex
		notes []transcript.Record
	)
	sink := transcript.Multi{opts.Log, transcript.Func(func(r transcript.Record) error {
		if !r.IsWire() {
			mu.Lock()
			notes = append(notes, r)
			mu.Unlock()
		}
		return nil
	})}
	p, err := ag.Start(ctx, sc, agent.Options{Log: transcript.Func(func(r transcript.Record) error { return sink.Write(r) })})
	if err != nil {
		rep.Error = fmt.Sprintf("starting the %s agent: %v", ag.Name(), err)
		return rep
	}
	rep.Version = p.Version
	recs, playErr := Play(ctx, plan, p.Stdin, p.Stdout, PlayOptions{Timeout: opts.Timeout, Kill: p.Kill, Sink: opts.Log})
	if playErr != nil {
		p.Kill()
	}
	code, waitErr := p.Wait()
	rep.Exit, rep.Records, rep.PeakRSS = code, recs, p.PeakRSS()
	if rep.Version == "" {
		rep.Version = cliVersion(recs)
	}
	mu.Lock()
	rep.Notes = append([]transcript.Record(nil), notes...)
	mu.Unlock()
	got := Shapes(recs, transcript.FromCLI)
	rep.Messages = len(got)
	if rep.Mode == "recording" {
		rep.Diffs = CheckWire(Shapes(sc.Wire, transcript.FromCLI), got)
	} else {
		rep.Diffs = CheckSteps(Expected(sc), got)
	}
	for _, n := range rep.Notes {
		if n.Event == transcript.EventError {
			rep.Diffs = append(rep.Diffs, Diff{Step: n.Step, Text: fmt.Sprintf("%s agent reports %s: %s", ag.Name(), n.Kind, n.Text)})
		}
	}
	switch {
	case playErr != nil:
		rep.Error = fmt.Sprintf("playing the session: %v", playErr)
	case waitErr != nil:
		rep.Error = fmt.Sprintf("waiting for the agent: %v", waitErr)
	}
	if rep.Error != "" && p.Stderr() != "" {
		rep.Error += "; agent stderr: " + clip(strings.TrimSpace(p.Stderr()))
	}
	rep.Match = rep.Error == "" && len(rep.Diffs) == 0
	rep.Duration = time.Since(start)
	return rep
}

// cliVersion is the claude_code_version the agent announced in its first
// system/init, or "".
func cliVersion(recs []transcript.Record) string {
	for _, r := range recs {
		if r.Dir == transcript.FromCLI && gjson.GetBytes(r.Msg, "subtype").String() == "init" {
			return gjson.GetBytes(r.Msg, "claude_code_version").String()
		}
	}
	return ""
}
