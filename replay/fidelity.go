package replay

import (
	"context"
	"fmt"
	"strings"

	"github.com/askctl/askctl/agent"
	"github.com/askctl/askctl/scenarios"
	"github.com/askctl/askctl/sdk"
	"github.com/askctl/askctl/shape"
	"github.com/askctl/askctl/transcript"
	"github.com/tidwall/gjson"
)

// FidelityReport compares two agents on one scenario.
type FidelityReport struct {
	Scenario    string `json:"scenario"`
	RealVersion string `json:"real_version"`
	Fake        Report `json:"fake"`
	Real        Report `json:"real"`
	Diffs       []Diff `json:"diffs,omitempty"` // where fakeclaude's messages differ from the real CLI's
	Equal       bool   `json:"equal"`
}

// Fidelity plays sc with both agents and compares their normalized
// transcripts: message types and order, key sets, can_use_tool fields,
// tool_result texts and result subtypes. Each agent must also match the
// scenario on its own.
func Fidelity(ctx context.Context, sc *scenarios.Scenario, fake, real agent.Agent, opts Options) FidelityReport {
	fr := FidelityReport{Scenario: sc.Name}
	fr.Fake = Replay(ctx, sc, fake, opts)
	fr.Real = Replay(ctx, sc, real, opts)
	fr.RealVersion = fr.Real.Version
	for _, r := range []Report{fr.Fake, fr.Real} {
		if r.Error != "" {
			fr.Diffs = append(fr.Diffs, Diff{Text: fmt.Sprintf("%s agent: %s", r.Agent, r.Error)})
		}
	}
	for _, d := range shape.Compare(Normalize(fr.Real.Records), Normalize(fr.Fake.Records)) {
		fr.Diffs = append(fr.Diffs, Diff{Msg: d.Index + 1, Text: strings.Replace(d.String(), "want", "real", -1)})
	}
	fr.Equal = len(fr.Diffs) == 0 && fr.Fake.Match && fr.Real.Match
	return fr
}

// Normalize is the agent side of a session as the fidelity check compares it:
// the agent's messages, less informational frames and the replies to the
// SDK side's own interrupts (the real CLI is interrupted where fakeclaude
// withdraws a question by itself).
func Normalize(recs []transcript.Record) []shape.Msg {
	var out []shape.Msg
	for _, r := range recs {
		if r.Dir != transcript.FromCLI {
			continue
		}
		if strings.HasPrefix(gjson.GetBytes(r.Msg, "response.request_id").String(), sdk.InterruptIDPrefix) {
			continue
		}
		out = append(out, shape.Of(r.Dir, r.Msg))
	}
	return keep(out)
}
