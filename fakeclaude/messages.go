package fakeclaude

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/askctl/askctl/internal/uuid"
	"github.com/askctl/askctl/protocol"
)

// obj is a JSON object that keeps its keys in the order written, so that
// fakeclaude's lines read like the real CLI's (which has a stable key order).
type obj []kv

type kv struct {
	k string
	v any
}

func (o obj) MarshalJSON() ([]byte, error) { return o.appendJSON(nil) }

// encode is json.Marshal(v), byte for byte, written in one pass where v is
// built of obj: json.Marshal would validate and compact what each nested
// obj's MarshalJSON returned again at every level above it.
func encode(v any) ([]byte, error) { return appendJSON(nil, v) }

func (o obj) appendJSON(b []byte) ([]byte, error) {
	b = append(b, '{')
	for i, f := range o {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = appendJSON(b, f.k); err != nil {
			return nil, err
		}
		b = append(b, ':')
		if b, err = appendJSON(b, f.v); err != nil {
			return nil, fmt.Errorf("field %s: %w", f.k, err)
		}
	}
	return append(b, '}'), nil
}

// appendArray writes v as a JSON array, each element by each; nil is null,
// as json.Marshal writes a nil slice.
func appendArray[T any](b []byte, v []T, each func([]byte, T) ([]byte, error)) ([]byte, error) {
	if v == nil {
		return append(b, "null"...), nil
	}
	b = append(b, '[')
	for i, e := range v {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = each(b, e); err != nil {
			return nil, err
		}
	}
	return append(b, ']'), nil
}

func appendJSON(b []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case obj:
		return v.appendJSON(b) // nil too: "{}", as its MarshalJSON
	case []obj:
		return appendArray(b, v, func(b []byte, e obj) ([]byte, error) { return e.appendJSON(b) })
	case []any:
		return appendArray(b, v, appendJSON)
	}
	x, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(b, x...), nil
}

// baseTools is the tool list of CLI 2.1.330's system/init in -p mode, without
// AskUserQuestion (which the CLI adds only when a permission prompt surface is
// configured, at index 1). The plan-mode tools are gated the same way.
var baseTools = []string{"Task", "Bash", "CronCreate", "CronDelete", "CronList", "Edit", "EnterPlanMode", "EnterWorktree", "ExitPlanMode", "ExitWorktree", "ListAgents", "Monitor", "NotebookEdit", "Read", "ReportFindings", "ScheduleWakeup", "SendMessage", "Skill", "TaskCreate", "TaskGet", "TaskList", "TaskStop", "TaskUpdate", "ToolSearch", "WebFetch", "WebSearch", "Workflow", "Write"}

var (
	slashCommands = []string{"debug", "code-review", "simplify", "batch", "doctor", "loop", "agents", "clear", "compact", "config", "context", "init", "mcp", "model", "usage"}
	agentNames    = []string{"claude", "Explore", "general-purpose", "Plan", "statusline-setup"}
	capabilities  = []string{"interrupt_receipt_v1", "interrupt_cancel_queued_v1", "ask_user_question_unanswered_v1", "msg_lifecycle_v1"}
)

// initResponse is the payload of the CLI's success response to initialize.
func (f *fake) initResponse() obj {
	return obj{
		{"commands", []obj{{{"name", "debug"}, {"description", "Debug this session"}, {"argumentHint", ""}, {"builtin", true}}}},
		{"agents", []obj{{{"name", "claude"}, {"description", "Catch-all for any task that doesn't fit a more specific agent"}}}},
		{"output_style", "default"},
		{"available_output_styles", []string{"default"}},
		{"user_output_styles_dir", f.home + "/.claude/output-styles"},
		{"models", []obj{{{"value", "default"}, {"resolvedModel", f.model}, {"displayName", "Default (recommended)"}, {"description", "fakeclaude plays a scenario; no model runs"}, {"supportsEffort", false}, {"supportedEffortLevels", []string{}}, {"supportsAdaptiveThinking", false}, {"supportsFastMode", false}, {"supportsAutoMode", false}, {"supportsThinkingOff", true}}}},
		{"account", obj{{"tokenSource", "none"}, {"apiKeySource", "ANTHROPIC_API_KEY"}, {"apiProvider", "firstParty"}}},
		{"pid", f.pid},
		{"claude_code_version", f.release.Version},
		{"current_permission_mode", f.flags.PermissionMode},
		{"hook_on_failure_supported", true},
		{"hooks_when_unanswered_kept", 0},
		{"other_hook_ask_outranks_host", true},
		{"feedback_mode", obj{{"kind", "disabled"}}},
		{"analytics_disabled", true},
		{"remote_control_auto_enable", false},
		{"remote_control_auto_connect_default", false},
		{"remote_control_available", false},
		{"remote_control_auto_on_by_default", false},
		{"ide_rc_auto_enable_gate", false},
		{"fast_mode_state", "off"},
		{"fast_mode_disabled_reason", "sdk_opt_in_required"},
		{"session_state", "idle"},
		{"capabilities", []string{"ui_surface_v1"}},
	}
}

