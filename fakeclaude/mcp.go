package fakeclaude

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/askctl/askctl/claudecli"
	"github.com/askctl/askctl/fakeclaude/mcplink"
	"github.com/askctl/askctl/internal/clip"
	"github.com/askctl/askctl/protocol"
	"github.com/askctl/askctl/scenarios"
	"github.com/askctl/askctl/transcript"
)

// This file is fakeclaude as an MCP client, as the real CLI is for
// --mcp-config: it connects to each server when the session starts (stdio
// servers are spawned, http and sse servers dialled) with the official Go
// MCP SDK, lists their tools in system/init, and plays a scenario's mcp steps
// as tools/call requests, writing the tool_result the CLI writes for what
// came back. A server that fails to start or answer is reported in
// system/init (status "failed") and in the transcript, never a hang.
//
// The MCP client itself is Options.MCP: by default the helper program
// fakeclaude-mcp, started only for a session that has servers, so that
// fakeclaude's own start links no MCP SDK (package mcplink).

// mcpConn is one configured server and how connecting to it went.
type mcpConn struct {
	cfg     claudecli.MCPServer
	session claudecli.MCPConn
	tools   map[string]*claudecli.MCPTool
	order   []string // tool names as listed
	err     error    // why it failed
}

func (c *mcpConn) status() string {
	if c.session == nil {
		return "failed"
	}
	return "connected"
}

// mcpClients are the session's servers.
type mcpClients struct {
	dialer claudecli.MCPDialer
	conns  []*mcpConn
	ready  chan struct{} // closed when every server connected or failed
	cancel func()        // ends connection attempts still under way
}

// connectMCP starts connecting to every server at once; ready closes when
// each is connected or failed (by its start-up deadline).
func (f *fake) connectMCP(servers []claudecli.MCPServer, getenv func(string) string) *mcpClients {
	ctx, cancel := context.WithCancel(f.ctx)
	m := &mcpClients{dialer: f.opts.MCP, ready: make(chan struct{}), cancel: cancel}
	if m.dialer == nil {
		m.dialer = &mcplink.Helper{Stderr: f.opts.Stderr}
	}
	timeout := msEnv(getenv, claudecli.EnvMCPTimeout, claudecli.DefaultMCPTimeout)
	var wg sync.WaitGroup
	for _, s := range servers {
		c := &mcpConn{cfg: s}
		m.conns = append(m.conns, c)
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			c.connect(ctx, m.dialer, f.cwd)
			if c.err != nil && ctx.Err() != nil && f.ctx.Err() == nil {
				c.err = fmt.Errorf("no answer within %v (MCP_TIMEOUT): %w", timeout, c.err)
			}
		}()
	}
	go func() {
		wg.Wait()
		close(m.ready)
	}()
	return m
}

func msEnv(getenv func(string) string, name string, def time.Duration) time.Duration {
	if getenv == nil {
		return def
	}
	if ms, err := strconv.Atoi(getenv(name)); err == nil && ms > 0 {
		return time.Duration(ms) * time.Millisecond
	}
	return def
}

func (c *mcpConn) connect(ctx context.Context, d claudecli.MCPDialer, cwd string) {
	cs, err := d.Dial(ctx, c.cfg, nil, cwd)
	if err != nil {
		c.err = err
		return
	}
	tools, err := cs.Tools(ctx)
	if err != nil {
		_ = cs.Close()
		c.err = fmt.Errorf("tools/list: %w", err)
		return
	}
	c.tools = map[string]*claudecli.MCPTool{}
	for i, tl := range tools {
		c.tools[tl.Name] = &tools[i]
		c.order = append(c.order, tl.Name)
	}
	c.session = cs
}

// awaitMCP waits for every server to be connected or failed, and notes how
// each went, once.
func (f *fake) awaitMCP() {
	m := f.mcp
	if m == nil || f.mcpNoted {
		return
	}
	select {
	case <-m.ready:
	case <-f.ctx.Done():
		f.stop()
		return
	}
	f.mcpNoted = true
	for _, c := range m.conns {
		if c.err != nil {
			f.record(transcript.Record{Event: transcript.EventNote, Kind: "mcp", Text: fmt.Sprintf("MCP server %s failed: %v", c.cfg.Name, c.err)})
			if f.opts.Stderr != nil {
				fmt.Fprintf(f.opts.Stderr, "fakeclaude: MCP server %s failed: %s\n", c.cfg.Name, clip.String(c.err.Error(), maxStderrLine))
			}
			continue
		}
		f.record(transcript.Record{Event: transcript.EventNote, Kind: "mcp", Text: fmt.Sprintf("MCP server %s connected (protocol %s), tools: %s",
			c.cfg.Name, c.session.Protocol(), strings.Join(c.order, ", "))})
	}
}

