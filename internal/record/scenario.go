package record

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/askctl/askctl/fakeclaude"
	"github.com/askctl/askctl/internal/clip"
	"github.com/askctl/askctl/protocol"
	"github.com/askctl/askctl/scenarios"
	"github.com/askctl/askctl/transcript"
	"github.com/rogpeppe/go-internal/txtar"
	"github.com/tidwall/gjson"
)

// Redacted replaces every secret in a recording.
const Redacted = "[REDACTED]"

var (
	// Values that look like credentials wherever they appear.
	secretValue = regexp.MustCompile(`sk-ant-[A-Za-z0-9_\-]{8,}|sk-[A-Za-z0-9_\-]{20,}|(?i:bearer|basic)\s+[A-Za-z0-9._~+/\-=]{8,}|gh[pousr]_[A-Za-z0-9]{20,}|xox[abposr]-[A-Za-z0-9\-]{10,}|eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}|\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`)
	// "Authorization: …" headers, and key=value pairs whose key says secret,
	// inside any string (a command line, a URL, a log line).
	secretPair = regexp.MustCompile(`(?i)(\b(?:authorization|proxy-authorization|x-api-key)\s*:\s*)(?:(?:bearer|basic|token|digest)\s+)?[^\s"'\\,;]+|(\b(?:password|passwd|pwd|secret|token|access_token|api_key|apikey|client_secret)\s*=\s*)[^\s&"'\\;]+`)
	// JSON members whose names say they hold a secret: "key": "value".
	secretMember = regexp.MustCompile(`(?i)("(?:[a-z_\-]*(?:api[_\-]?key|token|secret|password|passwd|authorization|auth[_\-]?header|cookie|credential)[a-z_\-]*)"\s*:\s*)"(?:[^"\\]|\\.)*"`)
)

// Redact removes secrets from one line of JSON.
func Redact(line []byte) []byte {
	out := secretMember.ReplaceAllFunc(line, func(m []byte) []byte {
		sub := secretMember.FindSubmatch(m)
		// Keep names and sources such as "apiKeySource":"ANTHROPIC_API_KEY".
		if bytes.Contains(bytes.ToLower(sub[1]), []byte("source")) {
			return m
		}
		return append(append([]byte(nil), sub[1]...), []byte(`"`+Redacted+`"`)...)
	})
	out = secretValue.ReplaceAll(out, []byte(Redacted))
	return secretPair.ReplaceAllFunc(out, func(m []byte) []byte {
		sub := secretPair.FindSubmatch(m)
		prefix := sub[1]
		if len(prefix) == 0 {
			prefix = sub[2]
		}
		return append(append([]byte(nil), prefix...), Redacted...)
	})
}

func validJSON(b []byte) bool { return len(b) > 0 && b[0] == '{' && gjson.ValidBytes(b) }

// Scenario turns a recording into a scenario archive: a header with the CLI
// version, steps derived from the messages, and the recording itself. It
// always returns the archive; problem says why its steps could not be
// derived or do not validate, in which case the archive keeps the wire
// section and says so in its comment.
func Scenario(name, out string, command []string, recs []transcript.Record) (data []byte, problem error) {
	if name == "" {
		name = strings.TrimSuffix(filepath.Base(out), filepath.Ext(out))
	}
	version := ""
	for _, r := range recs {
		if v := gjson.GetBytes(r.Msg, "claude_code_version"); r.Dir == transcript.FromCLI && v.Exists() {
			version = v.String()
			break
		}
	}
	route, prompt := scenarios.RouteSDK, (*string)(nil)
	if len(command) > 1 {
		if fl, err := fakeclaude.ParseArgs(command[1:]); err == nil && fl.PrintMode() {
			// claude -p: the prompt is an argument (or stdin's text), and
			// questions go to MCP servers.
			route = scenarios.RouteMCP
			p := fl.Prompt
			if p == "" {
				p = stdinText(recs)
			}
			prompt = &p
		}
	}
	steps, problem := steps(recs, prompt)
	hdr, _ := json.Marshal(map[string]string{"name": name, "route": route, "cli_version": version, "origin": scenarios.Recorded})
	var sb, wb bytes.Buffer
	for _, s := range steps {
		b, err := json.Marshal(s)
		if err != nil {
			problem = cmp.Or(problem, err)
			continue
		}
		sb.Write(b)
		sb.WriteByte('\n')
	}
	ww := transcript.NewWriter(&wb) // every line valid UTF-8 JSON
	for _, r := range recs {
		_ = ww.Write(r)
	}
	seen := "claude_code_version " + version
	if version == "" {
		seen = "The command announced no claude_code_version (it wrote no system/init)"
	}
	comment := fmt.Sprintf("Recorded by askctl record on %s from: %s\n%s. Steps are derived from the wire section below, which holds\nevery line both ways as captured (secrets redacted, local paths as ${CWD} and ${HOME}).\n",
		time.Now().UTC().Format("2006-01-02"), strings.Join(command, " "), seen)
	build := func() []byte {
		return txtar.Format(&txtar.Archive{Comment: []byte(comment), Files: []txtar.File{
			{Name: "scenario.json", Data: append(hdr, '\n')},
			{Name: "steps.jsonl", Data: sb.Bytes()},
			{Name: "wire.jsonl", Data: wb.Bytes()},
		}})
	}
	if problem == nil {
		if _, err := scenarios.Parse(out, build()); err != nil {
			problem = fmt.Errorf("the derived steps do not make a valid scenario: %w", err)
		}
	}
	if problem != nil {
		comment += "\nThis recording does not replay: " + clip.String(problem.Error(), 2000) + "\n"
	}
	return build(), problem
}

