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
	// Field by field: one of the wrong type leaves the others read.
	var m, in map[string]json.RawMessage
	var g Granted
	if json.Unmarshal(raw, &m) != nil {
		return g
	}
	_ = json.Unmarshal(m["behavior"], &g.Behavior)
	_ = json.Unmarshal(m["message"], &g.Message)
	_ = json.Unmarshal(m["updatedInput"], &in)
	g.Questions = in["questions"]
	if a := bytes.TrimSpace(in["answers"]); len(a) > 0 {
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
		Questions []json.RawMessage
		Question  json.RawMessage
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(input, &m) != nil {
		return nil, false
	}
	_ = json.Unmarshal(m["questions"], &in.Questions)
	in.Question = m["question"]
	if len(in.Questions) == 0 && in.Question != nil {
		return []Question{looseQuestion(input)}, true
	}
	for _, raw := range in.Questions {
		qs = append(qs, looseQuestion(raw))
	}
	return qs, false
}

// looseQuestion is a question read field by field: one of the wrong type
// is left zero, the others read.
func looseQuestion(raw json.RawMessage) Question {
	var q Question
	if json.Unmarshal(raw, &q) == nil {
		return q
	}
	var m map[string]json.RawMessage
	_ = json.Unmarshal(raw, &m)
	q = Question{}
	_ = json.Unmarshal(m["question"], &q.Question)
	_ = json.Unmarshal(m["header"], &q.Header)
	_ = json.Unmarshal(m["multiSelect"], &q.MultiSelect)
	var opts []json.RawMessage
	_ = json.Unmarshal(m["options"], &opts)
	for _, o := range opts {
		var om map[string]json.RawMessage
		_ = json.Unmarshal(o, &om)
		var opt Option
		_ = json.Unmarshal(om["label"], &opt.Label)
		_ = json.Unmarshal(om["description"], &opt.Description)
		q.Options = append(q.Options, opt)
	}
	return q
}

// ToolResult is a tool_result block read loosely: its text (its content
// string, or its text blocks joined by newlines) and whether it is an
// error.
func ToolResult(block json.RawMessage) (text string, isError bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(block, &m) != nil {
		return "", false
	}
	_ = json.Unmarshal(m["is_error"], &isError)
	var s string
	if json.Unmarshal(m["content"], &s) == nil {
		return s, isError
	}
	var blocks []json.RawMessage
	_ = json.Unmarshal(m["content"], &blocks)
	var texts []string
	for _, raw := range blocks {
		var c struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if json.Unmarshal(raw, &c) == nil && c.Type == "text" {
			texts = append(texts, c.Text)
		}
	}
	return strings.Join(texts, "\n"), isError
}