// closeMCP ends every server session: stdio servers get their stdin closed,
// then SIGTERM after half a second.
func (f *fake) closeMCP() {
	if f.mcp == nil {
		return
	}
	// Connection attempts still under way end first, so every session
	// that was made is closed (and every stdio server stopped).
	f.mcp.cancel()
	select {
	case <-f.mcp.ready:
	case <-time.After(5 * time.Second):
		f.note("MCP servers still connecting 5s after the session ended; leaving them")
		return
	}
	var wg sync.WaitGroup
	for _, c := range f.mcp.conns {
		if c.session != nil {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_ = c.session.Close()
			}()
		}
	}
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		f.note("MCP servers still closing after 5s; leaving them")
	}
	if c, ok := f.mcp.dialer.(io.Closer); ok {
		if err := c.Close(); err != nil {
			f.note("MCP client: %v", err)
		}
	}
}

// mcpServers is system/init's mcp_servers.
func (f *fake) mcpServers() []obj {
	out := []obj{}
	if f.mcp == nil {
		return out
	}
	for _, c := range f.mcp.conns {
		out = append(out, obj{{"name", c.cfg.Name}, {"status", c.status()}, {"source", "dynamic"}})
	}
	return out
}

// mcpTools are the tool names system/init lists for the connected servers.
func (f *fake) mcpTools() []string {
	var out []string
	if f.mcp == nil {
		return out
	}
	for _, c := range f.mcp.conns {
		for _, t := range c.order {
			name := "mcp__" + c.cfg.Name + "__" + t
			if f.flags.ToolAllowed(name) {
				out = append(out, name)
			}
		}
	}
	return out
}

// mcpTool finds a configured, connected server's tool.
func (f *fake) mcpTool(server, tool string) (*mcpConn, *claudecli.MCPTool) {
	if f.mcp == nil {
		return nil, nil
	}
	for _, c := range f.mcp.conns {
		if c.cfg.Name == server && c.session != nil {
			if t := c.tools[tool]; t != nil {
				return c, t
			}
		}
	}
	return nil, nil
}

// toolUseMeta is an assistant message's tool_use_meta for an MCP tool call:
// the display name, and the server and tool when the tool exists.
func toolUseMeta(id string, call *scenarios.MCPCall, t *claudecli.MCPTool) []obj {
	m := obj{{"id", id}, {"display_name", displayName(call.ToolOrDefault(), t)}}
	if t != nil {
		m = append(m, kv{"server_display_name", call.Server}, kv{"tool_name", t.Name})
	}
	return []obj{m}
}

// displayName is the tool's title, or its name in words ("ask_user" → "Ask
// User"), as the CLI shows it.
func displayName(name string, t *claudecli.MCPTool) string {
	if t != nil && t.Title != "" {
		return t.Title
	}
	words := strings.FieldsFunc(name, func(r rune) bool { return r == '_' || r == '-' })
	for i, w := range words {
		words[i] = strings.ToUpper(w[:1]) + w[1:]
	}
	return strings.Join(words, " ")
}

