//go:build !mutation

package bridge_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/askctl/askctl/bridge"
	"github.com/askctl/askctl/bridgeapi"
	"github.com/askctl/askctl/policy"
	"github.com/tidwall/gjson"
)

const testPolicy = `# the bridge's policy tests
{"name":"db","match":{"header":"^Database$","session":"^s_"},"answer":"Postgres"}
{"name":"format","match":{"header":"^Format$"},"answer":"Summary"}
{"name":"sections","match":{"header":"^Sections$"},"answer":["Intro","Outro"]}
{"name":"mcp","match":{"question":"^How should I format\\?$"},"answer":"Detailed","after":"150ms"}
{"name":"never","match":{"question":"never"},"skip":"User skipped this question"}
`

// TestPolicyAnswers: with a policy, the bridge answers by rules as a person
// would (one request's questions together), on the SDK route and the MCP
// route, and every decision is an event naming the rule. The agent checks
// each answer against its scenario.
func TestPolicyAnswers(t *testing.T) {
	p, err := policy.Parse("test.policy", []byte(testPolicy))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, bridge.Config{Policy: p})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	t.Run("sdk", func(t *testing.T) {
		s := e.start("ask-multi", "Ask me how to format.")
		ended := e.ended(s.ID)
		if *ended.ExitCode != 0 {
			t.Fatalf("the agent exited %d: %s", *ended.ExitCode, ended.Detail)
		}
		sent := answersSent(e.transcript(ended.ClaudeSessionID))
		if len(sent) != 1 || gjson.Get(sent[0], "updatedInput.answers").Raw != `{"How should I format the output?":"Summary","Which sections?":"Intro, Outro"}` {
			t.Errorf("the agent received %v", sent)
		}
		answered := eventsOf(t, e, s.ID, bridgeapi.EventAnswered)
		if len(answered) != 1 || answered[0].Rule != `rule "format" (test.policy:3), rule "sections" (test.policy:4)` {
			t.Errorf("answered events %+v, want one by rules format and sections, each question's", answered)
		}
	})

	t.Run("mcp after a wait", func(t *testing.T) {
		ss, err := e.c.OpenMCP(ctx, "policy")
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		q, err := e.c.AskMCP(ctx, ss.ID, mcpQuestion)
		if err != nil {
			t.Fatal(err)
		}
		if q.Status != bridgeapi.QuestionAnswered || q.Answers["How should I format?"] != "Detailed" {
			t.Errorf("the MCP question ended %s with %v, want answered Detailed", q.Status, q.Answers)
		}
		if waited := time.Since(start); waited < 150*time.Millisecond {
			t.Errorf("the rule acted after %v, before its wait of 150ms", waited)
		}
		if ev := eventsOf(t, e, ss.ID, bridgeapi.EventAnswered); len(ev) != 1 || !strings.Contains(ev[0].Rule, `"mcp"`) {
			t.Errorf("answered events %+v", ev)
		}
	})

	t.Run("a person first", func(t *testing.T) {
		// The rule waits; the person answers before it acts, and wins.
		ss, err := e.c.OpenMCP(ctx, "person")
		if err != nil {
			t.Fatal(err)
		}
		call := askAsync(ctx, e, ss.ID, mcpQuestion)
		q := e.pending(ss.ID, 1)[0]
		if _, err := e.c.Answer(ctx, q.ID, map[string]bridgeapi.Answer{"1": {"Summary"}}); err != nil {
			t.Fatal(err)
		}
		if got := result(t, call); got.Answers["How should I format?"] != "Summary" {
			t.Errorf("answers %v, want the person's", got.Answers)
		}
		if ev := eventsOf(t, e, ss.ID, bridgeapi.EventAnswered); len(ev) != 1 || ev[0].Rule != "" {
			t.Errorf("answered events %+v, want one by the person", ev)
		}
	})

}

// TestPolicySkips: a skip rule for one question of a request skips the whole
// request (never a partial answer), with the rule's reason as the deny.
func TestPolicySkips(t *testing.T) {
	p, err := policy.Parse("skip.policy", []byte(`{"name":"format","match":{"header":"^Format$"},"answer":"Summary"}
{"name":"no-sections","match":{"header":"^Sections$"},"skip":"User skipped this question"}`))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, bridge.Config{Policy: p})
	s := e.start("ask-skip", "x")
	ended := e.ended(s.ID)
	if *ended.ExitCode != 0 {
		t.Fatalf("the agent exited %d: %s", *ended.ExitCode, ended.Detail)
	}
	sent := answersSent(e.transcript(ended.ClaudeSessionID))
	if len(sent) != 1 || gjson.Get(sent[0], "behavior").String() != "deny" || gjson.Get(sent[0], "message").String() != "User skipped this question" {
		t.Errorf("the agent received %v", sent)
	}
	if ev := eventsOf(t, e, s.ID, bridgeapi.EventSkipped); len(ev) != 1 || ev[0].Rule != `rule "no-sections" (skip.policy:2)` {
		t.Errorf("skipped events %+v", ev)
	}
}

