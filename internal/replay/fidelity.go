package replay

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/askctl/askctl/internal/agent"
	"github.com/askctl/askctl/internal/shape"
	"github.com/askctl/askctl/scenarios"
	"github.com/askctl/askctl/sdk"
	"github.com/askctl/askctl/transcript"
	"github.com/tidwall/gjson"
)

// FidelityReport compares two agents on one scenario.
type FidelityReport struct {
	Scenario    string `json:"scenario"`
	RealVersion string `json:"real_version"`
	Fake        Report `json:"fake"`
	Real        Report `json:"real"`
	// ResumedFake and ResumedReal are the second session of each agent,
	// started with --resume in the first one's directory (route "sdk"
	// scenarios whose agent does not exit mid-question).
	ResumedFake *Report `json:"resumed_fake,omitempty"`
	ResumedReal *Report `json:"resumed_real,omitempty"`
	Diffs       []Diff  `json:"diffs,omitempty"` // where fakeclaude's messages differ from the real CLI's
	Equal       bool    `json:"equal"`
	// LeftOut counts, per agent and reason, the messages the comparison
	// leaves out (see Normalize).
	LeftOut map[string]map[string]int `json:"left_out,omitempty"`
}

// Reasons a message is left out of the comparison.
const (
	LeftOutInformational = "informational frame (system other than init, keep_alive, stream_event, rate_limit_event), present or not by timing"
	LeftOutInterrupt     = "reply to askctl's interrupt (the real CLI withdraws a pending question only when interrupted; fakeclaude withdraws it itself)"
)

// Fidelity plays sc with both agents and compares their normalized
// transcripts: message types and order, key sets, can_use_tool fields,
// tool_result texts and result subtypes. Each agent must also match the
// scenario on its own.
func Fidelity(ctx context.Context, sc *scenarios.Scenario, fake, real agent.Agent, opts Options) FidelityReport {
	fr := FidelityReport{Scenario: sc.Name}
	dirs := map[string]string{}
	for _, name := range []string{"fake", "real"} {
		d, err := os.MkdirTemp("", "askctl-fidelity-")
		if err != nil {
			fr.Diffs = append(fr.Diffs, Diff{Text: err.Error()})
			return fr
		}
		defer os.RemoveAll(d)
		dirs[name] = d
	}
	o := opts
	o.Dir = dirs["fake"]
	fr.Fake = Replay(ctx, sc, fake, o)
	o.Dir = dirs["real"]
	fr.Real = Replay(ctx, sc, real, o)
	fr.RealVersion = fr.Real.Version
	for _, r := range []Report{fr.Fake, fr.Real} {
		if r.Error != "" {
			fr.Diffs = append(fr.Diffs, Diff{Text: fmt.Sprintf("%s agent: %s", r.Agent, r.Error)})
		}
	}
	for _, d := range shape.Compare(Normalize(fr.Real.Records), Normalize(fr.Fake.Records)) {
		fr.Diffs = append(fr.Diffs, Diff{Msg: d.Index + 1, Text: d.Text("real")})
	}
	fr.Diffs = append(fr.Diffs, CompareSessions(fr.Real.Sessions, fr.Fake.Sessions)...)
	fr.Equal = len(fr.Diffs) == 0 && fr.Fake.Match && fr.Real.Match
	if fr.Equal && Resumable(sc) {
		fr.resumed(ctx, sc, fake, real, opts, dirs)
	}
	for _, r := range []Report{fr.Fake, fr.Real} {
		lo := LeftOut(r.Records)
		if _, _, n := SessionRows(r.Sessions); n > 0 {
			if lo == nil {
				lo = map[string]int{}
			}
			lo[LeftOutSession] = n
		}
		if len(lo) > 0 {
			if fr.LeftOut == nil {
				fr.LeftOut = map[string]map[string]int{}
			}
			fr.LeftOut[r.Agent] = lo
		}
	}
	return fr
}

// Normalize is the agent side of a session as the fidelity check compares it:
// the agent's messages, less informational frames and the replies to the
// SDK side's own interrupts (the real CLI is interrupted where fakeclaude
// withdraws a question by itself).
func Normalize(recs []transcript.Record) []shape.Msg {
	var out []shape.Msg
	for _, r := range Kept(recs) {
		out = append(out, shape.Of(r.Dir, r.Msg))
	}
	return out
}