func (f *fake) systemInit() obj {
	return obj{
		{"type", protocol.TypeSystem},
		{"subtype", protocol.SubtypeInit},
		{"cwd", f.cwd},
		{"session_id", f.sessionID},
		{"tools", f.tools()},
		{"mcp_servers", f.mcpServers()},
		{"model", f.model},
		{"permissionMode", f.flags.PermissionMode},
		{"slash_commands", slashCommands},
		{"terminal_slash_commands", []string{"doctor"}},
		{"apiKeySource", "ANTHROPIC_API_KEY"},
		{"claude_code_version", f.release.Version},
		{"output_style", "default"},
		{"agents", agentNames},
		{"skills", []string{"debug", "code-review", "simplify"}},
		{"plugins", []obj{}},
		{"capabilities", capabilities},
		{"analytics_disabled", true},
		{"product_feedback_disabled", true},
		{"served_by_anthropic", false},
		{"uuid", uuid.New()},
		{"memory_paths", obj{{"auto", f.home + "/.claude/projects/memory/"}}},
		{"original_cwd", f.cwd},
		{"additional_directories", []string{}},
		{"messaging_socket_path", "<messaging-socket-path>"},
		{"fast_mode_state", "off"},
		{"fast_mode_disabled_reason", "sdk_opt_in_required"},
		{"per_turn_effort_active", false},
		{"ultrathink_available", false},
		{"ultrathink_typed_raises", false},
		{"view_mode", "default"},
	}
}

// tools is the system/init tool list for the flags the agent was started with.
func (f *fake) tools() []string {
	var out []string
	for i, t := range baseTools {
		if i == 1 && f.askEnabled() {
			out = append(out, protocol.ToolAskUserQuestion)
		}
		if (t == "EnterPlanMode" || t == "ExitPlanMode") && !f.askEnabled() {
			continue
		}
		if f.flags.ToolAllowed(t) {
			out = append(out, t)
		}
	}
	return append(out, f.mcpTools()...)
}

func (f *fake) assistant(content obj) obj {
	return obj{
		{"type", protocol.TypeAssistant},
		{"message", obj{
			{"id", fmt.Sprintf("msg_%d", f.modelCalls)},
			{"type", "message"},
			{"role", "assistant"},
			{"model", f.model},
			{"content", []obj{content}},
			{"stop_reason", nil},
			{"stop_sequence", nil},
			{"usage", obj{{"input_tokens", 10}, {"output_tokens", 1}}},
			{"context_management", nil},
		}},
		{"parent_tool_use_id", nil},
		{"session_id", f.sessionID},
		{"uuid", uuid.New()},
		{"timestamp", f.timestamp()},
	}
}

func textBlock(text string) obj { return obj{{"type", "text"}, {"text", text}} }

func toolUseBlock(id, name string, input json.RawMessage) obj {
	return obj{{"type", "tool_use"}, {"id", id}, {"name", name}, {"input", input}}
}

// toolResult is the user message carrying one tool_result block. Keys differ
// by outcome exactly as in the CLI: AskUserQuestion allow has no is_error,
// denials carry is_error true, and other tools lead with tool_use_id.
type toolResult struct {
	toolUseID  string
	content    any   // a string, or content blocks (MCP results)
	isError    *bool // nil: no is_error key
	idFirst    bool  // tool_use_id first (other tools' results)
	useResult  any   // tool_use_result
	resultMeta any   // tool_result_meta; nil: no key
}

func (f *fake) toolResultMessage(r toolResult) obj {
	var block obj
	if r.idFirst {
		block = obj{{"tool_use_id", r.toolUseID}, {"type", "tool_result"}, {"content", r.content}}
		if r.isError != nil {
			block = append(block, kv{"is_error", *r.isError})
		}
	} else {
		block = obj{{"type", "tool_result"}, {"content", r.content}}
		if r.isError != nil {
			block = append(block, kv{"is_error", *r.isError})
		}
		block = append(block, kv{"tool_use_id", r.toolUseID})
	}
	m := obj{
		{"type", protocol.TypeUser},
		{"message", obj{{"role", "user"}, {"content", []obj{block}}}},
		{"parent_tool_use_id", nil},
		{"session_id", f.sessionID},
		{"uuid", uuid.New()},
		{"timestamp", f.timestamp()},
		{"tool_use_result", r.useResult},
	}
	if r.resultMeta != nil {
		m = append(m, kv{"tool_result_meta", r.resultMeta})
	}
	return m
}

func (f *fake) userText(text string) obj {
	return obj{
		{"type", protocol.TypeUser},
		{"message", obj{{"role", "user"}, {"content", []obj{textBlock(text)}}}},
		{"parent_tool_use_id", nil},
		{"session_id", f.sessionID},
		{"uuid", uuid.New()},
		{"timestamp", f.timestamp()},
	}
}

func decisionMeta(id, decision, source string, extra ...kv) []obj {
	pd := obj{{"decision", decision}, {"source", source}}
	pd = append(pd, extra...)
	return []obj{{{"id", id}, {"permission_decision", pd}}}
}

func rejectMeta(id, source string, extra ...kv) []obj {
	pd := obj{{"decision", "reject"}, {"source", source}}
	pd = append(pd, extra...)
	return []obj{{{"id", id}, {"non_execution_kind", "permission-rule"}, {"permission_decision", pd}}}
}

