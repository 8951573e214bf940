// Package mcplink is how fakeclaude reaches the MCP servers of --mcp-config
// without linking an MCP client itself: a Dialer connects to one server and
// gives a Conn that lists its tools and calls them, with results as the
// server's JSON.
//
// fakeclaude's own start must stay close to a bare Go program's, and the
// official MCP SDK (with what it pulls in) would double it for every
// session, most of which configure no MCP server. So the SDK client lives in
// a helper program, fakeclaude-mcp, that fakeclaude starts only when a
// session has servers (Helper), and that answers over its stdin and stdout
// (Serve). A program that links the SDK anyway (askctl, the test binaries)
// hands fakeclaude an in-process Dialer instead (claudecli/mcpclient).
//
// Importers: fakeclaude (the Helper dialer), cmd/fakeclaude-mcp and
// claudecli/mcpclient (Serve, and the in-process Dialer).
package mcplink

import (
	"context"
	"encoding/json"

	"github.com/askctl/askctl/claudecli"
)

// Tool is one tool a server lists.
type Tool struct {
	Name  string `json:"name"`
	Title string `json:"title,omitempty"`
}

// Dialer connects to servers. env is added to a stdio server's environment
// and dir is its directory.
type Dialer interface {
	Dial(ctx context.Context, srv claudecli.MCPServer, env map[string]string, dir string) (Conn, error)
}

// Conn is a connected server.
type Conn interface {
	// Protocol is the MCP version the server answered initialize with.
	Protocol() string
	// Tools lists the server's tools (tools/list), in its order.
	Tools(ctx context.Context) ([]Tool, error)
	// Call makes a tools/call with the arguments and _meta, and returns the
	// CallToolResult as JSON. A done ctx ends the wait and cancels the call.
	Call(ctx context.Context, tool string, args any, meta map[string]any) (json.RawMessage, error)
	// Close ends the session; a stdio server is stopped.
	Close() error
}

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