// Steps derives scenario steps from a recording: prompts from the SDK side's
// user messages, text and tool calls from the assistant's, and the person's
// part from the control_responses (an interrupt becomes cancel_after; a
// request never answered before the CLI ended becomes exit_after).
func Steps(recs []transcript.Record) ([]scenarios.StepLine, error) { return steps(recs, nil) }

// stdinText is what a print-mode session read on stdin: its prompt, when no
// argument gave one.
func stdinText(recs []transcript.Record) string {
	var lines []string
	for _, r := range recs {
		switch {
		case r.Dir == transcript.ToCLI:
			var s string
			if json.Unmarshal(r.Msg, &s) == nil {
				lines = append(lines, s)
			} else {
				lines = append(lines, string(r.Msg))
			}
		case r.Event == transcript.EventNote && r.Kind == "non-json "+transcript.ToCLI:
			lines = append(lines, r.Text)
		}
	}
	return strings.Join(lines, "\n")
}

// steps derives the steps; printPrompt, for a print-mode session (claude
// -p), is its prompt, and its MCP tool calls become mcp steps that carry
// what the server returned.
func steps(recs []transcript.Record, printPrompt *string) ([]scenarios.StepLine, error) {
	var steps []scenarios.StepLine
	if printPrompt != nil {
		steps = append(steps, scenarios.StepLine{Prompt: printPrompt})
	}
	byToolUse := map[string]int{} // tool_use id → index in steps
	byRequest := map[string]int{} // request_id → index in steps
	askedAt := map[int]time.Time{}
	answered := map[int]bool{}
	cwd := ""
	var end time.Time
	lastExit := 0
	for _, r := range recs {
		if !r.T.IsZero() {
			end = r.T
		}
		if r.Event == transcript.EventExit && r.Code != nil {
			lastExit = *r.Code
		}
		if !r.IsWire() {
			continue
		}
		m := gjson.ParseBytes(r.Msg)
		typ := m.Get("type").String()
		switch {
		case r.Dir == transcript.ToCLI && typ == protocol.TypeUser:
			text := protocol.PromptText(json.RawMessage(m.Get("message.content").Raw))
			steps = append(steps, scenarios.StepLine{Prompt: &text})
		case r.Dir == transcript.FromCLI && typ == protocol.TypeSystem && m.Get("subtype").String() == protocol.SubtypeInit:
			cwd = m.Get("cwd").String()
		case r.Dir == transcript.FromCLI && typ == protocol.TypeAssistant:
			for _, b := range m.Get("message.content").Array() {
				switch b.Get("type").String() {
				case "text":
					t := b.Get("text").String()
					steps = append(steps, scenarios.StepLine{Text: &t})
				case "tool_use":
					id := b.Get("id").String()
					s := scenarios.StepLine{ID: id}
					if server, tool, ok := scenarios.SplitMCPName(b.Get("name").String()); ok && printPrompt != nil {
						s.MCP = &scenarios.MCPCall{Server: server, Tool: tool, Input: json.RawMessage(b.Get("input").Raw)}
						if tool == "ask_user" {
							s.MCP.Tool = ""
						}
					} else if b.Get("name").String() == protocol.ToolAskUserQuestion {
						s.Ask = &scenarios.AskLine{}
						if err := json.Unmarshal([]byte(b.Get("input.questions").Raw), &s.Ask.Questions); err != nil {
							return nil, fmt.Errorf("AskUserQuestion %s: questions: %w", id, err)
						}
					} else {
						s.Tool = &scenarios.ToolCall{Name: b.Get("name").String(), Input: json.RawMessage(b.Get("input").Raw)}
					}
					byToolUse[id] = len(steps)
					steps = append(steps, s)
				}
			}
		case r.Dir == transcript.FromCLI && typ == protocol.TypeControlRequest && m.Get("request.subtype").String() == protocol.SubtypeCanUseTool:
			i, ok := byToolUse[m.Get("request.tool_use_id").String()]
			if !ok {
				continue
			}
			byRequest[m.Get("request_id").String()] = i
			askedAt[i] = r.T
			if t := steps[i].Tool; t != nil {
				t.Request = requestExtras(m.Get("request"), cwd)
			}
		case r.Dir == transcript.ToCLI && typ == protocol.TypeControlResponse:
			i, ok := byRequest[m.Get("response.request_id").String()]
			if !ok || answered[i] {
				continue
			}
			answered[i] = true
			steps[i].User = userPart(r.Msg, steps[i].Tool != nil)
			if d := r.T.Sub(askedAt[i]); !r.T.IsZero() && !askedAt[i].IsZero() && d > time.Millisecond {
				steps[i].User.After = scenarios.Duration(d.Round(time.Millisecond))
			}
		case r.Dir == transcript.ToCLI && typ == protocol.TypeControlRequest && m.Get("request.subtype").String() == protocol.SubtypeInterrupt:
			for _, i := range byRequest {
				if !answered[i] {
					answered[i] = true
					d := scenarios.Duration(max(r.T.Sub(askedAt[i]).Round(time.Millisecond), time.Millisecond))
					steps[i].User = &scenarios.User{Silent: true}
					steps[i].CancelAfter = &d
				}
			}
		case r.Dir == transcript.FromCLI && typ == protocol.TypeUser:
			for _, b := range m.Get("message.content").Array() {
				if b.Get("type").String() != "tool_result" {
					continue
				}
				if i, ok := byToolUse[b.Get("tool_use_id").String()]; ok && steps[i].MCP != nil {
					steps[i].MCP.Result = serverResult(b, m)
					continue
				}
				if i, ok := byToolUse[b.Get("tool_use_id").String()]; ok && steps[i].Tool != nil && !b.Get("is_error").Bool() {
					out := b.Get("content").String()
					if out == protocol.BashNoOutputText {
						out = ""
					}
					steps[i].Tool.Output = out
					if tr := m.Get("tool_use_result"); tr.Exists() {
						steps[i].Tool.Result = json.RawMessage(tr.Raw)
					}
				}
			}
		}
	}
	for i := range steps {
		if (steps[i].Ask != nil || steps[i].Tool != nil) && !answered[i] {
			if _, asked := askedAt[i]; !asked {
				continue // the CLI never asked (no permission surface): nothing to answer
			}
			d := scenarios.Duration(max(end.Sub(askedAt[i]).Round(time.Millisecond), time.Millisecond))
			code := lastExit
			steps[i].User = &scenarios.User{Silent: true}
			steps[i].ExitAfter, steps[i].ExitCode = &d, &code
		}
	}
	if len(steps) == 0 || steps[0].Prompt == nil {
		return nil, fmt.Errorf("the recording has no prompt from the SDK side before the agent's first message")
	}
	return steps, nil
}

