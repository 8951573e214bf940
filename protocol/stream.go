package protocol

import (
	"encoding/json"
	"strings"
)

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

// MCPServer is one entry of SystemInit.MCPServers.
type MCPServer struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	Source string `json:"source,omitempty"`
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

// PromptText is a user message's text: the content string, or its text
// blocks joined with newlines.
func PromptText(content json.RawMessage) string {
	var s string
	if json.Unmarshal(content, &s) == nil {
		return s
	}
	var blocks []ContentBlock
	_ = json.Unmarshal(content, &blocks)
	var parts []string
	for _, b := range blocks {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}