// playMCP plays an mcp step: the tool_use, the permission check, the
// tools/call, and the tool_result the CLI writes for what came back.
func (f *fake) playMCP(st *scenarios.Step) {
	call := st.MCP
	c := toolCall{step: st, toolUseID: st.ToolUseID(), tool: call.Name(), input: st.Input()}
	conn, tool := f.mcpTool(call.Server, call.ToolOrDefault())
	f.beginResponse()
	msg := f.assistant(toolUseBlock(c.toolUseID, c.tool, c.input))
	msg = append(msg, kv{"tool_use_meta", toolUseMeta(c.toolUseID, call, tool)})
	f.send(msg)
	f.inResponse = false
	if f.stopped {
		return
	}
	exp := st.Expected()
	if tool == nil || f.flags.Denied(c.tool) {
		text := "No such tool available: " + c.tool
		f.send(f.toolResultMessage(toolResult{toolUseID: c.toolUseID, content: "<tool_use_error>Error: " + text + "</tool_use_error>", isError: ptr(true), useResult: "Error: " + text}))
		why := "it is not configured (--mcp-config)"
		for _, k := range f.mcp.list() {
			if k.cfg.Name == call.Server {
				why = fmt.Sprintf("server %s has no tool %s", call.Server, call.ToolOrDefault())
				if k.err != nil {
					why = fmt.Sprintf("server %s failed: %v", call.Server, k.err)
				}
			}
		}
		if f.flags.Denied(c.tool) {
			why = "it is in --disallowedTools"
		}
		if exp != nil {
			f.fail(ExitExpectation, "mcp", "%s is not available: %s", c.tool, why)
		}
		return
	}
	meta := decisionMeta(c.toolUseID, "accept", "config", kv{"reason_type", "rule"})
	if !f.flags.PreAllowed(call.Server, call.ToolOrDefault()) {
		if !f.askEnabled() {
			// -p with no permission surface: a tool not pre-allowed is denied.
			text := fmt.Sprintf("Claude requested permissions to use %s, but you haven't granted it yet.", c.tool)
			f.send(f.toolResultMessage(toolResult{toolUseID: c.toolUseID, content: text, isError: ptr(true), useResult: "Error: " + text,
				resultMeta: []obj{{{"id", c.toolUseID}, {"non_execution_kind", "user-rejected"}, {"permission_decision", obj{{"decision", "reject"}, {"source", "config"}}}}}}))
			f.denials = append(f.denials, denial{ToolName: c.tool, ToolUseID: c.toolUseID, ToolInput: c.input})
			if exp != nil {
				f.fail(ExitExpectation, "mcp", "%s is not allowed: pass --allowedTools %s (with no permission prompt surface, -p denies tools not pre-allowed)", c.tool, c.tool)
			}
			return
		}
		// Ask the SDK side for permission, as for any tool.
		o := f.route.ask(c)
		if o.kind != outAnswered {
			f.react(c, o)
			return
		}
		pr, err := protocol.ParsePermissionResult(o.line.N, o.response.Response.Response)
		if o.response.Response.Subtype == protocol.SubtypeError || err != nil || !pr.Allow() {
			f.react(c, o)
			return
		}
		c.input = pr.EffectiveInput(c.input)
		meta = decisionMeta(c.toolUseID, "accept", "user_temporary")
	}
	res, err := f.callMCP(conn, call.ToolOrDefault(), c)
	if f.stopped {
		return
	}
	if errors.Is(err, errMCPToolTimeout) {
		text := claudecli.MCPToolTimedOut(conn.cfg.Name, call.ToolOrDefault(), f.toolTimeout(conn, c))
		f.send(f.toolResultMessage(toolResult{toolUseID: c.toolUseID, content: text, isError: ptr(true), useResult: "Error: " + text, resultMeta: meta}))
		if exp != nil && exp.Behavior != protocol.BehaviorDeny {
			f.fail(ExitExpectation, "mcp", "%s", text)
		}
		return
	}
	var tr toolResult
	if err == nil {
		tr, err = mcpToolResult(c, res, meta)
	}
	if err != nil {
		text := fmt.Sprintf("Error calling tool %s: %v", c.tool, err)
		f.send(f.toolResultMessage(toolResult{toolUseID: c.toolUseID, content: text, isError: ptr(true), useResult: "Error: " + text, resultMeta: meta}))
		if exp != nil {
			f.fail(ExitExpectation, "mcp", "tools/call %s failed: %v", c.tool, err)
		}
		return
	}
	f.send(f.toolResultMessage(tr))
	f.record(transcript.Record{Event: transcript.EventNote, Kind: "mcp-result", Step: f.step, Msg: res, Text: "tools/call " + c.tool + " returned"})
	if exp != nil {
		f.expectation(exp.CheckMCP(res), "result as expected", c.tool)
	}
}

func (m *mcpClients) list() []*mcpConn {
	if m == nil {
		return nil
	}
	return m.conns
}

