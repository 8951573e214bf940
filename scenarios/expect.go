package scenarios

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/askctl/askctl/internal/clip"
	"github.com/askctl/askctl/protocol"
	"github.com/tidwall/gjson"
)

// Check compares a permission result with e and returns one sentence per
// difference; none means the answer is as expected. asked is the tool input
// the agent asked with, and payload the permission result as it was sent,
// for Match paths.
func (e *Expect) Check(asked json.RawMessage, pr *protocol.PermissionResult, payload json.RawMessage) []string {
	var problems []string
	if e.Behavior != "" && pr.Behavior != e.Behavior {
		problems = append(problems, fmt.Sprintf("behavior is %q, want %q", pr.Behavior, e.Behavior))
	}
	if e.Interrupt != nil && pr.Behavior == protocol.BehaviorDeny && pr.Interrupts() != *e.Interrupt {
		problems = append(problems, fmt.Sprintf("interrupt is %v, want %v", pr.Interrupts(), *e.Interrupt))
	}
	if pr.Behavior == protocol.BehaviorDeny && strings.TrimSpace(pr.DenyMessage()) == "" {
		problems = append(problems, "deny has an empty message")
	}
	if len(e.Answers) > 0 && pr.Allow() {
		if in, err := protocol.ParseAskInput(pr.EffectiveInput(asked)); err == nil {
			problems = append(problems, e.checkAnswers(in)...)
			var q protocol.AskInput
			if json.Unmarshal(asked, &q) == nil && !reflect.DeepEqual(q.Questions, in.Questions) {
				problems = append(problems, "updatedInput.questions differ from the questions asked")
			}
		}
	}
	return append(problems, e.checkMatch(payload)...)
}

// checkMatch checks the Match paths on doc.
func (e *Expect) checkMatch(doc json.RawMessage) []string {
	var problems []string
	for _, p := range sortedKeys(e.Match) {
		got := gjson.GetBytes(doc, p)
		switch {
		case !got.Exists():
			problems = append(problems, fmt.Sprintf("match %s: missing, want %s", p, e.Match[p]))
		case !protocol.SameJSON([]byte(got.Raw), e.Match[p]):
			problems = append(problems, fmt.Sprintf("match %s: got %s, want %s", p, clip.String(got.Raw, 200), e.Match[p]))
		}
	}
	return problems
}

func (e *Expect) checkAnswers(in *protocol.AskInput) []string {
	var problems []string
	for _, q := range sortedKeys(e.Answers) {
		got, ok := in.Answers[q]
		switch {
		case !ok:
			keys := make([]string, 0, len(in.Answers))
			for k := range in.Answers {
				keys = append(keys, clip.Quote(k, 80))
			}
			sort.Strings(keys)
			problems = append(problems, fmt.Sprintf("no answer keyed %q (answers are keyed by the full question text; got keys [%s])", q, strings.Join(keys, ", ")))
		case string(got) != e.Answers[q]:
			problems = append(problems, fmt.Sprintf("answer to %q is %s, want %q", q, clip.Quote(string(got), 200), e.Answers[q]))
		}
	}
	return problems
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// CheckMCP compares what an mcp step's tool returned with e, one sentence
// per difference. result is the CallToolResult as JSON ({"content":[…],
// "isError":…}): behavior "allow" wants no isError and "deny" wants it;
// each expected answer's labels must be named in the result's text.
func (e *Expect) CheckMCP(result json.RawMessage) []string {
	var problems []string
	isErr := gjson.GetBytes(result, "isError").Bool()
	var text strings.Builder
	gjson.GetBytes(result, `content.#(type=="text")#.text`).ForEach(func(_, t gjson.Result) bool {
		text.WriteString(t.String())
		text.WriteByte('\n')
		return true
	})
	switch {
	case e.Behavior == protocol.BehaviorAllow && isErr:
		problems = append(problems, fmt.Sprintf("the call returned an error (%s), want an answer", clip.Quote(strings.TrimSpace(text.String()), 200)))
	case e.Behavior == protocol.BehaviorDeny && !isErr:
		problems = append(problems, fmt.Sprintf("the call returned success (%s), want isError", clip.Quote(strings.TrimSpace(text.String()), 200)))
	}
	if e.Behavior != "" && strings.TrimSpace(text.String()) == "" {
		problems = append(problems, "the call returned no text")
	}
	if !isErr {
		for _, q := range sortedKeys(e.Answers) {
			for _, l := range strings.Split(e.Answers[q], protocol.MultiSelectSeparator) {
				if !strings.Contains(text.String(), l) {
					problems = append(problems, fmt.Sprintf("the result does not name %q (the answer to %q): %s", l, q, clip.Quote(strings.TrimSpace(text.String()), 200)))
				}
			}
		}
	}
	return append(problems, e.checkMatch(result)...)
}
