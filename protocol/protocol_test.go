package protocol

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const captures = "../testdata/captures/claude-code-2.1.330"

func TestDecoderLines(t *testing.T) {
	in := strings.Join([]string{
		`{"type":"user","message":{"role":"user","content":"hi"}}`,
		``,
		`   `,
		`{"type":"control_request","request_id":"r1","request":{"subtype":"initialize"}}`,
		`{"type":"result","subtype":"success"}`,
	}, "\n") // no trailing newline: the last line still counts
	d := NewDecoder(strings.NewReader(in))
	var got []string
	var lines []int
	for {
		l, err := d.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("Next() error = %v", err)
		}
		got = append(got, l.Type+"/"+l.Subtype)
		lines = append(lines, l.N)
	}
	if diff := cmp.Diff([]string{"user/", "control_request/", "result/success"}, got); diff != "" {
		t.Errorf("types (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]int{1, 4, 5}, lines); diff != "" {
		t.Errorf("line numbers (-want +got):\n%s", diff)
	}
}

func TestDecoderErrors(t *testing.T) {
	tests := []struct {
		name, line string
		wantField  string
		wantText   string
	}{
		{"not json", `this is not json`, "", "line 1: invalid JSON: invalid character 'h' in literal true (expecting 'r') (at byte 2)"},
		{"truncated", `{"type":"user"`, "", "line 1: invalid JSON: unexpected end of JSON input (at byte 14)"},
		{"array", `[1,2]`, "", "line 1: want a JSON object, got array"},
		{"no type", `{"subtype":"x"}`, "type", `line 1: field "type": missing`},
		{"type number", `{"type":7}`, "type", `line 1: field "type": want string, got number`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewDecoder(strings.NewReader(tt.line + "\n")).Next()
			var le *LineError
			if !errors.As(err, &le) {
				t.Fatalf("Next() error = %v, want *LineError", err)
			}
			if le.Field != tt.wantField {
				t.Errorf("Field = %q, want %q", le.Field, tt.wantField)
			}
			if err.Error() != tt.wantText {
				t.Errorf("Error() = %q, want %q", err.Error(), tt.wantText)
			}
		})
	}
}

func TestDecoderGoesOnAfterBadLine(t *testing.T) {
	d := NewDecoder(strings.NewReader("garbage\n{\"type\":\"user\"}\n"))
	if _, err := d.Next(); err == nil {
		t.Fatal("first Next() = nil error, want one")
	}
	l, err := d.Next()
	if err != nil || l.Type != "user" || l.N != 2 {
		t.Fatalf("second Next() = %+v, %v; want user on line 2", l, err)
	}
}

func TestDecoderLongLine(t *testing.T) {
	d := newDecoder(strings.NewReader(`{"type":"user","x":"`+strings.Repeat("a", 300<<10)+"\"}\n{\"type\":\"result\"}\n"), 100<<10)
	_, err := d.Next()
	if !errors.Is(err, ErrLineTooLong) {
		t.Fatalf("Next() error = %v, want ErrLineTooLong", err)
	}
	l, err := d.Next()
	if err != nil || l.Type != "result" || l.N != 2 {
		t.Fatalf("after a long line Next() = %+v, %v; want result on line 2", l, err)
	}
}

func TestDecoderSkipNonJSON(t *testing.T) {
	d := NewDecoder(strings.NewReader("[SandboxDebug] hello\n{\"type\":\"user\"}\n")).SkipNonJSON()
	l, err := d.Next()
	if err != nil || l.Type != "user" {
		t.Fatalf("Next() = %+v, %v; want the user line", l, err)
	}
}