// Why a tools/call ended before its result: fakeclaude's own wait deadline
// (the run fails), or the server's tool timeout (the CLI writes an error
// result and goes on).
var (
	errMCPDeadline    = errors.New("deadline")
	errMCPToolTimeout = errors.New("tool timeout")
)

// toolTimeout is the CLI's deadline for tools/call c on conn: the server's
// timeout (ms, at least 1000), else MCP_TOOL_TIMEOUT; zero: none (the CLI's
// default is about 28 hours). The scenario's cancel_after, when sooner,
// stands for it (Scenario.MCPToolTimeout), for every call of the session as
// the CLI's is: the CLI ends a call then (notifications/cancelled to the
// server), answered or not. Whichever it is, the CLI waits a second at
// least (2.1.332: a smaller MCP_TOOL_TIMEOUT is taken as 1000).
func (f *fake) toolTimeout(conn *mcpConn, c toolCall) time.Duration {
	tt := msEnv(f.getenv, claudecli.EnvMCPToolTimeout, 0)
	if conn.cfg.Timeout >= 1000 {
		tt = time.Duration(conn.cfg.Timeout) * time.Millisecond
	}
	d := c.step.CancelAfter
	if f.sc != nil && f.sc.MCPToolTimeout() > 0 {
		d = f.sc.MCPToolTimeout()
	}
	if d > 0 && (tt <= 0 || d < tt) {
		tt = d
	}
	if tt > 0 && tt < claudecli.MinMCPToolTimeout {
		tt = claudecli.MinMCPToolTimeout
	}
	return tt
}

// callMCP makes the tools/call and waits for its result, by the tool
// timeout and the wait deadline. A signal ends the wait; the call is
// cancelled.
func (f *fake) callMCP(conn *mcpConn, tool string, c toolCall) (json.RawMessage, error) {
	ctx, cancel := context.WithTimeoutCause(f.ctx, f.timeout, errMCPDeadline)
	defer cancel()
	if tt := f.toolTimeout(conn, c); tt > 0 && tt < f.timeout {
		var cancelTool func()
		ctx, cancelTool = context.WithTimeoutCause(ctx, tt, errMCPToolTimeout)
		defer cancelTool()
	}
	f.note("tools/call %s on server %s", tool, conn.cfg.Name)
	res, err := conn.session.Call(ctx, tool, c.input, map[string]any{"claudecode/toolUseId": c.toolUseID})
	switch {
	case err == nil:
		return res, nil
	case f.ctx.Err() != nil:
		f.stop()
		return nil, err
	case errors.Is(context.Cause(ctx), errMCPToolTimeout):
		return nil, errMCPToolTimeout
	case errors.Is(context.Cause(ctx), errMCPDeadline):
		f.fail(ExitTimeout, "timeout", "MCP server %s did not return tools/call %s within %v", conn.cfg.Name, tool, f.timeout)
		f.stopped = true
		return nil, err
	}
	return nil, err
}

// mcpToolResult is the user message the CLI writes for a tools/call result:
// the content blocks as they came (or a note when there are none), or, for
// an error result, its text with is_error; tool_use_result keeps the
// result's _meta when it has one.
func mcpToolResult(c toolCall, raw json.RawMessage, meta []obj) (toolResult, error) {
	var res mcplink.Result
	if err := json.Unmarshal(raw, &res); err != nil {
		return toolResult{}, fmt.Errorf("a tools/call result that is not a CallToolResult: %w", err)
	}
	blocks := make([]json.RawMessage, 0, len(res.Content))
	var texts []string
	for _, b := range res.Content {
		blocks = append(blocks, b)
		if t, ok := mcplink.Text(b); ok {
			texts = append(texts, t)
		}
	}
	withMeta := func(content any) any {
		if len(res.Meta) == 0 || string(res.Meta) == "null" {
			return content
		}
		return obj{{"content", content}, {"_meta", res.Meta}}
	}
	if res.IsError {
		text := strings.Join(texts, "\n")
		return toolResult{toolUseID: c.toolUseID, content: text, isError: ptr(true), useResult: withMeta("Error: " + text), resultMeta: meta}, nil
	}
	var content any = blocks
	if len(blocks) == 0 {
		content = fmt.Sprintf("(%s completed with no output)", c.tool)
	}
	return toolResult{toolUseID: c.toolUseID, content: content, idFirst: true, useResult: withMeta(blocks), resultMeta: meta}, nil
}
