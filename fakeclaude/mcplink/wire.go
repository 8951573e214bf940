package mcplink

import (
	"encoding/json"

	"github.com/askctl/askctl/claudecli"
)

// The helper's protocol: one JSON object a line each way. fakeclaude sends
// requests with ids of its choosing; the helper answers each once (cancel
// excepted), in any order, with the same id. End of input ends the helper:
// it closes every session and exits.
//
//	{"id":1,"op":"dial","server":{"name":"ask","type":"http","url":"…"},"env":{},"dir":"/w"}
//	{"id":1,"conn":1,"protocol":"2025-11-25"}
//	{"id":2,"op":"tools","conn":1}
//	{"id":2,"tools":[{"name":"ask_user"}]}
//	{"id":3,"op":"call","conn":1,"tool":"ask_user","args":{…},"meta":{…}}
//	{"id":4,"op":"cancel","target":3}
//	{"id":3,"error":"context canceled"}
//	{"id":5,"op":"close","conn":1}
//	{"id":5}

// Ops of a request.
const (
	opDial   = "dial"
	opTools  = "tools"
	opCall   = "call"
	opCancel = "cancel"
	opClose  = "close"
)

// wireServer is a server of --mcp-config with its name, which MCPServer
// keeps out of JSON (it is the key there).
type wireServer struct {
	Name string `json:"name"`
	claudecli.MCPServer
}

type request struct {
	ID     int64             `json:"id"`
	Op     string            `json:"op"`
	Server *wireServer       `json:"server,omitempty"`
	Env    map[string]string `json:"env,omitempty"`
	Dir    string            `json:"dir,omitempty"`
	Conn   int64             `json:"conn,omitempty"`
	Tool   string            `json:"tool,omitempty"`
	Args   json.RawMessage   `json:"args,omitempty"`
	Meta   map[string]any    `json:"meta,omitempty"`
	Target int64             `json:"target,omitempty"`
}

type response struct {
	ID       int64               `json:"id"`
	Error    string              `json:"error,omitempty"`
	Conn     int64               `json:"conn,omitempty"`
	Protocol string              `json:"protocol,omitempty"`
	Tools    []claudecli.MCPTool `json:"tools,omitempty"`
	Result   json.RawMessage     `json:"result,omitempty"`
}

// maxLine bounds one line of the protocol (a tool result can be large).
const maxLine = 64 << 20