func TestParseControlResponseErrors(t *testing.T) {
	tests := []struct{ name, line, want string }{
		{"no response", `{"type":"control_response"}`, `line 1: field "response": want object, got nothing`},
		{"response string", `{"type":"control_response","response":"ok"}`, `line 1: field "response": want object, got string`},
		{"bad subtype", `{"type":"control_response","response":{"subtype":"ok","request_id":"r"}}`, `line 1: field "response.subtype": want "success" or "error", got "ok"`},
		{"no request id", `{"type":"control_response","response":{"subtype":"success"}}`, `line 1: field "response.request_id": missing`},
		{"request id number", `{"type":"control_response","response":{"subtype":"success","request_id":5}}`, `line 1: field "response.request_id": want string, got number`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := DecodeLine(1, []byte(tt.line))
			if err != nil {
				t.Fatal(err)
			}
			_, err = ParseControlResponse(l)
			if err == nil || err.Error() != tt.want {
				t.Errorf("ParseControlResponse() error = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestParsePermissionResult(t *testing.T) {
	tests := []struct{ name, payload, wantErr string }{
		{"allow", `{"behavior":"allow","updatedInput":{"questions":[]}}`, ""},
		{"allow bare", `{"behavior":"allow"}`, ""},
		{"deny", `{"behavior":"deny","message":"no","interrupt":true}`, ""},
		{"deny no message", `{"behavior":"deny"}`, `line 3: field "response.response.message": missing: a deny needs a message`},
		{"maybe", `{"behavior":"maybe"}`, `line 3: field "response.response.behavior": want "allow" or "deny", got "maybe"`},
		{"no behavior", `{}`, `line 3: field "response.response.behavior": missing (want "allow" or "deny")`},
		{"updatedInput string", `{"behavior":"allow","updatedInput":"x"}`, `line 3: field "response.response.updatedInput": want object, got string`},
		{"message number", `{"behavior":"deny","message":3}`, `line 3: field "response.response.message": want string, got number`},
		{"not object", `[]`, `line 3: field "response.response": want a permission result object, got array`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParsePermissionResult(3, json.RawMessage(tt.payload))
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.wantErr {
				t.Errorf("ParsePermissionResult() error = %q, want %q", got, tt.wantErr)
			}
		})
	}
}

func TestParseAskInput(t *testing.T) {
	tests := []struct{ name, in, wantErr string }{
		{"ok", `{"questions":[],"answers":{"Q?":"A","M?":["x","y"]}}`, ""},
		{"no questions", `{"answers":{"Q?":"A"}}`, "field \"questions\": The required parameter `questions` is missing"},
		{"questions object", `{"questions":{}}`, "field \"questions\": The parameter `questions` type is expected as `array` but provided as `object`"},
		{"answers array", `{"questions":[],"answers":[]}`, "field \"answers\": The parameter `answers` type is expected as `object` but provided as `array`"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in, err := ParseAskInput(json.RawMessage(tt.in))
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.wantErr {
				t.Fatalf("ParseAskInput() error = %q, want %q", got, tt.wantErr)
			}
			if err == nil && tt.name == "ok" && in.Answers["M?"] != "x, y" {
				t.Errorf("array answer = %q, want it joined as %q", in.Answers["M?"], "x, y")
			}
		})
	}
}

func TestEffectiveInput(t *testing.T) {
	orig := json.RawMessage(`{"questions":[1]}`)
	for _, tt := range []struct{ updated, want string }{
		{``, `{"questions":[1]}`},
		{`null`, `{"questions":[1]}`},
		{`{}`, `{"questions":[1]}`},
		{`{"answers":{}}`, `{"answers":{}}`},
	} {
		r := PermissionResult{Behavior: "allow", UpdatedInput: json.RawMessage(tt.updated)}
		if got := string(r.EffectiveInput(orig)); got != tt.want {
			t.Errorf("EffectiveInput(updated=%s) = %s, want %s", tt.updated, got, tt.want)
		}
	}
}

var formatQs = []Question{
	{Question: "How should I format the output?", Header: "Format", Options: []Option{{Label: "Summary", Description: "Brief overview"}, {Label: "Detailed", Description: "Full explanation"}}},
	{Question: "Which sections?", Header: "Sections", MultiSelect: true, Options: []Option{{Label: "Intro", Description: "a"}, {Label: "Body", Description: "b"}, {Label: "Outro", Description: "c"}}},
}

func TestAskResultText(t *testing.T) {
	const neutralTail = ". Read the answers carefully — they may request clarification, changes, or that you not proceed — and follow what they actually say."
	tests := []struct {
		name    string
		answers map[string]AnswerValue
		ann     map[string]Annotation
		want    string
	}{
		{"labels", map[string]AnswerValue{"How should I format the output?": "Summary", "Which sections?": "Intro, Outro"}, nil,
			`Your questions have been answered: "How should I format the output?"="Summary", "Which sections?"="Intro, Outro". You can now continue with these answers in mind.`},
		{"one of two", map[string]AnswerValue{"Which sections?": "Body"}, nil,
			`Your questions have been answered: "Which sections?"="Body". You can now continue with these answers in mind.`},
		{"free text", map[string]AnswerValue{"How should I format the output?": "As a haiku"}, nil,
			`The user answered: "How should I format the output?"="As a haiku"` + neutralTail},
		{"multi joined wrongly", map[string]AnswerValue{"Which sections?": "Intro,Outro"}, nil,
			`The user answered: "Which sections?"="Intro,Outro"` + neutralTail},
		{"notes", map[string]AnswerValue{"How should I format the output?": "Summary"}, map[string]Annotation{"How should I format the output?": {Notes: "short please"}},
			`The user answered: "How should I format the output?"="Summary" notes: short please` + neutralTail},
		{"notes only", map[string]AnswerValue{"How should I format the output?": "(notes only)"}, map[string]Annotation{"How should I format the output?": {Notes: "n"}},
			`The user answered: "How should I format the output?"=(no option selected) notes: n` + neutralTail},
		{"keyed by index", map[string]AnswerValue{"q_0": "Summary"}, nil, AskNotAnsweredText},
		{"empty", nil, nil, AskNotAnsweredText},
		{"blank", map[string]AnswerValue{"How should I format the output?": ""}, nil, AskNotAnsweredText},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := AskResultText(formatQs, tt.answers, tt.ann); got != tt.want {
				t.Errorf("AskResultText() =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

// TestTextsMatchCaptures checks the texts against what the real CLI wrote in
// the fixture captures.
func TestTextsMatchCaptures(t *testing.T) {
	results := map[string]string{}
	for _, f := range []string{"sdk-ask-allow.jsonl", "sdk-ask-deny.jsonl", "sdk-ask-deny-interrupt.jsonl"} {
		for _, msg := range readCapture(t, f) {
			var m struct {
				Type    string `json:"type"`
				Message struct {
					Content json.RawMessage `json:"content"`
				} `json:"message"`
			}
			json.Unmarshal(msg, &m)
			var blocks []struct {
				Type    string `json:"type"`
				Content string `json:"content"`
				Text    string `json:"text"`
			}
			if m.Type != "user" || json.Unmarshal(m.Message.Content, &blocks) != nil {
				continue
			}
			for _, b := range blocks {
				results[f] += b.Content + b.Text + "|"
			}
		}
	}
	allow := AskResultText(formatQs, map[string]AnswerValue{"How should I format the output?": "Summary", "Which sections?": AnswerValue(JoinLabels([]string{"Intro", "Outro"}))}, nil)
	want := map[string]string{
		"sdk-ask-allow.jsonl":          allow + "|",
		"sdk-ask-deny.jsonl":           "User skipped this question|",
		"sdk-ask-deny-interrupt.jsonl": DenyInterruptText + "|" + InterruptedForToolUseText + "|",
	}
	if diff := cmp.Diff(want, results); diff != "" {
		t.Errorf("tool_result texts differ from the captures (-want +got):\n%s", diff)
	}
}

func readCapture(t *testing.T, name string) []json.RawMessage {
	t.Helper()
	f, err := os.Open(filepath.Join(captures, name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []json.RawMessage
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var rec struct {
			Msg json.RawMessage `json:"msg"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out = append(out, rec.Msg)
	}
	return out
}

func FuzzDecoder(f *testing.F) {
	f.Add([]byte(`{"type":"control_response","response":{"subtype":"success","request_id":"r","response":{"behavior":"allow","updatedInput":{"questions":[],"answers":{"a":["x"]}}}}}` + "\n"))
	f.Add([]byte("garbage\n\n{\"type\":1}\n[]\n"))
	f.Add([]byte(`{"type":"control_request","request_id":"1","request":{"subtype":"can_use_tool","input":{}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		d := NewDecoder(strings.NewReader(string(data)))
		for i := 0; i < 1000; i++ {
			l, err := d.Next()
			if err == io.EOF {
				return
			}
			var le *LineError
			if err != nil && !errors.As(err, &le) {
				t.Fatalf("Next() error %v is not a *LineError", err)
			}
			if err != nil {
				continue
			}
			switch l.Type {
			case TypeControlResponse:
				if cr, err := ParseControlResponse(l); err == nil && cr.Response.Subtype == SubtypeSuccess {
					if pr, err := ParsePermissionResult(l.N, cr.Response.Response); err == nil && pr.Allow() {
						if in, err := ParseAskInput(pr.EffectiveInput(json.RawMessage(`{"questions":[]}`))); err == nil {
							_ = AskResultText(in.Questions, in.Answers, in.Annotations)
						}
					}
				}
			case TypeControlRequest:
				_, _, _ = ParseControlRequest(l)
			}
		}
	})
}
