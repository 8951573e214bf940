package replay_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/askctl/askctl/internal/replay"
	"github.com/askctl/askctl/internal/shape"
	"github.com/askctl/askctl/scenarios"
	"github.com/askctl/askctl/transcript"
)

var opts = replay.Options{Timeout: 30 * time.Second}

func TestReplayBuiltinsAgainstFakeclaude(t *testing.T) {
	for _, name := range scenarios.Names() {
		t.Run(name, func(t *testing.T) {
			sc, err := scenarios.Builtin(name)
			if err != nil {
				t.Fatal(err)
			}
			rep := replay.Replay(context.Background(), sc, fake, opts)
			if !rep.Match {
				t.Errorf("replay %s: error %q, diffs:\n%v", name, rep.Error, rep.Diffs)
			}
		})
	}
}

// TestReplayParallelCalls: calls of one model response end in the order
// their answers come, a withdrawal at its cancel_after among them, and one
// that aborts the turn withdraws the others first.
func TestReplayParallelCalls(t *testing.T) {
	const q1 = `{"question":"Which database?","header":"DB","options":[{"label":"Postgres","description":"p"},{"label":"SQLite","description":"s"}],"multiSelect":false}`
	const q2 = `{"question":"Which cache?","header":"Cache","options":[{"label":"Redis","description":"r"},{"label":"None","description":"n"}],"multiSelect":false}`
	tests := map[string]string{
		"answered, then withdrawn": `{"ask":{"questions":[` + q1 + `]},"user":{"answers":{"Which database?":"SQLite"},"after":"100ms"}}` + "\n" +
			`{"ask":{"questions":[` + q2 + `]},"parallel":true,"user":{"silent":true},"cancel_after":"600ms"}` + "\n",
		"withdrawn first": `{"ask":{"questions":[` + q1 + `]},"user":{"answers":{"Which database?":"SQLite"},"after":"600ms"}}` + "\n" +
			`{"ask":{"questions":[` + q2 + `]},"parallel":true,"user":{"silent":true},"cancel_after":"100ms"}` + "\n",
		"the second answered first": `{"ask":{"questions":[` + q1 + `]},"user":{"answers":{"Which database?":"SQLite"},"after":"300ms"}}` + "\n" +
			`{"ask":{"questions":[` + q2 + `]},"parallel":true,"user":{"answers":{"Which cache?":"Redis"}}}` + "\n" + `{"text":"Done."}` + "\n",
		"a skip with interrupt": `{"ask":{"questions":[` + q1 + `]},"user":{"skip":"stop","interrupt":true}}` + "\n" +
			`{"ask":{"questions":[` + q2 + `]},"parallel":true,"user":{"answers":{"Which cache?":"Redis"},"after":"2s"}}` + "\n",
	}
	for name, steps := range tests {
		t.Run(name, func(t *testing.T) {
			sc, err := scenarios.Parse("p.txtar", []byte("-- scenario.json --\n{\"name\":\"p\"}\n-- steps.jsonl --\n{\"prompt\":\"go\"}\n"+steps))
			if err != nil {
				t.Fatal(err)
			}
			rep := replay.Replay(context.Background(), sc, fake, opts)
			if !rep.Match {
				t.Errorf("error %q, diffs:\n%v", rep.Error, rep.Diffs)
			}
		})
	}
}

