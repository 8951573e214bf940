package protocol

import "encoding/json"

// UserInput is a user message the SDK side writes to start a turn.
type UserInput struct {
	Type            string      `json:"type"` // "user"
	Message         UserContent `json:"message"`
	ParentToolUseID *string     `json:"parent_tool_use_id"`
	SessionID       string      `json:"session_id"`
}

// UserContent is a user message body; Content is a string or content blocks.
type UserContent struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// SystemInit is the system/init message the CLI writes at the start of each
// turn. Tools says whether AskUserQuestion is offered at all.
type SystemInit struct {
	Type              string      `json:"type"`    // "system"
	Subtype           string      `json:"subtype"` // "init"
	CWD               string      `json:"cwd"`
	SessionID         string      `json:"session_id"`
	Tools             []string    `json:"tools"`
	MCPServers        []MCPServer `json:"mcp_servers"`
	Model             string      `json:"model"`
	PermissionMode    string      `json:"permissionMode"`
	APIKeySource      string      `json:"apiKeySource"`
	ClaudeCodeVersion string      `json:"claude_code_version"`
	UUID              string      `json:"uuid"`
}

// HasTool reports whether the session offers the named tool.
func (s *SystemInit) HasTool(name string) bool {
	for _, t := range s.Tools {
		if t == name {
			return true
		}
	}
	return false
}

// MCPServer is one entry of SystemInit.MCPServers.
type MCPServer struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	Source string `json:"source,omitempty"`
}

// AssistantMessage is a model message as the CLI relays it; with streaming,
// each carries the content block it delivers.
type AssistantMessage struct {
	Type            string     `json:"type"` // "assistant"
	Message         APIMessage `json:"message"`
	ParentToolUseID *string    `json:"parent_tool_use_id"`
	SessionID       string     `json:"session_id"`
	UUID            string     `json:"uuid"`
	Timestamp       string     `json:"timestamp,omitempty"`
}

// APIMessage is the Anthropic message inside an AssistantMessage.
type APIMessage struct {
	ID         string         `json:"id"`
	Type       string         `json:"type"`
	Role       string         `json:"role"`
	Model      string         `json:"model"`
	Content    []ContentBlock `json:"content"`
	StopReason *string        `json:"stop_reason"`
}

// ContentBlock is a text, tool_use or tool_result block.
type ContentBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`    // tool_use
	Name      string          `json:"name,omitempty"`  // tool_use
	Input     json.RawMessage `json:"input,omitempty"` // tool_use
	ToolUseID string          `json:"tool_use_id,omitempty"`
	// Content of a tool_result: a string for built-in tools, content blocks
	// for MCP tools.
	Content json.RawMessage `json:"content,omitempty"`
	IsError *bool           `json:"is_error,omitempty"`
}

// ResultText is a tool_result's content as text: the string itself, or the
// text blocks joined.
func (b ContentBlock) ResultText() string {
	var s string
	if json.Unmarshal(b.Content, &s) == nil {
		return s
	}
	var blocks []ContentBlock
	if json.Unmarshal(b.Content, &blocks) == nil {
		for _, x := range blocks {
			s += x.Text
		}
	}
	return s
}

// UserMessage is a user message the CLI writes: tool results (with the tool's
// structured ToolUseResult) or text such as InterruptedForToolUseText.
type UserMessage struct {
	Type            string          `json:"type"` // "user"
	Message         UserBlocks      `json:"message"`
	ParentToolUseID *string         `json:"parent_tool_use_id"`
	SessionID       string          `json:"session_id"`
	UUID            string          `json:"uuid"`
	Timestamp       string          `json:"timestamp,omitempty"`
	ToolUseResult   json.RawMessage `json:"tool_use_result,omitempty"`
}

// UserBlocks is the body of a UserMessage.
type UserBlocks struct {
	Role    string         `json:"role"`
	Content []ContentBlock `json:"content"`
}

// Denial is one entry of ResultMessage.PermissionDenials.
type Denial struct {
	ToolName  string          `json:"tool_name"`
	ToolUseID string          `json:"tool_use_id"`
	ToolInput json.RawMessage `json:"tool_input"`
}

// ResultMessage ends a turn. Error subtypes (error_during_execution, …) carry
// Errors and no Result; the SDKs throw on an error result without errors.
type ResultMessage struct {
	Type              string   `json:"type"` // "result"
	Subtype           string   `json:"subtype"`
	IsError           bool     `json:"is_error"`
	DurationMS        int64    `json:"duration_ms"`
	DurationAPIMS     int64    `json:"duration_api_ms"`
	NumTurns          int      `json:"num_turns"`
	Result            *string  `json:"result,omitempty"`
	Errors            []string `json:"errors,omitempty"`
	StopReason        *string  `json:"stop_reason"`
	SessionID         string   `json:"session_id"`
	TotalCostUSD      float64  `json:"total_cost_usd"`
	PermissionDenials []Denial `json:"permission_denials"`
	TerminalReason    string   `json:"terminal_reason"`
	UUID              string   `json:"uuid"`
}
