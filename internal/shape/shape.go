// Package shape reduces a session to what two agents playing the same
// scenario must share, and compares two sessions step by step.
//
// The shape of a message is its direction, type and subtype, the set of key
// paths it carries, and a few salient values: tool names and inputs, the
// tool_result text, the result's subtype and terminal reason. Values that
// change from run to run (ids, uuids, timestamps, costs, durations, paths) are
// left out, so the fakeclaude transcript of a scenario and the real CLI's have
// equal shapes when fakeclaude is faithful.
package shape

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/askctl/askctl/internal/clip"
	"github.com/askctl/askctl/protocol"
	"github.com/tidwall/gjson"
)

// Msg is the shape of one message.
type Msg struct {
	Dir     string            `json:"dir"`
	Type    string            `json:"type"`
	Subtype string            `json:"subtype,omitempty"`
	Keys    []string          `json:"keys"`
	Values  map[string]string `json:"values,omitempty"`
}

// Label is "dir type/subtype", for messages about a message.
func (m Msg) Label() string {
	s := m.Dir + " " + m.Type
	if m.Subtype != "" {
		s += "/" + m.Subtype
	}
	return s
}

// freeForm lists keys whose values are maps keyed by data (question texts,
// model names) or tool inputs: their inner keys are not part of the shape.
var freeForm = map[string]bool{
	"input": true, "updatedInput": true, "answers": true, "annotations": true, "tool_input": true,
	"modelUsage": true, "model_usage_since_last_result": true, "by_type": true, "memory_paths": true,
	"tool_use_result": true, "hooks": true,
}

// skipSubtree lists key paths whose whole content varies with the
// installation (the init response's command, model and agent catalogues).
var skipSubtree = map[string]bool{
	"response.response.commands": true, "response.response.models": true, "response.response.agents": true,
	"response.response.account": true, "plugins": true,
}

// Of returns the shape of one message. dir is the transcript direction.
func Of(dir string, raw []byte) Msg {
	r := gjson.ParseBytes(raw)
	m := Msg{Dir: dir, Type: r.Get("type").String(), Subtype: r.Get("subtype").String(), Values: map[string]string{}}
	if m.Subtype == "" && m.Type == protocol.TypeControlResponse {
		m.Subtype = r.Get("response.subtype").String()
	}
	if m.Type == protocol.TypeControlRequest {
		m.Subtype = r.Get("request.subtype").String()
	}
	keys := map[string]bool{}
	collect(r, "", keys)
	for k := range keys {
		m.Keys = append(m.Keys, k)
	}
	sort.Strings(m.Keys)
	salient(r, &m)
	if len(m.Values) == 0 {
		m.Values = nil
	}
	return m
}

func collect(r gjson.Result, prefix string, keys map[string]bool) {
	switch {
	case r.IsObject():
		r.ForEach(func(k, v gjson.Result) bool {
			p := k.String()
			if prefix != "" {
				p = prefix + "." + p
			}
			keys[p] = true
			if !freeForm[k.String()] && !skipSubtree[p] {
				collect(v, p, keys)
			}
			return true
		})
	case r.IsArray():
		r.ForEach(func(_, v gjson.Result) bool {
			collect(v, prefix+"[]", keys)
			return true
		})
	}
}