// eventsOf is the session's logged events of one type, once there is one
// (an event is logged a moment after the agent, or an MCP caller, has the
// answer), or none after 10s.
func eventsOf(t *testing.T, e *env, session, typ string) []bridgeapi.Event {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		all, err := e.b.EventsAfter(context.Background(), 0, session, 1000)
		if err != nil {
			t.Fatal(err)
		}
		var out []bridgeapi.Event
		for _, ev := range all {
			if ev.Type == typ {
				out = append(out, ev)
			}
		}
		if len(out) > 0 || time.Now().After(deadline) {
			return out
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestPolicyLeavesAStartedAnswer: once a person has answered part of a
// request, the policy's waiting rule leaves it to them (it would otherwise
// write over their answer when its wait ran out).
func TestPolicyLeavesAStartedAnswer(t *testing.T) {
	p, err := policy.Parse("wait.policy", []byte(`{"name":"fallback","answer":"Detailed","after":"100ms"}
{"name":"rest","first":true,"after":"100ms"}`))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, bridge.Config{Policy: p})
	ctx := context.Background()
	s := e.start("ask-multi", "Ask me how to format.")
	q := e.pending(s.ID, 1)[0]
	if res, err := e.c.Answer(ctx, q.ID, map[string]bridgeapi.Answer{"1": {"Summary"}}); err != nil || !res.Held {
		t.Fatalf("the first half: %+v, %v", res, err)
	}
	// Past the rule's wait: it must not have acted. (On a machine so busy
	// that its timer fires later still, this passes without proving it.)
	time.Sleep(400 * time.Millisecond)
	if _, err := e.c.Answer(ctx, q.ID, map[string]bridgeapi.Answer{"2": {"Intro", "Outro"}}); err != nil {
		t.Fatalf("the second half: %v (the policy settled the question first)", err)
	}
	ended := e.ended(s.ID)
	if *ended.ExitCode != 0 {
		t.Errorf("the agent exited %d: %s", *ended.ExitCode, ended.Detail)
	}
	if ev := eventsOf(t, e, s.ID, bridgeapi.EventAnswered); len(ev) != 1 || ev[0].Rule != "" {
		t.Errorf("answered events %+v, want the person's", ev)
	}
}

// TestPolicyDecisionOnEverySurface: a rule's decision names the rule on the
// WebSocket surface and on the control surface (SSE carries the same
// events as the WebSocket).
func TestPolicyDecisionOnEverySurface(t *testing.T) {
	p, err := policy.Parse("wait.policy", []byte(`{"name":"db","match":{"header":"^Database$"},"answer":"Postgres","after":"300ms"}`))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, bridge.Config{Policy: p})
	s := e.start("ask-single", "Set up storage for the app.")
	q := e.pending(s.ID, 1)[0]
	ws, control := wsDial(t, e, s.ID), socketDial(t, e, "/control", s.ID)
	want := `rule "db" (wait.policy:1)`
	if m := wsRead(t, ws, "ask_user_answered"); m.Get("question_id").String() != q.ID || m.Get("rule").String() != want {
		t.Errorf("ws: %s", m.Raw)
	}
	if m := wsRead(t, control, "control_cancel_request"); m.Get("status").String() != "answered" || m.Get("rule").String() != want {
		t.Errorf("control: %s", m.Raw)
	}
	if ended := e.ended(s.ID); *ended.ExitCode != 0 {
		t.Errorf("the agent exited %d: %s", *ended.ExitCode, ended.Detail)
	}
}

// TestPolicyIsBounded: a policy that cannot decide within its budget leaves
// the question to a person, and says so; the person's answer then lands.
// (A budget of 1ns has run out at the first rule.)
func TestPolicyIsBounded(t *testing.T) {
	p, err := policy.Parse("all.policy", []byte(`{"name":"all","first":true}`))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var log strings.Builder
	logf := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(&log, format+"\n", args...)
	}
	e := newEnv(t, bridge.Config{Policy: p, PolicyBudget: time.Nanosecond, Logf: logf})
	s := e.start("ask-single", "Ask me.")
	q := e.pending(s.ID, 1)[0]
	deadline := time.Now().Add(20 * time.Second)
	for {
		mu.Lock()
		said := strings.Contains(log.String(), q.ID+": the policy did not decide in time")
		mu.Unlock()
		if said {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the bridge never said the policy ran out of time; log:\n%s", log.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := e.c.Answer(context.Background(), q.ID, map[string]bridgeapi.Answer{"1": {q.Questions[0].Options[1].Label}}); err != nil {
		t.Fatalf("the person's answer: %v (did the policy settle it?)", err)
	}
	if ev := eventsOf(t, e, s.ID, bridgeapi.EventAnswered); len(ev) != 1 || ev[0].Rule != "" {
		t.Errorf("answered events %+v, want the person's", ev)
	}
}
