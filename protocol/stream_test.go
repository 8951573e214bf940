package protocol

import (
	"testing"
)

// TestDecodeCaptures decodes every line of the captures with the typed
// structs and checks what the real CLI wrote.
func TestDecodeCaptures(t *testing.T) {
	for _, f := range []string{"sdk-ask-allow.jsonl", "sdk-ask-deny.jsonl", "sdk-ask-deny-interrupt.jsonl"} {
		t.Run(f, func(t *testing.T) {
			var init SystemInit
			var results []ResultMessage
			var toolResults []string
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
				case TypeAssistant:
					var m AssistantMessage
					if err := l.Decode(&m); err != nil {
						t.Fatal(err)
					}
				case TypeUser:
					var m UserMessage
					if err := l.Decode(&m); err != nil {
						// The SDK side's prompt has string content.
						var in UserInput
						if err2 := l.Decode(&in); err2 != nil {
							t.Fatal(err)
						}
						continue
					}
					for _, b := range m.Message.Content {
						toolResults = append(toolResults, b.ResultText()+b.Text)
					}
				case TypeResult:
					var r ResultMessage
					if err := l.Decode(&r); err != nil {
						t.Fatal(err)
					}
					results = append(results, r)
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
			if init.ClaudeCodeVersion != CLIVersion || !init.HasTool(ToolAskUserQuestion) {
				t.Errorf("system/init version %q, AskUserQuestion offered %v", init.ClaudeCodeVersion, init.HasTool(ToolAskUserQuestion))
			}
			if len(results) != 1 || len(toolResults) == 0 {
				t.Fatalf("%d results, %d tool results", len(results), len(toolResults))
			}
			r := results[0]
			switch f {
			case "sdk-ask-allow.jsonl":
				if r.Subtype != ResultSuccess || r.Result == nil || *r.Result != "Done." || len(r.PermissionDenials) != 0 {
					t.Errorf("result %+v", r)
				}
			case "sdk-ask-deny.jsonl":
				if r.Subtype != ResultSuccess || len(r.PermissionDenials) != 1 || r.PermissionDenials[0].ToolName != ToolAskUserQuestion {
					t.Errorf("result %+v", r)
				}
			case "sdk-ask-deny-interrupt.jsonl":
				if r.Subtype != ResultErrorDuringExecution || r.TerminalReason != "aborted_tools" || r.Result != nil || len(r.Errors) != 1 || toolResults[len(toolResults)-1] != InterruptedForToolUseText {
					t.Errorf("result %+v, tool results %q", r, toolResults)
				}
			}
		})
	}
}