// salient picks the values that must agree.
func salient(r gjson.Result, m *Msg) {
	set := func(k string, v gjson.Result) {
		if v.Exists() {
			m.Values[k] = canonical(v)
		}
	}
	switch m.Type {
	case protocol.TypeControlRequest:
		if m.Subtype == protocol.SubtypeCanUseTool {
			for _, k := range []string{"tool_name", "display_name", "input", "requires_user_interaction", "description"} {
				set(k, r.Get("request."+k))
			}
		}
	case protocol.TypeAssistant:
		r.Get("message.content").ForEach(func(i, b gjson.Result) bool {
			p := fmt.Sprintf("content[%d].", i.Int())
			set(p+"type", b.Get("type"))
			set(p+"text", b.Get("text"))
			set(p+"name", b.Get("name"))
			set(p+"input", b.Get("input"))
			return true
		})
	case protocol.TypeUser:
		c := r.Get("message.content")
		if c.Type == gjson.String {
			set("content", c)
			break
		}
		c.ForEach(func(i, b gjson.Result) bool {
			p := fmt.Sprintf("content[%d].", i.Int())
			set(p+"type", b.Get("type"))
			set(p+"text", b.Get("text"))
			set(p+"content", b.Get("content"))
			set(p+"is_error", b.Get("is_error"))
			return true
		})
		set("tool_use_result", r.Get("tool_use_result"))
	case protocol.TypeResult:
		for _, k := range []string{"is_error", "terminal_reason", "result", "errors", "stop_reason"} {
			set(k, r.Get(k))
		}
		set("permission_denials", r.Get("permission_denials.#.tool_name"))
	case protocol.TypeSystem:
		if m.Subtype == protocol.SubtypeInit {
			has := false
			r.Get("tools").ForEach(func(_, t gjson.Result) bool {
				has = has || t.String() == "AskUserQuestion"
				return !has
			})
			m.Values["tools has AskUserQuestion"] = fmt.Sprint(has)
			var mcpTools []string
			r.Get("tools").ForEach(func(_, t gjson.Result) bool {
				if strings.HasPrefix(t.String(), "mcp__") {
					mcpTools = append(mcpTools, t.String())
				}
				return true
			})
			if len(mcpTools) > 0 {
				m.Values["mcp tools"] = strings.Join(mcpTools, " ")
			}
			set("mcp_servers", r.Get("mcp_servers"))
		}
	case protocol.TypeControlResponse:
		if r.Get("response.response.still_queued").Exists() {
			set("still_queued", r.Get("response.response.still_queued"))
		}
		set("error", r.Get("response.error"))
	}
}

// canonical renders a value for comparison: strings as themselves, anything
// else as compact JSON with sorted keys.
func canonical(v gjson.Result) string {
	if v.Type == gjson.String {
		return v.String()
	}
	var x any
	if err := json.Unmarshal([]byte(v.Raw), &x); err != nil {
		return v.Raw
	}
	b, _ := json.Marshal(x) // encoding/json sorts map keys
	return string(b)
}

// Difference is one place where two sessions part.
type Difference struct {
	Index int    // 0-based position: in got, or in want for a missing message
	Want  *Msg   // nil: got has an extra message
	Got   *Msg   // nil: got lacks a message
	What  string // what differs
}

func (d Difference) String() string { return d.Text("want") }

// Text is String with want named otherwise ("real"), in the difference's
// own words only: the values it quotes are left as they are.
func (d Difference) Text(want string) string {
	switch {
	case d.Want == nil:
		return fmt.Sprintf("#%d: extra %s", d.Index+1, d.Got.Label())
	case d.Got == nil:
		return fmt.Sprintf("#%d: missing %s", d.Index+1, d.Want.Label())
	}
	what := d.What
	if want != "want" {
		what = compareNamed(*d.Want, *d.Got, want)
	}
	return fmt.Sprintf("#%d %s: %s", d.Index+1, d.Want.Label(), what)
}

// Compare lines up two sessions and lists where they differ. Messages are
// paired by the longest common subsequence of their labels (direction, type,
// subtype), so one missing or extra message is reported once, not as a
// cascade; paired messages are compared by keys and salient values.
func Compare(want, got []Msg) []Difference {
	var diffs []Difference
	alike := func(w, g int) int {
		if compareMsg(want[w], got[g]) == "" {
			return 1
		}
		return 0
	}
	for _, p := range Align(want, got, alike) {
		switch {
		case p.W < 0:
			diffs = append(diffs, Difference{Index: p.G, Got: &got[p.G]})
		case p.G < 0:
			diffs = append(diffs, Difference{Index: p.W, Want: &want[p.W]})
		default:
			if what := compareMsg(want[p.W], got[p.G]); what != "" {
				diffs = append(diffs, Difference{Index: p.G, Want: &want[p.W], Got: &got[p.G], What: what})
			}
		}
	}
	return diffs
}

