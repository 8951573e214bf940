package scenarios

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const hdr = "-- scenario.json --\n{\"name\":\"t\"}\n-- steps.jsonl --\n"
const mcpHdr = "-- scenario.json --\n{\"name\":\"t\",\"route\":\"mcp\"}\n-- steps.jsonl --\n"

const q1 = `{"question":"Which?","header":"Pick","options":[{"label":"A","description":"a"},{"label":"B","description":"b"}],"multiSelect":false}`

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		text string
		want string
	}{
		{"empty", "", "t.txtar: empty scenario"},
		{"no header", "-- steps.jsonl --\n{\"prompt\":\"hi\"}\n", `t.txtar: missing section "scenario.json"`},
		{"no steps section", "-- scenario.json --\n{}\n", `t.txtar: missing section "steps.jsonl"`},
		{"unknown section", hdr + `{"prompt":"hi"}` + "\n-- extra --\nx\n", `t.txtar:5: unknown section "extra" (want scenario.json, steps.jsonl, resume.jsonl or wire.jsonl)`},
		{"duplicate section", hdr + `{"prompt":"hi"}` + "\n-- steps.jsonl --\n{\"text\":\"x\"}\n", `t.txtar:5: section "steps.jsonl" appears twice`},
		{"header unknown field", "-- scenario.json --\n{\"nmae\":\"x\"}\n-- steps.jsonl --\n{\"prompt\":\"hi\"}\n", "t.txtar:2: nmae: unknown field"},
		{"bad route", "-- scenario.json --\n{\"route\":\"smtp\"}\n-- steps.jsonl --\n{\"prompt\":\"hi\"}\n", `t.txtar:2: route: want "sdk" or "mcp", got "smtp"`},
		{"bad origin", "-- scenario.json --\n{\"origin\":\"dreamt\"}\n-- steps.jsonl --\n{\"prompt\":\"hi\"}\n", `t.txtar:2: origin: want "synthetic" or "recorded", got "dreamt"`},
		{"invalid json", hdr + `{"prompt":"hi"` + "\n", "t.txtar:4: invalid JSON: unexpected end of line"},
		{"step unknown field", hdr + `{"prompt":"hi","colour":1}` + "\n", "t.txtar:4: colour: unknown field"},
		{"wrong type", hdr + `{"prompt":5}` + "\n", "t.txtar:4: prompt: want string, got number"},
		{"no kind", hdr + `{"id":"x"}` + "\n", "t.txtar:4: a step needs one of prompt, text, ask, tool or mcp"},
		{"two kinds", hdr + `{"prompt":"hi","text":"x"}` + "\n", "t.txtar:4: a step has one kind, got prompt and text"},
		{"first not prompt", hdr + `{"text":"x"}` + "\n", "t.txtar:4: the first step must be a prompt (a turn starts with the user's message), got text"},
		{"too many questions", hdr + `{"prompt":"hi"}` + "\n" + `{"ask":{"questions":[` + fiveQuestions() + `]}}` + "\n",
			"t.txtar:5: ask.questions: want 1 to 4 questions, got 5"},
		{"no questions", hdr + `{"prompt":"hi"}` + "\n" + `{"ask":{"questions":[]}}` + "\n", "t.txtar:5: ask.questions: want 1 to 4 questions, got 0"},
		{"one option", hdr + `{"prompt":"hi"}` + "\n" + `{"ask":{"questions":[{"question":"Q?","header":"H","options":[{"label":"A","description":"a"}]}]}}` + "\n",
			"t.txtar:5: ask.questions[0].options: want 2 to 4 options, got 1"},
		{"no label", hdr + `{"prompt":"hi"}` + "\n" + `{"ask":{"questions":[{"question":"Q?","header":"H","options":[{"label":"","description":"a"},{"label":"B","description":"b"}]}]}}` + "\n",
			"t.txtar:5: ask.questions[0].options[0].label: required"},
		{"no description", hdr + `{"prompt":"hi"}` + "\n" + `{"ask":{"questions":[{"question":"Q?","header":"H","options":[{"label":"A"},{"label":"B","description":"b"}]}]}}` + "\n",
			"t.txtar:5: ask.questions[0].options[0].description: required"},
		{"long header", hdr + `{"prompt":"hi"}` + "\n" + `{"ask":{"questions":[{"question":"Q?","header":"Thirteen char","options":[{"label":"A","description":"a"},{"label":"B","description":"b"}]}]}}` + "\n",
			`t.txtar:5: ask.questions[0].header: at most 12 characters, got 13 ("Thirteen char")`},
		{"duplicate label", hdr + `{"prompt":"hi"}` + "\n" + `{"ask":{"questions":[{"question":"Q?","header":"H","options":[{"label":"A","description":"a"},{"label":"A","description":"b"}]}]}}` + "\n",
			`t.txtar:5: ask.questions[0].options[1].label: labels must be unique within a question, "A" repeats`},
		{"duplicate question", hdr + `{"prompt":"hi"}` + "\n" + `{"ask":{"questions":[` + q1 + "," + q1 + `]}}` + "\n",
			`t.txtar:5: ask.questions[1].question: question texts must be unique, "Which?" repeats`},
		{"answer to unknown question", hdr + `{"prompt":"hi"}` + "\n" + `{"ask":{"questions":[` + q1 + `]},"user":{"answers":{"What?":"A"}}}` + "\n",
			`t.txtar:5: user.answers: no question "What?" in this step`},
		{"user two actions", hdr + `{"prompt":"hi"}` + "\n" + `{"ask":{"questions":[` + q1 + `]},"user":{"answers":{"Which?":"A"},"skip":"no"}}` + "\n",
			"t.txtar:5: user: want exactly one of answers, allow, skip or silent"},
		{"resume not a prompt first", hdr + `{"prompt":"hi"}` + "\n-- resume.jsonl --\n" + `{"text":"x"}` + "\n", "t.txtar:6: the first step must be a prompt (a turn starts with the user's message), got text"},
		{"bad expect_prompt", hdr + `{"prompt":"hi","expect_prompt":"("}` + "\n", "t.txtar:4: expect_prompt: not a regular expression: error parsing regexp: missing closing ): `(`"},
		{"bad refuse_prompt", hdr + `{"prompt":"hi","refuse_prompt":"("}` + "\n", "t.txtar:4: refuse_prompt: not a regular expression: error parsing regexp: missing closing ): `(`"},
		{"refuse_prompt off a prompt", hdr + `{"prompt":"hi"}` + "\n" + `{"text":"so","refuse_prompt":"x"}` + "\n", "t.txtar:5: refuse_prompt: only prompt steps take refuse_prompt"},
		{"bad duration", hdr + `{"prompt":"hi"}` + "\n" + `{"ask":{"questions":[` + q1 + `]},"cancel_after":"soon"}` + "\n",
			`t.txtar:5: want a duration such as "250ms": time: invalid duration "soon"`},
		{"parallel first call", hdr + `{"prompt":"hi"}` + "\n" + `{"ask":{"questions":[` + q1 + `]},"parallel":true}` + "\n",
			"t.txtar:5: parallel: a parallel call runs beside the call before it, and the step before is no ask or tool step"},
		{"parallel after text", hdr + `{"prompt":"hi"}` + "\n" + `{"text":"x"}` + "\n" + `{"ask":{"questions":[` + q1 + `]},"parallel":true}` + "\n",
			"t.txtar:6: parallel: a parallel call runs beside the call before it, and the step before is no ask or tool step"},
		{"parallel Bash", hdr + `{"prompt":"hi"}` + "\n" + `{"ask":{"questions":[` + q1 + `]}}` + "\n" + `{"tool":{"name":"Bash","input":{"command":"ls"}},"parallel":true}` + "\n",
			"t.txtar:6: parallel: the CLI runs only these tools at once: AskUserQuestion, Glob, Grep, Read, WebFetch, WebSearch"},
		{"parallel text", hdr + `{"prompt":"hi"}` + "\n" + `{"ask":{"questions":[` + q1 + `]}}` + "\n" + `{"text":"x","parallel":true}` + "\n",
			"t.txtar:6: parallel: only ask and tool steps of a route sdk scenario run in parallel"},
		{"expect on text", hdr + `{"prompt":"hi"}` + "\n" + `{"text":"x","expect":{"behavior":"allow"}}` + "\n", "t.txtar:5: expect: only ask, tool and mcp steps take expect"},
		{"bad behavior", hdr + `{"prompt":"hi"}` + "\n" + `{"ask":{"questions":[` + q1 + `]},"expect":{"behavior":"maybe"}}` + "\n",
			`t.txtar:5: expect.behavior: want "allow" or "deny", got "maybe"`},
		{"duplicate id", hdr + `{"prompt":"hi"}` + "\n" + `{"ask":{"questions":[` + q1 + `]},"id":"t1"}` + "\n" + `{"ask":{"questions":[` + q1 + `]},"id":"t1"}` + "\n",
			`t.txtar:6: id: tool_use id "t1" is already used on line 5`},
		{"tool without input", hdr + `{"prompt":"hi"}` + "\n" + `{"tool":{"name":"Bash"}}` + "\n", "t.txtar:5: tool.input: want an object"},
		{"tool named AskUserQuestion", hdr + `{"prompt":"hi"}` + "\n" + `{"tool":{"name":"AskUserQuestion","input":{}}}` + "\n", "t.txtar:5: tool.name: use an ask step for AskUserQuestion"},
		{"duplicate key", hdr + `{"prompt":"hi","prompt":"again"}` + "\n", "t.txtar:4: prompt: key appears twice"},
		{"duplicate nested key", hdr + `{"prompt":"hi"}` + "\n" + `{"ask":{"questions":[` + q1 + `]},"user":{"answers":{"Which?":"A","Which?":"B"}}}` + "\n",
			"t.txtar:5: user.answers.Which?: key appears twice"},
		{"keys differing in case", hdr + `{"prompt":"hi","Prompt":"again"}` + "\n", "t.txtar:4: Prompt: key appears twice"},
		{"duplicate header key", "-- scenario.json --\n{\"name\":\"a\",\"name\":\"b\"}\n-- steps.jsonl --\n{\"prompt\":\"hi\"}\n", "t.txtar:2: name: key appears twice"},
		{"expect contradicts answer", hdr + `{"prompt":"hi"}` + "\n" + `{"ask":{"questions":[` + q1 + `]},"user":{"answers":{"Which?":"A"}},"expect":{"answers":{"Which?":"B"}}}` + "\n",
			`t.txtar:5: expect.answers: contradicts user: the user answers "Which?" with "A", and expect wants "B"`},
		{"expect allow on skip", hdr + `{"prompt":"hi"}` + "\n" + `{"ask":{"questions":[` + q1 + `]},"user":{"skip":"no"},"expect":{"behavior":"allow"}}` + "\n",
			`t.txtar:5: expect.behavior: contradicts user: the user skips (a deny), and expect wants "allow"`},
		{"expect deny on answer", hdr + `{"prompt":"hi"}` + "\n" + `{"ask":{"questions":[` + q1 + `]},"user":{"answers":{"Which?":"A"}},"expect":{"behavior":"deny"}}` + "\n",
			`t.txtar:5: expect.behavior: contradicts user: the user answers (an allow), and expect wants "deny"`},
		{"expect no answer on answer", hdr + `{"prompt":"hi"}` + "\n" + `{"ask":{"questions":[` + q1 + `]},"user":{"answers":{"Which?":"A"}},"expect":{"no_answer":true}}` + "\n",
			`t.txtar:5: expect.no_answer: contradicts user: expect wants no answer, and the user answers`},
		{"mcp step in route sdk", hdr + `{"prompt":"hi"}` + "\n" + `{"mcp":{"server":"askctl","input":{"question":"Q?"}}}` + "\n",
			`t.txtar:5: mcp: mcp steps belong to route "mcp" scenarios (set "route":"mcp" in scenario.json)`},
		{"mcp without question", mcpHdr + `{"prompt":"hi"}` + "\n" + `{"mcp":{"server":"askctl","input":{}}}` + "\n",
			`t.txtar:5: mcp.input.question: required: ask_user asks one question`},
		{"mcp bad server", mcpHdr + `{"prompt":"hi"}` + "\n" + `{"mcp":{"server":"a b","input":{"question":"Q?"}}}` + "\n",
			`t.txtar:5: mcp.server: want a server name of letters, digits and - (as in --mcp-config), got "a b"`},
		{"mcp allow", mcpHdr + `{"prompt":"hi"}` + "\n" + `{"mcp":{"server":"askctl","input":{"question":"Q?"}},"user":{"allow":true}}` + "\n",
			`t.txtar:5: user: an mcp step is answered with answers, skip or silent (the server times out)`},
		{"mcp cancel_after under a second", mcpHdr + `{"prompt":"hi"}` + "\n" + `{"mcp":{"server":"askctl","input":{"question":"Q?"}},"user":{"silent":true},"cancel_after":"500ms"}` + "\n",
			`t.txtar:5: cancel_after: an mcp step's cancel_after is the CLI's tool timeout, which is 1s at least, got 500ms`},
		{"mcp cancel_after differs", mcpHdr + `{"prompt":"hi"}` + "\n" + `{"mcp":{"server":"askctl","input":{"question":"Q?"}},"user":{"silent":true},"cancel_after":"1s"}` + "\n" + `{"mcp":{"server":"askctl","input":{"question":"R?"}},"user":{"silent":true},"cancel_after":"2s"}` + "\n",
			`t.txtar:6: cancel_after: an mcp step's cancel_after is the CLI's tool timeout, one for the session: 2s here, 1s on an mcp step before`},
		{"mcp cancel_after zero", mcpHdr + `{"prompt":"hi"}` + "\n" + `{"mcp":{"server":"askctl","input":{"question":"Q?"}},"user":{"silent":true},"cancel_after":"0s"}` + "\n",
			`t.txtar:5: cancel_after: an mcp step's cancel_after is the CLI's tool timeout, which is 1s at least, got 0s`},
		{"mcp cancel_after on an answer", mcpHdr + `{"prompt":"hi"}` + "\n" + `{"mcp":{"server":"askctl","input":{"question":"Q?"}},"user":{"answers":{"Q?":"x"}},"cancel_after":"2s"}` + "\n",
			`t.txtar:5: cancel_after: an mcp step's cancel_after is for a call nobody answers ("user": {"silent": true}): the CLI ends it then`},
		{"mcp silent call past the tool timeout", mcpHdr + `{"prompt":"hi"}` + "\n" + `{"mcp":{"server":"askctl","input":{"question":"Q?"}},"user":{"silent":true},"cancel_after":"1s"}` + "\n" + `{"mcp":{"server":"askctl","input":{"question":"R?"}},"user":{"silent":true}}` + "\n",
			`t.txtar:6: cancel_after: the CLI's tool timeout of this session (cancel_after 1s on another mcp step) ends this call too: give it cancel_after 1s`},
		{"mcp exit_after", mcpHdr + `{"prompt":"hi"}` + "\n" + `{"mcp":{"server":"askctl","input":{"question":"Q?"}},"exit_after":"1s"}` + "\n",
			`t.txtar:5: exit_after: an mcp step takes no exit_after: the MCP server decides when the call ends, or the CLI does (cancel_after)`},
		{"mcp answer to another question", mcpHdr + `{"prompt":"hi"}` + "\n" + `{"mcp":{"server":"askctl","input":{"question":"Q?"}},"user":{"answers":{"R?":"x"}}}` + "\n",
			`t.txtar:5: user.answers: no question "R?" in this step`},
		{"route mcp two turns", mcpHdr + `{"prompt":"hi"}` + "\n" + `{"prompt":"again"}` + "\n",
			`t.txtar:5: prompt: a route "mcp" scenario is one turn (the agent runs in print mode, claude -p): one prompt step`},
		{"ask in route mcp", mcpHdr + `{"prompt":"hi"}` + "\n" + `{"ask":{"questions":[` + q1 + `]}}` + "\n",
			`t.txtar:5: ask: route "mcp" runs in print mode, where AskUserQuestion is not offered: ask with an mcp step`},
		{"wire bad dir", hdr + `{"prompt":"hi"}` + "\n-- wire.jsonl --\n" + `{"dir":"sideways","msg":{}}` + "\n", `t.txtar:6: dir: want "to_cli" or "from_cli", got "sideways"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("t.txtar", []byte(tt.text))
			if err == nil {
				t.Fatalf("Parse() = nil error, want %q", tt.want)
			}
			if diff := cmp.Diff(tt.want, err.Error()); diff != "" {
				t.Errorf("Parse() error (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseReportsEveryError(t *testing.T) {
	text := hdr + `{"prompt":"hi"}` + "\n" + `{"ask":{"questions":[{"question":"","header":"","options":[]}]}}` + "\n" + `{"bogus":1}` + "\n"
	_, err := Parse("t.txtar", []byte(text))
	list, ok := err.(ErrorList)
	if !ok {
		t.Fatalf("error %T, want ErrorList", err)
	}
	if len(list) != 4 {
		t.Errorf("got %d errors, want 4:\n%v", len(list), err)
	}
}

// TestParseBoundsErrors: a file of many bad lines reports the first
// MaxErrors problems and counts the rest.
func TestParseBoundsErrors(t *testing.T) {
	text := hdr + `{"prompt":"hi"}` + "\n" + strings.Repeat(`{"bogus":1}`+"\n", 5000)
	_, err := Parse("t.txtar", []byte(text))
	list, ok := err.(ErrorList)
	if !ok {
		t.Fatalf("error %T, want ErrorList", err)
	}
	if len(list) != MaxErrors+1 || list[MaxErrors].Msg != "and 4900 more problems" {
		t.Errorf("%d errors, last %v; want %d and a count of the rest", len(list), list[len(list)-1], MaxErrors+1)
	}
}

// TestHeaderAfterSteps: the header is read first wherever it stands.
func TestHeaderAfterSteps(t *testing.T) {
	text := "-- steps.jsonl --\n" + `{"prompt":"hi"}` + "\n" + `{"ask":{"questions":[{"question":"Q?","header":"A long header here","options":[{"label":"A","description":"a"},{"label":"B","description":"b"}]}]}}` + "\n-- scenario.json --\n{\"origin\":\"recorded\"}\n"
	if _, err := Parse("r.txtar", []byte(text)); err != nil {
		t.Errorf("Parse() = %v, want the recorded origin seen before the steps are checked", err)
	}
}

func TestRecordedScenariosMayHaveLongHeaders(t *testing.T) {
	text := "-- scenario.json --\n{\"origin\":\"recorded\"}\n-- steps.jsonl --\n" + `{"prompt":"hi"}` + "\n" + `{"ask":{"questions":[{"question":"Q?","header":"A long header here","options":[{"label":"A","description":"a"},{"label":"B","description":"b"}]}]}}` + "\n"
	if _, err := Parse("r.txtar", []byte(text)); err != nil {
		t.Errorf("Parse() = %v, want the CLI's advisory header limit to be waived for recordings", err)
	}
}

func TestBuiltins(t *testing.T) {
	want := []string{"ask-four", "ask-free-text", "ask-multi", "ask-notes", "ask-parallel", "ask-sequential", "ask-single", "ask-skip", "ask-skip-interrupt", "cancel-pending", "exit-pending", "late-answer", "mcp-ask-cancel", "mcp-ask-multi", "mcp-ask-single", "mcp-ask-skip", "mcp-ask-timeout", "other-tool"}
	if diff := cmp.Diff(want, Names()); diff != "" {
		t.Errorf("Names() (-want +got):\n%s", diff)
	}
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			sc, err := Builtin(name)
			if err != nil {
				t.Fatal(err)
			}
			if sc.Name != name {
				t.Errorf("header name = %q, want the file's %q", sc.Name, name)
			}
			if sc.Description == "" || sc.CLIVersion != "2.1.330" || sc.Origin != Synthetic {
				t.Errorf("header = %q/%q/%q, want a description, cli_version 2.1.330, origin synthetic", sc.Description, sc.CLIVersion, sc.Origin)
			}
			for _, st := range sc.Steps {
				if (st.Kind == KindAsk || st.Kind == KindTool) && st.User == nil {
					t.Errorf("line %d: %s has no user part, so askctl replay cannot play it", st.Line, st.Describe())
				}
			}
		})
	}
}

func TestAskMultiIsTheCapture(t *testing.T) {
	sc, err := Builtin("ask-multi")
	if err != nil {
		t.Fatal(err)
	}
	ask := sc.Steps[1]
	if ask.Kind != KindAsk || len(ask.Questions) != 2 || !ask.Questions[1].MultiSelect || ask.Questions[0].Options[0].Description != "Brief overview" {
		t.Fatalf("ask-multi step 2 = %+v", ask)
	}
	e := ask.Expected()
	if e.Behavior != "allow" || e.Answers["Which sections?"] != "Intro, Outro" || e.Answers["How should I format the output?"] != "Summary" {
		t.Errorf("expectation = %+v, want allow with Summary and \"Intro, Outro\"", e)
	}
	if sc.Steps[2].Text != "Done." {
		t.Errorf("last step = %+v, want text Done.", sc.Steps[2])
	}
}

func TestLoad(t *testing.T) {
	if _, err := Load("ask-single"); err != nil {
		t.Errorf("Load(built-in) = %v", err)
	}
	_, err := Load("no-such")
	if err == nil || !strings.Contains(err.Error(), `no built-in scenario or file "no-such" (built-ins: ask-four,`) {
		t.Errorf("Load(no-such) = %v", err)
	}
	_, err = Load("missing/file.txtar")
	if err == nil || !strings.Contains(err.Error(), "scenario file: ") {
		t.Errorf("Load(missing file) = %v", err)
	}
}

func fiveQuestions() string {
	var qs []string
	for _, c := range "abcde" {
		qs = append(qs, strings.Replace(q1, "Which?", "Which "+string(c)+"?", 1))
	}
	return strings.Join(qs, ",")
}

// TestSplitMCPName: mcp__<server>__<tool> and nothing else.
func TestSplitMCPName(t *testing.T) {
	for name, want := range map[string][2]string{"mcp__askctl__ask_user": {"askctl", "ask_user"}, "mcp__a__b__c": {"a", "b__c"},
		"AskUserQuestion": {}, "mcp__askctl": {}, "mcp____x": {}, "mcp__x__": {}} {
		s, tool, ok := SplitMCPName(name)
		if ok != (want[0] != "") || s != want[0] || tool != want[1] {
			t.Errorf("%q: %q %q %v, want %q", name, s, tool, ok, want)
		}
	}
}
