package protocol_test

import (
	"strings"
	"testing"

	"github.com/askctl/askctl/protocol"
)

// TestPeek: a stream-json message is read once, loosely: a control request,
// a response with its result or error, content blocks each with its raw
// bytes, a user's string content, and a field of the wrong type leaves the
// others read.
func TestPeek(t *testing.T) {
	req := protocol.Peek([]byte(`{"type":"control_request","request_id":"r1","request":{"subtype":"can_use_tool","tool_name":"AskUserQuestion","tool_use_id":"tu","input":{"questions":[]}}}`))
	if req.Type != "control_request" || req.RequestID != "r1" || req.Request.Subtype != "can_use_tool" || req.Request.ToolName != "AskUserQuestion" || req.Request.ToolUseID != "tu" || string(req.Request.Input) != `{"questions":[]}` {
		t.Errorf("control_request: %+v", req)
	}
	resp := protocol.Peek([]byte(`{"type":"control_response","response":{"subtype":"error","request_id":"r1","error":"no"}}`))
	if resp.Response.Subtype != "error" || resp.Response.RequestID != "r1" || resp.Response.Error != "no" {
		t.Errorf("control_response: %+v", resp.Response)
	}
	user := protocol.Peek([]byte(`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"tu","content":"ok","is_error":true,"extra":1}]}}`))
	if len(user.Blocks) != 1 || user.Blocks[0].ToolUseID != "tu" || !strings.Contains(string(user.RawBlocks[0]), `"extra":1`) {
		t.Errorf("user blocks: %+v", user)
	}
	if p := protocol.Peek([]byte(`{"type":"user","message":{"content":"hello"}}`)); p.Text != "hello" || p.Blocks != nil {
		t.Errorf("user text: %+v", p)
	}
	if p := protocol.Peek([]byte(`{"type":"control_request","request_id":7,"request":{"subtype":"interrupt"}}`)); p.Type != "control_request" || p.Request.Subtype != "interrupt" {
		t.Errorf("a request_id of the wrong type spoiled the rest: %+v", p)
	}
	if p := protocol.Peek([]byte(`not json`)); p.Type != "" {
		t.Errorf("not json: %+v", p)
	}
}

// TestReadGranted: a bridge's permission result is read as sent: its
// answers in order, each value as sent (a list is no string), a blank
// answer kept, and whatever answers is when it is no object.
func TestReadGranted(t *testing.T) {
	g := protocol.ReadGranted([]byte(`{"behavior":"allow","updatedInput":{"questions":[{"question":"B?"}],"answers":{"B?":"x","A?":["a","b"],"C?":"  "}}}`))
	if g.Behavior != "allow" || !g.AnswersSent || len(g.Answers) != 3 || g.Answers[0].Key != "B?" || g.Answers[1].Key != "A?" || string(g.Questions) != `[{"question":"B?"}]` {
		t.Fatalf("allow: %+v", g)
	}
	if s, ok := g.Answers[0].String(); !ok || s != "x" {
		t.Errorf("B? = %q, %v", s, ok)
	}
	if _, ok := g.Answers[1].String(); ok {
		t.Error("a list of labels read as a string")
	}
	if a, ok := g.Answer("C?"); !ok {
		t.Error("the blank answer is missing")
	} else if s, _ := a.String(); s != "  " {
		t.Errorf("C? = %q", s)
	}
	if _, ok := g.Answer("D?"); ok {
		t.Error("an answer to a question not answered")
	}
	d := protocol.ReadGranted([]byte(`{"behavior":"deny","message":"skipped","updatedInput":{"answers":"all"}}`))
	if d.Behavior != "deny" || d.Message != "skipped" || d.AnswersSent || string(d.AnswersRaw) != `"all"` {
		t.Errorf("deny: %+v", d)
	}
}

// TestAsked: an AskUserQuestion input's questions, or an ask_user call's
// one question.
func TestAsked(t *testing.T) {
	qs, mcp := protocol.Asked([]byte(`{"questions":[{"question":"A?","header":"H","options":[{"label":"x","description":"d"}],"multiSelect":true},{"question":"B?","options":"bad"}]}`))
	if mcp || len(qs) != 2 || qs[0].Question != "A?" || !qs[0].MultiSelect || qs[0].Options[0].Label != "x" || qs[1].Question != "B?" {
		t.Errorf("questions: %+v, mcp %v", qs, mcp)
	}
	qs, mcp = protocol.Asked([]byte(`{"question":"C?","options":[{"label":"y","description":""}]}`))
	if !mcp || len(qs) != 1 || qs[0].Question != "C?" {
		t.Errorf("ask_user: %+v, mcp %v", qs, mcp)
	}
	if text, isErr := protocol.ToolResult([]byte(`{"type":"tool_result","content":[{"type":"text","text":"a"},{"type":"image"},{"type":"text","text":"b"}],"is_error":true}`)); text != "a\nb" || !isErr {
		t.Errorf("tool result: %q, %v", text, isErr)
	}
}

// TestReadLooselyFieldByField: a field of the wrong type leaves the others
// read, in a permission result, an input's questions and a tool result.
func TestReadLooselyFieldByField(t *testing.T) {
	if g := protocol.ReadGranted([]byte(`{"behavior":"deny","message":"skipped","updatedInput":"junk"}`)); g.Behavior != "deny" || g.Message != "skipped" {
		t.Errorf("deny with junk updatedInput: %+v", g)
	}
	if g := protocol.ReadGranted([]byte(`{"behavior":"allow","updatedInput":["x"]}`)); g.Behavior != "allow" {
		t.Errorf("allow with a list for updatedInput: %+v", g)
	}
	if g := protocol.ReadGranted([]byte(`{"behavior":"deny","message":7}`)); g.Behavior != "deny" || g.Message != "" {
		t.Errorf("deny with a number for its message: %+v", g)
	}
	qs, _ := protocol.Asked([]byte(`{"questions":[{"question":"A?","header":5,"options":[{"label":"x","description":"d"}],"multiSelect":"yes"}],"metadata":7}`))
	if len(qs) != 1 || qs[0].Question != "A?" || len(qs[0].Options) != 1 || qs[0].Options[0].Label != "x" {
		t.Errorf("a question with fields of the wrong type: %+v", qs)
	}
	if text, isErr := protocol.ToolResult([]byte(`{"type":"tool_result","content":"ok","is_error":"true"}`)); text != "ok" || isErr {
		t.Errorf("is_error of the wrong type: %q, %v", text, isErr)
	}
}