// Pair is one step of an alignment: want[W] paired with got[G], or either
// alone (-1 for no partner).
type Pair struct{ W, G int }

// Align pairs two message lists in order, along the longest common
// subsequence of their labels (direction, type, subtype): one missing or
// extra message is one unpaired entry, not a cascade. Messages pair only when
// their labels are equal. Among the longest alignments it prefers the one
// whose pairs score highest: score(w, g) is 1 when want[w] and got[g] are
// alike beyond their label, else 0, so an extra message of the same type is
// the one left out. (The length always wins: scores stay far below 2^20.)
func Align(want, got []Msg, score func(w, g int) int) []Pair {
	n, m := len(want), len(got)
	pairScore := func(i, j int) int {
		if want[i].Label() != got[j].Label() {
			return 0
		}
		// A label match always outweighs any number of better-scoring
		// ties, so the alignment stays a longest common subsequence.
		return 1<<20 + score(i, j)
	}
	best := make([][]int, n+1)
	for i := range best {
		best[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			b := max(best[i+1][j], best[i][j+1])
			if sc := pairScore(i, j); sc > 0 {
				b = max(b, best[i+1][j+1]+sc)
			}
			best[i][j] = b
		}
	}
	var out []Pair
	i, j := 0, 0
	for i < n && j < m {
		switch sc := pairScore(i, j); {
		case sc > 0 && best[i][j] == best[i+1][j+1]+sc:
			out = append(out, Pair{i, j})
			i, j = i+1, j+1
		case best[i+1][j] >= best[i][j+1]:
			out = append(out, Pair{i, -1})
			i++
		default:
			out = append(out, Pair{-1, j})
			j++
		}
	}
	for ; i < n; i++ {
		out = append(out, Pair{i, -1})
	}
	for ; j < m; j++ {
		out = append(out, Pair{-1, j})
	}
	return out
}

// compareMsg describes how two messages with the same label differ, or "".
func compareMsg(w, g Msg) string { return compareNamed(w, g, "want") }

// compareNamed is compareMsg with want's side named name.
func compareNamed(w, g Msg, name string) string {
	var what []string
	if miss, extra := setDiff(w.Keys, g.Keys); len(miss)+len(extra) > 0 {
		if len(miss) > 0 {
			what = append(what, "missing keys "+strings.Join(miss, ", "))
		}
		if len(extra) > 0 {
			what = append(what, "extra keys "+strings.Join(extra, ", "))
		}
	}
	vk := map[string]bool{}
	for k := range w.Values {
		vk[k] = true
	}
	for k := range g.Values {
		vk[k] = true
	}
	ks := make([]string, 0, len(vk))
	for k := range vk {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	for _, k := range ks {
		wv, wok := w.Values[k]
		gv, gok := g.Values[k]
		switch {
		case !gok:
			what = append(what, fmt.Sprintf("%s missing, %s %s", k, name, clip.Quote(wv, 160)))
		case !wok:
			what = append(what, fmt.Sprintf("%s is %s, %s none", k, clip.Quote(gv, 160), name))
		case wv != gv:
			what = append(what, fmt.Sprintf("%s is %s, %s %s", k, clip.Quote(gv, 160), name, clip.Quote(wv, 160)))
		}
	}
	return strings.Join(what, "; ")
}

func setDiff(want, got []string) (missing, extra []string) {
	ws, gs := map[string]bool{}, map[string]bool{}
	for _, k := range want {
		ws[k] = true
	}
	for _, k := range got {
		gs[k] = true
	}
	for _, k := range want {
		if !gs[k] {
			missing = append(missing, k)
		}
	}
	for _, k := range got {
		if !ws[k] {
			extra = append(extra, k)
		}
	}
	return missing, extra
}
