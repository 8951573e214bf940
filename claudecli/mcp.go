package claudecli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"
)

// The CLI's MCP configuration: --mcp-config values and the environment
// that bounds its servers. How the CLI connects to a server (the SDK
// client, the probe) is package mcpclient, kept apart so that a program
// that only reads configurations links no MCP SDK.

// MCP server settings of the CLI's environment.
const (
	// EnvMCPTimeout is the CLI's server start-up deadline in milliseconds
	// (default 30000).
	EnvMCPTimeout = "MCP_TIMEOUT"
	// EnvMCPToolTimeout is the CLI's tools/call deadline in milliseconds;
	// fakeclaude bounds each call by its wait deadline too.
	EnvMCPToolTimeout = "MCP_TOOL_TIMEOUT"
)

// MinMCPToolTimeout is the least tool timeout the CLI keeps: a smaller
// MCP_TOOL_TIMEOUT is taken as this (a server's own timeout below it is
// ignored).
const MinMCPToolTimeout = time.Second

// MCPToolTimedOut is the text of the is_error tool_result the CLI writes
// for a tools/call it ended at its tool timeout d.
func MCPToolTimedOut(server, tool string, d time.Duration) string {
	return fmt.Sprintf("MCP server %q tool %q timed out after %ss", server, tool, strconv.FormatFloat(d.Seconds(), 'f', -1, 64))
}

// DefaultMCPTimeout is the real CLI's start-up deadline for a server.
const DefaultMCPTimeout = 30 * time.Second

// MCPServer is one server of --mcp-config.
type MCPServer struct {
	Name    string            `json:"-"`
	Type    string            `json:"type,omitempty"` // stdio (default), http, sse
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	// Timeout is the tools/call deadline in milliseconds.
	Timeout int `json:"timeout,omitempty"`
}

// ParseMCPConfig reads the values of --mcp-config: each a JSON object or a
// file holding one, {"mcpServers":{"<name>":{…}}}. Servers keep the order
// they are written in; a later value's server replaces an earlier one of the
// same name. Errors name the value (or file) and the field.
func ParseMCPConfig(values []string) ([]MCPServer, error) {
	var out []MCPServer
	index := map[string]int{}
	for _, v := range values {
		src, data := "--mcp-config", []byte(v)
		if t := strings.TrimSpace(v); !strings.HasPrefix(t, "{") {
			b, err := os.ReadFile(t)
			if err != nil {
				return nil, fmt.Errorf("--mcp-config %s: %w", t, err)
			}
			src, data = t, b
		}
		if !gjson.ValidBytes(data) {
			return nil, fmt.Errorf("%s: not valid JSON", src)
		}
		servers := gjson.GetBytes(data, "mcpServers")
		if !servers.IsObject() {
			return nil, fmt.Errorf("%s: mcpServers: want an object of servers by name", src)
		}
		var err error
		servers.ForEach(func(k, raw gjson.Result) bool {
			s := MCPServer{Name: k.String()}
			dec := json.NewDecoder(strings.NewReader(raw.Raw))
			if e := dec.Decode(&s); e != nil {
				err = fmt.Errorf("%s: mcpServers.%s: %v", src, s.Name, e)
				return false
			}
			switch {
			case s.Name == "":
				err = fmt.Errorf("%s: mcpServers: a server needs a name", src)
			case s.Type == "" || s.Type == "stdio":
				if strings.TrimSpace(s.Command) == "" {
					err = fmt.Errorf("%s: mcpServers.%s.command: required for a stdio server", src, s.Name)
				}
			case s.Type == "http" || s.Type == "sse":
				if s.URL == "" {
					err = fmt.Errorf("%s: mcpServers.%s.url: required for a %s server", src, s.Name, s.Type)
				}
			}
			if err != nil {
				return false
			}
			if i, ok := index[s.Name]; ok {
				out[i] = s
			} else {
				index[s.Name] = len(out)
				out = append(out, s)
			}
			return true
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// MCPTool is one tool an MCP server lists.
type MCPTool struct {
	Name  string `json:"name"`
	Title string `json:"title,omitempty"`
}

// MCPDialer connects the CLI's way to the MCP servers of --mcp-config: in
// process (claudecli/mcpclient, the official SDK) or through fakeclaude's
// helper program (fakeclaude/mcplink). env is added to a stdio server's
// environment and dir is its directory.
type MCPDialer interface {
	Dial(ctx context.Context, srv MCPServer, env map[string]string, dir string) (MCPConn, error)
}

// MCPConn is a connected MCP server.
type MCPConn interface {
	// Protocol is the MCP version the server answered initialize with.
	Protocol() string
	// Tools lists the server's tools (tools/list), in its order.
	Tools(ctx context.Context) ([]MCPTool, error)
	// Call makes a tools/call with the arguments and _meta, and returns the
	// CallToolResult as JSON. A done ctx ends the wait and cancels the call.
	Call(ctx context.Context, tool string, args any, meta map[string]any) (json.RawMessage, error)
	// Close ends the session; a stdio server is stopped.
	Close() error
}
