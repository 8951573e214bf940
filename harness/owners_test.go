package harness

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/askctl/askctl/protocol"
)

// TestAnswerOwners: the way an allow differs from what the person gave
// names the rule that states it, whatever case met it (a late answer after
// a restart is UI-PERSIST's case, but an answer changed on the way is the
// answer's rule): the person's own words changed are SDK-ANSWER-OTHER's, a
// label SDK-ANSWER-SINGLE's, a multiSelect answer SDK-ANSWER-MULTI's, a
// blank one SDK-NO-EMPTY's first.
func TestAnswerOwners(t *testing.T) {
	const input = `{"questions":[` +
		`{"question":"Pick several?","header":"Many","options":[{"label":"Red, bright","description":"r"},{"label":"Grün","description":"g"}],"multiSelect":true},` +
		`{"question":"Pick one?","header":"One","options":[{"label":"Ünïcödé","description":"u"},{"label":"B","description":"b"}],"multiSelect":false}]}`
	labels := map[string][]string{"Pick several?": {"Grün", "Red, bright"}, "Pick one?": {"Ünïcödé"}}
	own := map[string][]string{"Pick several?": {"Grün", "  my own, words "}, "Pick one?": {"line one\nline two"}}
	cases := []struct {
		name    string
		sent    map[string][]string
		answers string // updatedInput.answers
		want    []string
	}{
		{"as given", labels, `{"Pick several?":"Grün, Red, bright","Pick one?":"Ünïcödé"}`, nil},
		{"own words as given", own, `{"Pick several?":"Grün,   my own, words ","Pick one?":"line one\nline two"}`, nil},
		{"keyed by index", labels, `{"q_0":"Grün, Red, bright","q_1":"Ünïcödé"}`, []string{"SDK-ANSWER-SINGLE"}},
		{"labels reordered", labels, `{"Pick several?":"Red, bright, Grün","Pick one?":"Ünïcödé"}`, []string{"SDK-ANSWER-MULTI"}},
		{"a label mangled", labels, `{"Pick several?":"Grün, Red, bright","Pick one?":"Ã\u009cnÃ¯cÃ¶dÃ©"}`, []string{"SDK-ANSWER-SINGLE"}},
		{"a label of the multiSelect one mangled", labels, `{"Pick several?":"Gr?n, Red, bright","Pick one?":"Ünïcödé"}`, []string{"SDK-ANSWER-MULTI"}},
		{"own words trimmed", own, `{"Pick several?":"Grün,   my own, words ","Pick one?":"line one line two"}`, []string{"SDK-ANSWER-OTHER"}},
		{"own words in a multiSelect trimmed", own, `{"Pick several?":"Grün, my own, words","Pick one?":"line one\nline two"}`, []string{"SDK-ANSWER-MULTI", "SDK-ANSWER-OTHER"}},
		{"a blank answer", labels, `{"Pick several?":"Grün, Red, bright","Pick one?":" "}`, []string{"SDK-NO-EMPTY", "SDK-ANSWER-SINGLE"}},
		{"an answer missing", labels, `{"Pick several?":"Grün, Red, bright"}`, []string{"SDK-ANSWER-ALL", "SDK-NO-EMPTY"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newSessionState("s", "a", nil, false)
			req := &Request{Input: json.RawMessage(input)}
			s.request(req)
			result := json.RawMessage(`{"behavior":"allow","updatedInput":{"questions":[],"answers":` + c.answers + `}}`)
			req.Responses = []Response{{Result: result, granted: protocol.ReadGranted(result)}}
			if got := answerOwners(req, c.sent); !slices.Equal(got, c.want) {
				t.Errorf("owners %q, want %q", got, c.want)
			}
			deny := json.RawMessage(`{"behavior":"deny","message":"no"}`)
			req.Responses = []Response{{Result: deny, granted: protocol.ReadGranted(deny)}}
			if got := answerOwners(req, c.sent); got != nil {
				t.Errorf("a deny: owners %q, want none", got)
			}
		})
	}
}

// TestMCPOwners: what an ask_user call returned is judged by how the person
// ended its question: a skip's by MCP-SKIP, an answer's by MCP-ANSWER
// (MCP-MULTI first, for a multiSelect question), whatever case met it.
func TestMCPOwners(t *testing.T) {
	ask := func(multi bool) *SessionState {
		s := newSessionState("s", "a", nil, true)
		in := `{"question":"Which one?","options":[{"label":"A"},{"label":"B"}],"multiSelect":` + map[bool]string{true: "true", false: "false"}[multi] + `}`
		s.request(&Request{ID: "toolu_1", ToolUseID: "toolu_1", Input: json.RawMessage(in)})
		s.questions = []string{"q_1"}
		s.shownTexts = map[string][]string{"q_1": {"Which one?"}}
		return s
	}
	s := ask(false)
	if got := s.mcpOwners("q_1"); got != nil {
		t.Errorf("nobody acted: owners %q, want none", got)
	}
	s.sent["q_1"] = map[string][]string{"Which one?": {"tab\there"}}
	if got := s.mcpOwners("q_1"); !slices.Equal(got, []string{"MCP-ANSWER"}) {
		t.Errorf("answered: owners %q", got)
	}
	m := ask(true)
	m.sent["q_1"] = map[string][]string{"Which one?": {"A", "B"}}
	if got := m.mcpOwners("q_1"); !slices.Equal(got, []string{"MCP-MULTI", "MCP-ANSWER"}) {
		t.Errorf("answered, multiSelect: owners %q", got)
	}
	m.sent["q_1"] = map[string][]string{"Which one?": {"A", "tab\there"}}
	if got := m.mcpOwners("q_1"); !slices.Equal(got, []string{"MCP-ANSWER", "MCP-MULTI"}) {
		t.Errorf("answered, multiSelect, own words: owners %q", got)
	}
	k := ask(false)
	k.skipped["q_1"] = true
	if got := k.mcpOwners("q_1"); !slices.Equal(got, []string{"MCP-SKIP"}) {
		t.Errorf("skipped: owners %q", got)
	}
}
