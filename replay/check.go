package replay

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/askctl/askctl/protocol"
	"github.com/askctl/askctl/scenarios"
	"github.com/askctl/askctl/shape"
	"github.com/askctl/askctl/transcript"
)

// Want is one message the agent must write, with the values it must carry.
type Want struct {
	Step   int // 1-based scenario step it belongs to; 0 for session-level messages
	Msg    shape.Msg
	Reason string // what the step is, for reports
}

// Expected lists the messages an agent must write when sc is played with its
// own user part, derived from the steps and the real CLI's texts (package
// protocol), not from any agent's code.
func Expected(sc *scenarios.Scenario) []Want {
	var out []Want
	add := func(step int, reason, typ, sub string, values map[string]string) {
		out = append(out, Want{Step: step, Reason: reason, Msg: shape.Msg{Dir: transcript.FromCLI, Type: typ, Subtype: sub, Values: values}})
	}
	add(0, "initialize", protocol.TypeControlResponse, protocol.SubtypeSuccess, nil)
	n := 0
	for _, turn := range sc.Turns() {
		n++
		add(n, "turn start", protocol.TypeSystem, protocol.SubtypeInit, map[string]string{"tools has AskUserQuestion": "true"})
		aborted, exited := false, false
		for i := 1; i < len(turn) && !aborted && !exited; i++ {
			n++
			st := &turn[i]
			why := st.Describe()
			switch st.Kind {
			case scenarios.KindText:
				add(n, why, protocol.TypeAssistant, "", map[string]string{"content[0].type": "text", "content[0].text": st.Text})
			case scenarios.KindAsk, scenarios.KindTool:
				name, input, output := protocol.ToolAskUserQuestion, canonicalJSON(st.Input()), ""
				if st.Kind == scenarios.KindTool {
					name, input, output = st.Tool.Name, canonicalJSON(st.Tool.Input), st.Tool.Output
					if output == "" && name == "Bash" {
						output = protocol.BashNoOutputText
					}
				}
				add(n, why, protocol.TypeAssistant, "", map[string]string{"content[0].type": "tool_use", "content[0].name": name, "content[0].input": input})
				add(n, why, protocol.TypeControlRequest, protocol.SubtypeCanUseTool, map[string]string{"tool_name": name, "input": input})
				u := st.User
				switch {
				case u == nil:
				case u.Silent && st.ExitAfter > 0:
					exited = true
				case u.Silent:
					add(n, why+" (withdrawn)", protocol.TypeControlCancelRequest, "", nil)
					add(n, why, protocol.TypeUser, "", map[string]string{"content[0].content": protocol.DenyInterruptText})
					aborted = true
				case u.Skip != nil && u.Interrupt:
					add(n, why, protocol.TypeUser, "", map[string]string{"content[0].content": protocol.DenyInterruptText})
					aborted = true
				case u.Skip != nil:
					add(n, why, protocol.TypeUser, "", map[string]string{"content[0].content": *u.Skip, "content[0].is_error": "true"})
				case st.Kind == scenarios.KindTool:
					add(n, why, protocol.TypeUser, "", map[string]string{"content[0].content": output})
				default:
					answers := map[string]protocol.AnswerValue{}
					for q, a := range u.Answers {
						answers[q] = protocol.AnswerValue(a.String())
					}
					add(n, why, protocol.TypeUser, "", map[string]string{"content[0].content": protocol.AskResultText(st.Questions, answers, u.Annotations)})
				}
			}
		}
		if exited {
			return out
		}
		if aborted {
			add(n, "turn aborted", protocol.TypeUser, "", map[string]string{"content[0].text": protocol.InterruptedForToolUseText})
			add(n, "turn end", protocol.TypeResult, protocol.ResultErrorDuringExecution, map[string]string{"terminal_reason": "aborted_tools"})
			continue
		}
		add(n, "turn end", protocol.TypeResult, protocol.ResultSuccess, nil)
	}
	return out
}

