package protocol

import (
	"slices"
	"testing"

	"github.com/tidwall/gjson"
)

// TestDecodeCaptures decodes every line of the captures with the typed
// decoders and checks what the real CLI wrote.
func TestDecodeCaptures(t *testing.T) {
	for _, f := range []string{"sdk-ask-allow.jsonl", "sdk-ask-deny.jsonl", "sdk-ask-deny-interrupt.jsonl"} {
		t.Run(f, func(t *testing.T) {
			var init SystemInit
			var results []gjson.Result
			var lastText string
			for i, raw := range readCapture(t, f) {
				l, err := DecodeLine(i+1, raw)
				if err != nil {
					t.Fatal(err)
				}
				switch l.Type {
				case TypeSystem:
					if err := l.Decode(&init); err != nil {
						t.Fatal(err)
					}
				case TypeUser:
					var in UserInput
					if err := l.Decode(&in); err != nil {
						t.Fatal(err)
					}
					var blocks []ContentBlock
					if json := in.Message.Content; len(json) > 0 && json[0] == '[' {
						if err := l.Decode(&struct {
							Message struct {
								Content *[]ContentBlock `json:"content"`
							} `json:"message"`
						}{struct {
							Content *[]ContentBlock `json:"content"`
						}{&blocks}}); err != nil {
							t.Fatal(err)
						}
					}
					for _, b := range blocks {
						lastText = b.Text
					}
				case TypeResult:
					results = append(results, gjson.ParseBytes(l.Raw))
				case TypeControlRequest:
					cr, sub, err := ParseControlRequest(l)
					if err != nil {
						t.Fatal(err)
					}
					if sub == SubtypeCanUseTool {
						var c CanUseTool
						if err := l.Decode(&struct {
							Request *CanUseTool `json:"request"`
						}{&c}); err != nil {
							t.Fatal(err)
						}
						in, err := ParseAskInput(c.Input)
						if err != nil || c.ToolName != ToolAskUserQuestion || !c.RequiresUserInteraction || len(in.Questions) != 2 || !in.Questions[1].MultiSelect {
							t.Errorf("can_use_tool %+v (%v), request %s", c, err, cr.RequestID)
						}
					}
				case TypeControlResponse:
					if _, err := ParseControlResponse(l); err != nil {
						t.Fatal(err)
					}
				}
			}
			if init.ClaudeCodeVersion != CLIVersion || !slices.Contains(init.Tools, ToolAskUserQuestion) {
				t.Errorf("system/init version %q, tools %v", init.ClaudeCodeVersion, init.Tools)
			}
			if len(results) != 1 {
				t.Fatalf("%d results", len(results))
			}
			r := results[0]
			switch f {
			case "sdk-ask-allow.jsonl":
				if r.Get("subtype").String() != ResultSuccess || r.Get("result").String() != "Done." || len(r.Get("permission_denials").Array()) != 0 {
					t.Errorf("result %s", r.Raw)
				}
			case "sdk-ask-deny.jsonl":
				if r.Get("subtype").String() != ResultSuccess || r.Get("permission_denials.0.tool_name").String() != ToolAskUserQuestion {
					t.Errorf("result %s", r.Raw)
				}
			case "sdk-ask-deny-interrupt.jsonl":
				if r.Get("subtype").String() != ResultErrorDuringExecution || r.Get("terminal_reason").String() != "aborted_tools" || r.Get("result").Exists() || len(r.Get("errors").Array()) != 1 || lastText != InterruptedForToolUseText {
					t.Errorf("result %s, last text %q", r.Raw, lastText)
				}
			}
		})
	}
}

func TestPromptText(t *testing.T) {
	tests := []struct{ content, want string }{
		{`"Set up storage."`, "Set up storage."},
		{`[{"type":"text","text":"one"},{"type":"image","source":{}},{"type":"text","text":"two"}]`, "one\ntwo"},
		{`null`, ""},
	}
	for _, tt := range tests {
		if got := PromptText([]byte(tt.content)); got != tt.want {
			t.Errorf("PromptText(%s) = %q, want %q", tt.content, got, tt.want)
		}
	}
}