// Kept is the agent's messages Normalize keeps, as they were.
func Kept(recs []transcript.Record) []transcript.Record {
	var out []transcript.Record
	for _, r := range recs {
		if r.Dir == transcript.FromCLI && leftOut(r) == "" {
			out = append(out, r)
		}
	}
	return out
}

// LeftOut counts the agent's messages Normalize leaves out, by reason.
func LeftOut(recs []transcript.Record) map[string]int {
	out := map[string]int{}
	for _, r := range recs {
		if r.Dir == transcript.FromCLI {
			if why := leftOut(r); why != "" {
				out[why]++
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func leftOut(r transcript.Record) string {
	if strings.HasPrefix(gjson.GetBytes(r.Msg, "response.request_id").String(), sdk.InterruptIDPrefix) {
		return LeftOutInterrupt
	}
	if len(keep([]shape.Msg{shape.Of(r.Dir, r.Msg)})) == 0 {
		return LeftOutInformational
	}
	return ""
}

// Resumable reports whether the fidelity check also resumes sc's session: a
// route "sdk" scenario played from its steps whose agent does not exit
// while a question is pending.
func Resumable(sc *scenarios.Scenario) bool {
	if sc.Route != scenarios.RouteSDK || len(sc.Wire) > 0 {
		return false
	}
	for _, st := range sc.Steps {
		if st.ExitAfter > 0 {
			return false
		}
	}
	return true
}

// resumed plays the second session of each agent with --resume of its
// first, in the same directory, and --replay-user-messages, and compares
// them: messages (the echoed prompt and control_responses too), the session
// id kept, and the session file the two sessions share.
func (fr *FidelityReport) resumed(ctx context.Context, sc *scenarios.Scenario, fake, real agent.Agent, opts Options, dirs map[string]string) {
	run := func(ag agent.Agent, first Report) *Report {
		id := sessionID(first.Records)
		o := opts
		o.Dir, o.Resume, o.ReplayUserMessages = dirs[ag.Name()], id, true
		r := Replay(ctx, sc, ag, o)
		if got := sessionID(r.Records); got != id {
			r.Diffs = append(r.Diffs, Diff{Text: fmt.Sprintf("the resumed session announces session_id %q, want the resumed %q", got, id)})
			r.Match = false
		}
		if n := len(r.Sessions); n != 1 {
			r.Diffs = append(r.Diffs, Diff{Text: fmt.Sprintf("%d session files after the resumed session, want the one, appended", n)})
			r.Match = false
		}
		return &r
	}
	fr.ResumedFake, fr.ResumedReal = run(fake, fr.Fake), run(real, fr.Real)
	for _, r := range []*Report{fr.ResumedFake, fr.ResumedReal} {
		if r.Error != "" {
			fr.Diffs = append(fr.Diffs, Diff{Text: fmt.Sprintf("resumed, %s agent: %s", r.Agent, r.Error)})
		}
		for _, d := range r.Diffs {
			fr.Diffs = append(fr.Diffs, Diff{Step: d.Step, Msg: d.Msg, Text: fmt.Sprintf("resumed, %s vs scenario: %s", r.Agent, d.Text)})
		}
	}
	for _, d := range shape.Compare(Normalize(fr.ResumedReal.Records), Normalize(fr.ResumedFake.Records)) {
		fr.Diffs = append(fr.Diffs, Diff{Msg: d.Index + 1, Text: "resumed: " + d.Text("real")})
	}
	for _, d := range CompareSessions(fr.ResumedReal.Sessions, fr.ResumedFake.Sessions) {
		d.Text = "resumed: " + d.Text
		fr.Diffs = append(fr.Diffs, d)
	}
	fr.Equal = len(fr.Diffs) == 0 && fr.ResumedFake.Match && fr.ResumedReal.Match
}

// sessionID is the session_id of the first system/init in recs.
func sessionID(recs []transcript.Record) string {
	for _, r := range recs {
		if r.Dir == transcript.FromCLI && gjson.GetBytes(r.Msg, "subtype").String() == "init" {
			return gjson.GetBytes(r.Msg, "session_id").String()
		}
	}
	return ""
}