// TestReplayCatchesADriftingAgent shows that replay fails, at the right step,
// when the agent's tool_result text or message keys differ.
func TestReplayCatchesADriftingAgent(t *testing.T) {
	tests := []struct {
		name, scenario, from, to, want string
	}{
		{"old wording", "ask-multi", "Your questions have been answered", "User has answered your questions", `step 2, message 5: from_cli user: content[0].content is "User has answered your questions: `},
		{"deny text", "ask-skip", `"content":"User skipped this question"`, `"content":"skipped"`, `step 2, message 5: from_cli user: content[0].content is "skipped", want "User skipped this question"`},
		{"no result", "ask-single", `"type":"result"`, `"type":"resultat"`, "missing from_cli result/success (turn end)"},
		{"tool name", "other-tool", `"tool_name":"Bash"`, `"tool_name":"Shell"`, `step 2, message 4: from_cli control_request/can_use_tool: tool_name is "Shell", want "Bash"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc, err := scenarios.Builtin(tt.scenario)
			if err != nil {
				t.Fatal(err)
			}
			rep := replay.Replay(context.Background(), sc, mutant{fake, tt.from, tt.to}, replay.Options{Timeout: 3 * time.Second})
			if rep.Match {
				t.Fatalf("replay matched a drifting agent")
			}
			var all []string
			for _, d := range rep.Diffs {
				all = append(all, d.String())
			}
			if !strings.Contains(strings.Join(all, "\n"), tt.want) {
				t.Errorf("diffs:\n%s\nwant one containing %q", strings.Join(all, "\n"), tt.want)
			}
		})
	}
}

// TestCheckStepsAligns: one dropped message is one difference, and one
// message too many is one difference, not a cascade.
func TestCheckStepsAligns(t *testing.T) {
	sc, err := scenarios.Builtin("ask-sequential")
	if err != nil {
		t.Fatal(err)
	}
	want := replay.Expected(sc, "")
	var msgs []shape.Msg
	for _, w := range want {
		m := w.Msg
		m.Dir = transcript.FromCLI
		msgs = append(msgs, m)
	}
	if d := replay.CheckSteps(want, msgs); len(d) != 0 {
		t.Fatalf("CheckSteps(expected, expected) = %v, want none", d)
	}
	for i := 1; i < len(msgs)-1; i++ {
		dropped := append(append([]shape.Msg(nil), msgs[:i]...), msgs[i+1:]...)
		if d := replay.CheckSteps(want, dropped); len(d) != 1 || !strings.Contains(d[0].Text, "missing") {
			t.Errorf("with message %d dropped: %d differences %v, want 1 missing", i+1, len(d), d)
		}
		extra := append(append(append([]shape.Msg(nil), msgs[:i]...), shape.Msg{Dir: transcript.FromCLI, Type: "assistant"}), msgs[i:]...)
		if d := replay.CheckSteps(want, extra); len(d) != 1 || !strings.Contains(d[0].Text, "unexpected from_cli assistant") {
			t.Errorf("with an extra message at %d: %d differences %v, want 1 unexpected", i+1, len(d), d)
		}
	}
}

// TestTimeoutReachesTheAgent: replay's timeout is fakeclaude's own wait
// deadline, so a person who takes too long gets fakeclaude's verdict (exit 5,
// "no answer … within") as a typed error, not a kill.
func TestTimeoutReachesTheAgent(t *testing.T) {
	sc, err := scenarios.Parse("slow.txtar", []byte("The person answers after ten seconds.\n-- scenario.json --\n{\"name\":\"slow\"}\n-- steps.jsonl --\n"+
		`{"prompt":"Set up storage."}`+"\n"+
		`{"ask":{"questions":[{"question":"Which database should I use?","header":"Database","options":[{"label":"Postgres","description":"a"},{"label":"SQLite","description":"b"}],"multiSelect":false}]},"user":{"answers":{"Which database should I use?":"Postgres"},"after":"10s"}}`+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	rep := replay.Replay(context.Background(), sc, fake, replay.Options{Timeout: 500 * time.Millisecond})
	if !errors.Is(rep.Err, replay.ErrAgentTimeout) || rep.Exit != 5 {
		t.Fatalf("Err = %v, exit %d; want ErrAgentTimeout and fakeclaude's exit 5", rep.Err, rep.Exit)
	}
	if !strings.Contains(rep.Error, "no answer to AskUserQuestion request") || !strings.Contains(rep.Error, "within 500ms") {
		t.Errorf("Error = %q, want fakeclaude's own verdict", rep.Error)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v, want about the timeout", d)
	}
	// A context deadline shortens the wait the same way.
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	rep = replay.Replay(ctx, sc, fake, replay.Options{Timeout: time.Minute})
	if !errors.Is(rep.Err, replay.ErrAgentTimeout) {
		t.Errorf("with a context deadline: Err = %v, want ErrAgentTimeout", rep.Err)
	}
}

// TestExpectedStepNumbers: Expected names each message by the step's own
// number, also after a turn that was aborted with steps left.
func TestExpectedStepNumbers(t *testing.T) {
	q := `{"question":"Which?","header":"Pick","options":[{"label":"A","description":"a"},{"label":"B","description":"b"}],"multiSelect":false}`
	sc, err := scenarios.Parse("n.txtar", []byte("-- scenario.json --\n{}\n-- steps.jsonl --\n"+
		`{"prompt":"one"}`+"\n"+`{"ask":{"questions":[`+q+`]},"user":{"skip":"no","interrupt":true}}`+"\n"+`{"text":"never"}`+"\n"+
		`{"prompt":"two"}`+"\n"+`{"text":"done"}`+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range replay.Expected(sc, "") {
		if w.Msg.Type == "assistant" && w.Msg.Values["content[0].text"] == "done" && w.Step != 5 {
			t.Errorf("the second turn's text is step %d, want 5", w.Step)
		}
		if w.Reason == "turn start" && w.Step != 1 && w.Step != 4 {
			t.Errorf("a turn starts at step %d, want 1 or 4", w.Step)
		}
	}
}