// serverResult is the tools/call result behind a recorded tool_result, as
// the server returned it: the content blocks (an error's text, which the
// CLI flattens, as one text block) and isError. A result the CLI made
// itself (the tool was missing or not allowed) has none.
func serverResult(block, msg gjson.Result) json.RawMessage {
	c := block.Get("content")
	if strings.HasPrefix(c.String(), "<tool_use_error>") || msg.Get(`tool_result_meta.0.permission_decision.decision`).String() == "reject" {
		return nil
	}
	content := c.Raw
	switch {
	case c.Type == gjson.String && block.Get("is_error").Bool():
		b, _ := json.Marshal([]map[string]string{{"type": "text", "text": c.String()}})
		content = string(b)
	case c.Type == gjson.String: // "(… completed with no output)"
		content = "[]"
	}
	// The server's _meta (its serverInfo, in the current protocol) is kept
	// in tool_use_result; the scripted server returns it again.
	var meta json.RawMessage
	if m := msg.Get("tool_use_result._meta"); m.Exists() {
		meta = json.RawMessage(m.Raw)
	}
	b, _ := json.Marshal(struct {
		Content json.RawMessage `json:"content"`
		IsError bool            `json:"isError,omitempty"`
		Meta    json.RawMessage `json:"_meta,omitempty"`
	}{json.RawMessage(content), block.Get("is_error").Bool(), meta})
	return b
}

// requestExtras keeps the can_use_tool fields a scenario's tool step carries,
// with the CLI's directory made portable.
func requestExtras(req gjson.Result, cwd string) json.RawMessage {
	var parts []string
	req.ForEach(func(k, v gjson.Result) bool {
		switch k.String() {
		case "subtype", "tool_name", "display_name", "input", "tool_use_id":
		default:
			parts = append(parts, fmt.Sprintf("%q:%s", k.String(), v.Raw))
		}
		return true
	})
	if len(parts) == 0 {
		return nil
	}
	s := "{" + strings.Join(parts, ",") + "}"
	if cwd != "" {
		s = strings.ReplaceAll(s, cwd, "${CWD}")
	}
	return json.RawMessage(s)
}

// userPart reads the person's part from a recorded control_response.
func userPart(msg json.RawMessage, tool bool) *scenarios.User {
	l, err := protocol.DecodeLine(0, msg)
	if err != nil {
		return nil
	}
	reply, _, err := protocol.ReadReply(l)
	if err != nil {
		// The CLI denies an invalid permission result; so does the step.
		reason := "invalid permission result: " + err.Error()
		return &scenarios.User{Skip: &reason}
	}
	return scenarios.UserOf(reply, tool)
}