func canonicalJSON(raw []byte) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// significant reports whether an unexpected message of this type is worth
// reporting. Informational system frames and responses to the SDK side's own
// requests are not.
func significant(m shape.Msg) bool {
	switch m.Type {
	case protocol.TypeAssistant, protocol.TypeUser, protocol.TypeControlRequest, protocol.TypeResult, protocol.TypeControlCancelRequest:
		return true
	case protocol.TypeSystem:
		return m.Subtype == protocol.SubtypeInit
	}
	return false
}

// Diff is one way the agent's session differs from the scenario.
type Diff struct {
	Step int    `json:"step,omitempty"` // 1-based scenario step; 0 for the session
	Msg  int    `json:"msg,omitempty"`  // 1-based index among the agent's messages; 0 if none
	Text string `json:"text"`
}

func (d Diff) String() string {
	var where []string
	if d.Step > 0 {
		where = append(where, fmt.Sprintf("step %d", d.Step))
	}
	if d.Msg > 0 {
		where = append(where, fmt.Sprintf("message %d", d.Msg))
	}
	if len(where) == 0 {
		return d.Text
	}
	return strings.Join(where, ", ") + ": " + d.Text
}

// CheckSteps matches the agent's messages against Expected in order. A message
// of the expected type with other values is a difference; significant messages
// nobody expected, and expected ones that never came, are differences too.
func CheckSteps(want []Want, got []shape.Msg) []Diff {
	var diffs []Diff
	j := 0
	for _, w := range want {
		found := false
		for ; j < len(got); j++ {
			g := got[j]
			if g.Type != w.Msg.Type || g.Subtype != w.Msg.Subtype {
				if significant(g) {
					diffs = append(diffs, Diff{Step: w.Step, Msg: j + 1, Text: fmt.Sprintf("unexpected %s while waiting for %s (%s)", g.Label(), w.Msg.Label(), w.Reason)})
				}
				continue
			}
			for k, v := range w.Msg.Values {
				if gv, ok := g.Values[k]; !ok {
					diffs = append(diffs, Diff{Step: w.Step, Msg: j + 1, Text: fmt.Sprintf("%s: %s missing, want %q", g.Label(), k, clip(v))})
				} else if gv != v {
					diffs = append(diffs, Diff{Step: w.Step, Msg: j + 1, Text: fmt.Sprintf("%s: %s is %q, want %q", g.Label(), k, clip(gv), clip(v))})
				}
			}
			j++
			found = true
			break
		}
		if !found {
			diffs = append(diffs, Diff{Step: w.Step, Text: fmt.Sprintf("missing %s (%s)", w.Msg.Label(), w.Reason)})
		}
	}
	for ; j < len(got); j++ {
		if significant(got[j]) {
			diffs = append(diffs, Diff{Msg: j + 1, Text: "unexpected " + got[j].Label() + " after the scenario ended"})
		}
	}
	return diffs
}

// CheckWire compares the agent's messages with a recording's, message by
// message: type and order, keys, and salient values.
func CheckWire(recorded, got []shape.Msg) []Diff {
	var diffs []Diff
	for _, d := range shape.Compare(keep(recorded), keep(got)) {
		diffs = append(diffs, Diff{Msg: d.Index + 1, Text: d.String()})
	}
	return diffs
}

// keep drops informational frames whose presence depends on timing.
func keep(ms []shape.Msg) []shape.Msg {
	var out []shape.Msg
	for _, m := range ms {
		if m.Type == protocol.TypeSystem && m.Subtype != protocol.SubtypeInit || m.Type == protocol.TypeKeepAlive || m.Type == protocol.TypeStreamEvent || m.Type == "rate_limit_event" {
			continue
		}
		out = append(out, m)
	}
	return out
}

func clip(s string) string {
	if len(s) <= 160 {
		return s
	}
	return s[:160] + "…"
}

// Shapes returns the shapes of the messages going dir.
func Shapes(recs []transcript.Record, dir string) []shape.Msg {
	var out []shape.Msg
	for _, r := range recs {
		if r.Dir == dir {
			out = append(out, shape.Of(r.Dir, r.Msg))
		}
	}
	return out
}
