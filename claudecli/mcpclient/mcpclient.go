// Package mcpclient is the claude CLI as an MCP client, with the official
// Go MCP SDK: the client it says it is, how it reaches each kind of server
// of --mcp-config, and how it connects (a stdio server is probed with
// server/discover first). fakeclaude connects to its servers through it,
// and the conformance suite lists a bridge's ask_user tool as the CLI would.
package mcpclient

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/askctl/askctl/claudecli"
	"github.com/askctl/askctl/internal/clip"
	"github.com/askctl/askctl/protocol"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// legacyProtocol is the MCP version the CLI offers where it does not probe
// with server/discover (http and sse servers).
const legacyProtocol = "2025-11-25"

// stderrTail keeps the end of a stdio server's stderr, for the note when it
// fails.
type stderrTail struct {
	mu sync.Mutex
	b  []byte
}

func (t *stderrTail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > 2048 {
		t.b = t.b[len(t.b)-2048:]
	}
	return len(p), nil
}

func (t *stderrTail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.b))
}

// ClientInfo is the MCP client the CLI says it is.
var ClientInfo = &mcp.Implementation{Name: "claude-code", Title: "Claude Code", Version: protocol.CLIVersion}

// Transport is how the CLI reaches server srv: a stdio server is spawned
// in dir with the environment plus env and srv.Env (its stderr to stderr
// when not nil); http and sse servers are dialled with srv.Headers. The
// options pin the protocol the CLI offers where it does not probe with
// server/discover (http, sse); nil for stdio.
func Transport(srv claudecli.MCPServer, env map[string]string, dir string, stderr io.Writer) (mcp.Transport, *mcp.ClientSessionOptions, error) {
	switch srv.Type {
	case "", "stdio":
		cmd := exec.Command(srv.Command, srv.Args...)
		cmd.Dir = dir
		cmd.Env = os.Environ()
		for _, m := range []map[string]string{env, srv.Env} {
			for k, v := range m {
				cmd.Env = append(cmd.Env, k+"="+v)
			}
		}
		cmd.Stderr = stderr
		return &mcp.CommandTransport{Command: cmd, TerminateDuration: 500 * time.Millisecond}, nil, nil
	case "http":
		return &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: HeaderClient(srv.Headers), DisableStandaloneSSE: true},
			&mcp.ClientSessionOptions{ProtocolVersion: legacyProtocol}, nil
	case "sse":
		return &mcp.SSEClientTransport{Endpoint: srv.URL, HTTPClient: HeaderClient(srv.Headers)},
			&mcp.ClientSessionOptions{ProtocolVersion: legacyProtocol}, nil
	}
	return nil, nil, fmt.Errorf("server type %q is not one fakeclaude connects to (stdio, http, sse)", srv.Type)
}

// probeTimeout bounds the CLI's server/discover probe of a stdio server;
// past it, or when the server fails the probe, the CLI starts the server
// again and connects with the classic handshake.
const probeTimeout = 3 * time.Second

// Connect connects to server srv as the CLI does, with the official Go
// MCP SDK's client: a stdio server first with the current protocol (the
// server/discover probe, at most 3 s), and, when it ignores or fails the
// probe, started again and spoken to with the classic handshake; http and
// sse servers with the classic handshake. env is added to a stdio server's
// environment, dir is its directory; its stderr's tail is in the error.
func Connect(ctx context.Context, srv claudecli.MCPServer, env map[string]string, dir string) (*mcp.ClientSession, error) {
	client := mcp.NewClient(ClientInfo, nil)
	tail := &stderrTail{}
	t, opts, err := Transport(srv, env, dir, tail)
	if err != nil {
		return nil, err
	}
	var cs *mcp.ClientSession
	if opts == nil {
		pctx, cancel := context.WithTimeout(ctx, probeTimeout)
		cs, err = client.Connect(pctx, t, nil)
		cancel()
		if err != nil && ctx.Err() == nil {
			tail = &stderrTail{}
			t, _, _ = Transport(srv, env, dir, tail)
			cs, err = client.Connect(ctx, t, &mcp.ClientSessionOptions{ProtocolVersion: legacyProtocol})
		}
	} else {
		cs, err = client.Connect(ctx, t, opts)
	}
	if err != nil && tail.String() != "" {
		err = fmt.Errorf("%w; its stderr: %s", err, clip.String(tail.String(), 300))
	}
	return cs, err
}

type headerTransport struct {
	headers map[string]string
	base    http.RoundTripper
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.headers {
		r.Header.Set(k, v)
	}
	return h.base.RoundTrip(r)
}

// HeaderClient is an HTTP client that sends headers on every request; nil
// (the default client) when there are none.
func HeaderClient(headers map[string]string) *http.Client {
	if len(headers) == 0 {
		return nil
	}
	return &http.Client{Transport: headerTransport{headers: headers, base: http.DefaultTransport}}
}

// Dialer is fakeclaude's MCP client in process (claudecli.MCPDialer): each
// server connected with Connect. The helper program fakeclaude-mcp serves
// it to a fakeclaude that links no SDK.
type Dialer struct{}

// Dial connects to srv as the CLI does (Connect).
func (Dialer) Dial(ctx context.Context, srv claudecli.MCPServer, env map[string]string, dir string) (claudecli.MCPConn, error) {
	cs, err := Connect(ctx, srv, env, dir)
	if err != nil {
		return nil, err
	}
	return sdkConn{cs}, nil
}

type sdkConn struct{ cs *mcp.ClientSession }

func (c sdkConn) Protocol() string { return c.cs.InitializeResult().ProtocolVersion }

func (c sdkConn) Tools(ctx context.Context) ([]claudecli.MCPTool, error) {
	res, err := c.cs.ListTools(ctx, nil)
	if err != nil {
		return nil, err
	}
	tools := make([]claudecli.MCPTool, 0, len(res.Tools))
	for _, t := range res.Tools {
		tools = append(tools, claudecli.MCPTool{Name: t.Name, Title: t.Title})
	}
	return tools, nil
}

func (c sdkConn) Call(ctx context.Context, tool string, args any, meta map[string]any) (json.RawMessage, error) {
	res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args, Meta: mcp.Meta(meta)})
	if err != nil {
		return nil, err
	}
	return json.Marshal(res)
}

func (c sdkConn) Close() error { return c.cs.Close() }