// denial is one entry of a result's permission_denials.
type denial struct {
	ToolName  string          `json:"tool_name"`
	ToolUseID string          `json:"tool_use_id"`
	ToolInput json.RawMessage `json:"tool_input"`
}

func (f *fake) usage() obj { return usageOf(f.turnCalls) }

// usageOf is the usage of n model calls.
func usageOf(n int) obj {
	in, out := 10*n, 11*n+1
	return obj{
		{"input_tokens", in},
		{"cache_creation_input_tokens", 0},
		{"cache_read_input_tokens", 0},
		{"output_tokens", out},
		{"output_tokens_details", obj{{"thinking_tokens", 0}}},
		{"server_tool_use", obj{{"web_search_requests", 0}, {"web_fetch_requests", 0}}},
		{"service_tier", "standard"},
		{"cache_creation", obj{{"ephemeral_1h_input_tokens", 0}, {"ephemeral_5m_input_tokens", 0}}},
		{"inference_geo", ""},
		{"iterations", []any{}},
		{"speed", "standard"},
		{"fallback_credit", nil},
	}
}

func (f *fake) modelUsage() obj {
	return obj{{f.model, obj{
		{"inputTokens", 10 * f.modelCalls},
		{"outputTokens", 11*f.modelCalls + 1},
		{"cacheReadInputTokens", 0},
		{"cacheCreationInputTokens", 0},
		{"webSearchRequests", 0},
		{"costUSD", 0},
		{"contextWindow", 200000},
		{"maxOutputTokens", 32000},
		{"thinkingTokens", 0},
		{"cacheCreationEphemeral5mInputTokens", 0},
		{"cacheCreationEphemeral1hInputTokens", 0},
		{"canonicalModel", f.model},
		{"provider", "firstParty"},
		{"costBasis", "list"},
	}}}
}

func subagentStats() obj {
	return obj{
		{"spawned", 0},
		{"requested", obj{{"background", 0}, {"foreground", 0}, {"unset", 0}}},
		{"started_in_background", 0},
		{"max_depth", 0},
		{"spawned_by_subagents", 0},
		{"completed", 0},
		{"failed", 0},
		{"killed", obj{{"parent", 0}, {"user", 0}, {"system", 0}}},
		{"refused", obj{{"depth_limit", 0}, {"concurrency_limit", 0}, {"budget", 0}}},
		{"by_type", obj{}},
	}
}

// result ends a turn. A turn aborted by an interrupt ends with
// error_during_execution: errors[] and no result text, as the SDKs require.
func (f *fake) result(aborted bool) obj {
	dur := int(time.Since(f.turnStart).Milliseconds())
	denials := f.denials
	if denials == nil {
		denials = []denial{}
	}
	m := obj{
		{"duration_api_ms", dur},
		{"stop_reason", map[bool]string{false: "end_turn", true: "tool_use"}[aborted]},
		{"session_id", f.sessionID},
		{"total_cost_usd", 0},
		{"usage", f.usage()},
		{"modelUsage", f.modelUsage()},
		{"permission_denials", denials},
		{"terminal_reason", map[bool]string{false: "completed", true: "aborted_tools"}[aborted]},
		{"fast_mode_state", "off"},
		{"fast_mode_disabled_reason", "sdk_opt_in_required"},
		{"subagent_stats", subagentStats()},
		{"safety_stops", 0},
		{"is_error", aborted},
	}
	if aborted {
		// The real CLI counts the interrupted tool round and the abort as turns.
		m = append(m,
			kv{"num_turns", f.turnCalls + 2},
			kv{"subtype", protocol.ResultErrorDuringExecution},
			kv{"errors", []string{protocol.EDEDiagnostic}},
			kv{"type", protocol.TypeResult},
			kv{"duration_ms", dur},
			kv{"uuid", uuid.New()},
			kv{"queued_turn_count", 0},
			kv{"result_index", f.resultIndex},
		)
		return f.sinceLast(m)
	}
	return f.sinceLast(append(m,
		kv{"num_turns", f.turnCalls},
		kv{"subtype", protocol.ResultSuccess},
		kv{"api_error_status", nil},
		kv{"result", f.lastText},
		kv{"ttft_ms", 1},
		kv{"type", protocol.TypeResult},
		kv{"duration_ms", dur},
		kv{"uuid", uuid.New()},
		kv{"ttft_stream_ms", 1},
		kv{"time_to_request_ms", 1},
		kv{"first_content_frame_ms", 1},
		kv{"queued_turn_count", 0},
		kv{"result_index", f.resultIndex},
	))
}

// sinceLast adds model_usage_since_last_result, which the CLI writes in
// stream-json output and not with --output-format json.
func (f *fake) sinceLast(m obj) obj {
	if f.flags.PrintMode() && f.outputFormat() != "stream-json" {
		return m
	}
	return append(m, kv{"model_usage_since_last_result", f.modelUsage()})
}

func (f *fake) timestamp() string { return f.now().UTC().Format("2006-01-02T15:04:05.000Z") }
