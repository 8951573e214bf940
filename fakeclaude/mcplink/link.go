// Package mcplink is how fakeclaude reaches the MCP servers of --mcp-config
// without linking an MCP client itself: a claudecli.MCPDialer connects to
// one server and gives a claudecli.MCPConn that lists its tools and calls
// them, with results as the server's JSON.
//
// fakeclaude's own start must stay close to a bare Go program's, and the
// official MCP SDK (with what it pulls in) would double it for every
// session, most of which configure no MCP server. So the SDK client lives in
// a helper program, fakeclaude-mcp, that fakeclaude starts only when a
// session has servers (Helper), and that answers over its stdin and stdout
// (Serve). A program that links the SDK anyway (askctl, the test binaries)
// hands fakeclaude an in-process claudecli.MCPDialer instead (claudecli/mcpclient).
//
// Importers: fakeclaude (the Helper dialer) and cmd/fakeclaude-mcp
// (Serve, with claudecli/mcpclient's in-process claudecli.MCPDialer).
package mcplink

import (
	"encoding/json"
)

// Result is the part of a CallToolResult fakeclaude reads.
type Result struct {
	Content []json.RawMessage `json:"content"`
	IsError bool              `json:"isError,omitempty"`
	Meta    json.RawMessage   `json:"_meta,omitempty"`
}

// Text is a content block's text when it is a text block.
func Text(block json.RawMessage) (string, bool) {
	var b struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(block, &b) != nil || b.Type != "text" {
		return "", false
	}
	return b.Text, true
}
