package replay

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/askctl/askctl/claudecli"
	"github.com/askctl/askctl/fakeclaude/fakeapi"
	"github.com/askctl/askctl/internal/clip"
	"github.com/askctl/askctl/internal/shape"
	"github.com/askctl/askctl/protocol"
	"github.com/askctl/askctl/scenarios"
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
// protocol), not from any agent's code. version is the CLI release that
// plays it ("" the newest): where a release behaves otherwise
// (claudecli.Behaviours), so does the expectation.
func Expected(sc *scenarios.Scenario, version string) []Want {
	var out []Want
	add := func(step int, reason, typ, sub string, values map[string]string) {
		out = append(out, Want{Step: step, Reason: reason, Msg: shape.Msg{Dir: transcript.FromCLI, Type: typ, Subtype: sub, Values: values}})
	}
	print := sc.Route == scenarios.RouteMCP
	if !print {
		add(0, "initialize", protocol.TypeControlResponse, protocol.SubtypeSuccess, nil)
	}
	for _, turn := range sc.Turns() {
		n := turn[0].N
		init := map[string]string{"tools has AskUserQuestion": "true"}
		if print {
			init = map[string]string{"tools has AskUserQuestion": "false", "mcp_servers": mcpServersWant(sc), "mcp tools": strings.Join(sc.MCPTools(), " ")}
		}
		add(n, "turn start", protocol.TypeSystem, protocol.SubtypeInit, init)
		aborted, exited := false, false
		for i := 1; i < len(turn) && !aborted && !exited; i++ {
			st := &turn[i]
			n = st.N
			why := st.Describe()
			switch st.Kind {
			case scenarios.KindMCP:
				input := canonicalJSON(st.Input())
				add(n, why, protocol.TypeAssistant, "", map[string]string{"content[0].type": "tool_use", "content[0].name": st.MCP.Name(), "content[0].input": input})
				if st.CancelAfter > 0 {
					// The CLI ends the call itself (as at its tool timeout).
					add(n, why, protocol.TypeUser, "", map[string]string{"content[0].content": claudecli.MCPToolTimedOut(st.MCP.Server, st.MCP.ToolOrDefault(), st.CancelAfter), "content[0].is_error": "true"})
					break
				}
				res, err := scriptedResult(st)
				if err != nil {
					break
				}
				add(n, why, protocol.TypeUser, "", mcpResultWant(st, res))
			case scenarios.KindText:
				add(n, why, protocol.TypeAssistant, "", map[string]string{"content[0].type": "text", "content[0].text": st.Text})
			case scenarios.KindAsk, scenarios.KindTool:
				// One call, or the calls of one model response that run at
				// once (parallel steps): each tool_use and its request,
				// then each result as its answer comes (by the user
				// part's after; a tie in step order).
				group := scenarios.Response(turn, i)
				i += len(group) - 1
				for _, g := range group {
					name, input := toolOf(g)
					add(g.N, g.Describe(), protocol.TypeAssistant, "", map[string]string{"content[0].type": "tool_use", "content[0].name": name, "content[0].input": input})
					add(g.N, g.Describe(), protocol.TypeControlRequest, protocol.SubtypeCanUseTool, map[string]string{"tool_name": name, "input": input})
				}
				order := slices.Clone(group)
				slices.SortStableFunc(order, func(a, b *scenarios.Step) int { return cmp.Compare(after(a), after(b)) })
				// A call that aborts the turn withdraws the others still
				// pending before its own result is written.
				withdrawRest := func(k int) {
					for _, o := range order[k+1:] {
						add(o.N, o.Describe()+" (withdrawn: another call aborted the turn)", protocol.TypeControlCancelRequest, "", nil)
					}
				}
				for k, g := range order {
					n, why = g.N, g.Describe()
					if aborted {
						add(n, why, protocol.TypeUser, "", map[string]string{"content[0].content": protocol.DenyInterruptText})
						continue
					}
					u := g.User
					switch {
					case u == nil:
					case u.Silent && g.ExitAfter > 0:
						exited = true
					case u.Silent && g.CancelAfter == 0 && !claudecli.StdinCloseCancels.In(version):
						// Stdin closes on the pending request: the tool fails,
						// and the model has the last word.
						add(n, why, protocol.TypeUser, "", map[string]string{"content[0].content": protocol.PermissionStreamClosedText, "content[0].is_error": "true"})
						if i == len(turn)-1 {
							add(n, "the model's reply to the failed tool", protocol.TypeAssistant, "", map[string]string{"content[0].type": "text", "content[0].text": fakeapi.StopAfterRejection})
						}
					case u.Silent:
						add(n, why+" (withdrawn)", protocol.TypeControlCancelRequest, "", nil)
						withdrawRest(k)
						add(n, why, protocol.TypeUser, "", map[string]string{"content[0].content": protocol.DenyInterruptText})
						aborted = true
					case u.Skip != nil && u.Interrupt:
						withdrawRest(k)
						add(n, why, protocol.TypeUser, "", map[string]string{"content[0].content": protocol.DenyInterruptText})
						aborted = true
					case u.Skip != nil:
						add(n, why, protocol.TypeUser, "", map[string]string{"content[0].content": *u.Skip, "content[0].is_error": "true"})
					case g.Kind == scenarios.KindTool:
						add(n, why, protocol.TypeUser, "", map[string]string{"content[0].content": toolOutput(g)})
					default:
						r := u.Reply()
						answers := map[string]protocol.AnswerValue{}
						for q, a := range r.Answers {
							answers[q] = protocol.AnswerValue(a)
						}
						add(n, why, protocol.TypeUser, "", map[string]string{"content[0].content": protocol.AskResultText(g.Questions, answers, r.Annotations)})
					}
					if exited {
						break
					}
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

// toolOf is the tool a call step names, and its input as the CLI echoes it.
func toolOf(st *scenarios.Step) (name, input string) {
	if st.Kind == scenarios.KindTool {
		return st.Tool.Name, canonicalJSON(st.Tool.Input)
	}
	return protocol.ToolAskUserQuestion, canonicalJSON(st.Input())
}

// toolOutput is what an allowed tool's result says.
func toolOutput(st *scenarios.Step) string {
	if st.Tool.Output == "" && st.Tool.Name == "Bash" {
		return protocol.BashNoOutputText
	}
	return st.Tool.Output
}

// after is when st ends, from its ask: when the person answers, or, for
// a person who stays silent, when the agent withdraws it or exits.
func after(st *scenarios.Step) time.Duration {
	u := st.User
	switch {
	case u == nil:
		return 0
	case u.Silent && st.CancelAfter > 0:
		return st.CancelAfter
	case u.Silent && st.ExitAfter > 0:
		return st.ExitAfter
	}
	return time.Duration(u.After)
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

// CheckSteps lines the agent's messages up with Expected the way
// shape.Compare does, along the longest common subsequence of their labels,
// so one dropped message is one difference. A paired message with other
// values is a difference; significant messages nobody expected, and expected
// ones that never came, are differences too.
func CheckSteps(want []Want, got []shape.Msg) []Diff {
	// Informational frames take no part in the alignment.
	var idx []int
	var sig []shape.Msg
	for j, g := range got {
		if slices.Contains(g.Keys, "isReplay") {
			continue // --replay-user-messages echoes the SDK side's own prompt
		}
		if significant(g) || g.Type == protocol.TypeControlResponse {
			idx = append(idx, j)
			sig = append(sig, g)
		}
	}
	wm := make([]shape.Msg, len(want))
	for i, w := range want {
		wm[i] = w.Msg
		wm[i].Dir = transcript.FromCLI
	}
	var diffs []Diff
	lastStep, lastW := 0, -1
	alike := func(w, g int) int {
		for k, v := range wm[w].Values {
			if sig[g].Values[k] != v {
				return 0
			}
		}
		return 1
	}
	for _, p := range shape.Align(wm, sig, alike) {
		switch {
		case p.G < 0:
			w := want[p.W]
			diffs = append(diffs, Diff{Step: w.Step, Text: fmt.Sprintf("missing %s (%s)", w.Msg.Label(), w.Reason)})
		case p.W < 0:
			g := sig[p.G]
			if !significant(g) {
				continue
			}
			d := Diff{Step: lastStep, Msg: idx[p.G] + 1, Text: "unexpected " + g.Label()}
			if lastW == len(want)-1 {
				d.Text += " after the scenario ended"
			}
			diffs = append(diffs, d)
		default:
			w, g := want[p.W], sig[p.G]
			lastStep, lastW = w.Step, p.W
			for _, k := range slices.Sorted(maps.Keys(w.Msg.Values)) {
				v := w.Msg.Values[k]
				if gv, ok := g.Values[k]; !ok {
					diffs = append(diffs, Diff{Step: w.Step, Msg: idx[p.G] + 1, Text: fmt.Sprintf("%s: %s missing, want %q", g.Label(), k, clip.String(v, 160))})
				} else if gv != v {
					diffs = append(diffs, Diff{Step: w.Step, Msg: idx[p.G] + 1, Text: fmt.Sprintf("%s: %s is %q, want %q", g.Label(), k, clip.String(gv, 160), clip.String(v, 160))})
				}
			}
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
