package protocol

import (
	"bytes"
	"encoding/json"
	"strings"
)

// Peeked is one stream-json message as a reader of a session sees it (the
// harness, the recorder): decoded once, loosely, whatever the peer wrote.
// What the message does not have is zero; the strict parsers
// (ParseControlRequest, ParseControlResponse, …) are for what a peer must
// get right.
type Peeked struct {
	Type string
	// RequestID is a control_request's or control_cancel_request's.
	RequestID string
	// Request is a control_request's request.
	Request struct {
		Subtype   string
		ToolName  string
		ToolUseID string
		Input     json.RawMessage
	}
	// Response is a control_response's response: its result (a
	// permission result, for can_use_tool) or error.
	Response struct {
		Subtype   string
		RequestID string
		Result    json.RawMessage
		Error     string
	}
	// Blocks are an assistant's or a user's content blocks, and RawBlocks
	// each as sent; Text is a user's content when it is one string.
	Blocks    []ContentBlock
	RawBlocks []json.RawMessage
	Text      string
}

// Peek reads a stream-json message loosely; a line that is no JSON object
// reads as a Peeked with no Type.
func Peek(raw []byte) Peeked {
	var m struct {
		Type      string `json:"type"`
		RequestID string `json:"request_id"`
		Request   struct {
			Subtype   string          `json:"subtype"`
			ToolName  string          `json:"tool_name"`
			ToolUseID string          `json:"tool_use_id"`
			Input     json.RawMessage `json:"input"`
		} `json:"request"`
		Response struct {
			Subtype   string          `json:"subtype"`
			RequestID string          `json:"request_id"`
			Response  json.RawMessage `json:"response"`
			Error     string          `json:"error"`
		} `json:"response"`
		Message struct {
			Content json.RawMessage `json:"content"`
		} `json:"message"`
	}
	var p Peeked
	if json.Unmarshal(raw, &m) != nil {
		// A field of an unexpected type spoils the whole decode: read
		// what the type needs field by field.
		var loose map[string]json.RawMessage
		if json.Unmarshal(raw, &loose) != nil {
			return p
		}
		_ = json.Unmarshal(loose["type"], &m.Type)
		_ = json.Unmarshal(loose["request_id"], &m.RequestID)
		_ = json.Unmarshal(loose["request"], &m.Request)
		_ = json.Unmarshal(loose["response"], &m.Response)
		_ = json.Unmarshal(loose["message"], &m.Message)
	}
	p.Type, p.RequestID = m.Type, m.RequestID
	p.Request.Subtype, p.Request.ToolName, p.Request.ToolUseID, p.Request.Input = m.Request.Subtype, m.Request.ToolName, m.Request.ToolUseID, m.Request.Input
	p.Response.Subtype, p.Response.RequestID, p.Response.Result, p.Response.Error = m.Response.Subtype, m.Response.RequestID, m.Response.Response, m.Response.Error
	if c := bytes.TrimSpace(m.Message.Content); len(c) > 0 {
		if json.Unmarshal(c, &p.Text) != nil && json.Unmarshal(c, &p.RawBlocks) == nil {
			p.Blocks = make([]ContentBlock, len(p.RawBlocks))
			for i, raw := range p.RawBlocks {
				_ = json.Unmarshal(raw, &p.Blocks[i])
			}
		}
	}
	return p
}

// Granted is a permission result as a bridge sent it, read loosely to be
// checked: every part it has, as it has it.
type Granted struct {
	Behavior string
	// Message is a deny's message ("" when it has none, or it is no
	// string).
	Message string
	// Questions are updatedInput.questions as sent (nil when absent).
	Questions json.RawMessage
	// Answers are updatedInput.answers, in the order sent, each value as
	// sent; AnswersSent says whether there was an answers object at all.
	Answers     []Keyed
	AnswersSent bool
	AnswersRaw  json.RawMessage // updatedInput.answers as sent, whatever it is
}

// Keyed is one member of a JSON object, its value as sent.
type Keyed struct {
	Key   string
	Value json.RawMessage
}

// String is the value when it is a JSON string.
func (k Keyed) String() (string, bool) {
	var s string
	if len(k.Value) == 0 || k.Value[0] != '"' || json.Unmarshal(k.Value, &s) != nil {
		return "", false
	}
	return s, true
}

// Answer is the answer keyed by question text q: the first member with that
// key (ok false when none has it).
func (g Granted) Answer(q string) (Keyed, bool) {
	for _, a := range g.Answers {
		if a.Key == q {
			return a, true
		}
	}
	return Keyed{}, false
}

// ReadGranted reads a permission result loosely.
func ReadGranted(raw json.RawMessage) Granted {
	var m struct {
		Behavior     json.RawMessage `json:"behavior"`
		Message      json.RawMessage `json:"message"`
		UpdatedInput struct {
			Questions json.RawMessage `json:"questions"`
			Answers   json.RawMessage `json:"answers"`
		} `json:"updatedInput"`
	}
	var g Granted
	if json.Unmarshal(raw, &m) != nil {
		return g
	}
	_ = json.Unmarshal(m.Behavior, &g.Behavior)
	_ = json.Unmarshal(m.Message, &g.Message)
	g.Questions = m.UpdatedInput.Questions
	if a := bytes.TrimSpace(m.UpdatedInput.Answers); len(a) > 0 {
		g.AnswersRaw = a
		if a[0] == '{' {
			g.AnswersSent, g.Answers = true, members(a)
		}
	}
	return g
}

// members are a JSON object's members in order.
func members(obj []byte) []Keyed {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	var out []Keyed
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return out
		}
		k, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return out
		}
		out = append(out, Keyed{Key: k, Value: v})
	}
	return out
}

// Asked are the questions of an AskUserQuestion input ({"questions": […]})
// or, mcp true, of an ask_user call's arguments (one question, the object
// itself), read loosely: what a question lacks is zero.
func Asked(input json.RawMessage) (qs []Question, mcp bool) {
	var in struct {
		Questions []json.RawMessage `json:"questions"`
		Question  *string           `json:"question"`
	}
	if json.Unmarshal(input, &in) != nil {
		return nil, false
	}
	if len(in.Questions) == 0 && in.Question != nil {
		var q Question
		_ = json.Unmarshal(input, &q)
		return []Question{q}, true
	}
	for _, raw := range in.Questions {
		var q Question
		if json.Unmarshal(raw, &q) != nil {
			// A question of the wrong shape keeps its text, if it has one.
			var t struct {
				Question string `json:"question"`
			}
			_ = json.Unmarshal(raw, &t)
			q = Question{Question: t.Question}
		}
		qs = append(qs, q)
	}
	return qs, false
}

// ToolResult is a tool_result block read loosely: its text (its content
// string, or its text blocks joined by newlines) and whether it is an
// error.
func ToolResult(block json.RawMessage) (text string, isError bool) {
	var b ContentBlock
	if json.Unmarshal(block, &b) != nil {
		return "", false
	}
	var s string
	if json.Unmarshal(b.Content, &s) == nil {
		return s, b.IsError != nil && *b.IsError
	}
	var blocks []ContentBlock
	_ = json.Unmarshal(b.Content, &blocks)
	var texts []string
	for _, c := range blocks {
		if c.Type == "text" {
			texts = append(texts, c.Text)
		}
	}
	return strings.Join(texts, "\n"), b.IsError != nil && *b.IsError
}
