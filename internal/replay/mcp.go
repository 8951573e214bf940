package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/askctl/askctl/internal/httpserve"
	"github.com/askctl/askctl/internal/jsonl"
	"github.com/askctl/askctl/internal/mcpask"
	"github.com/askctl/askctl/scenarios"
	"github.com/askctl/askctl/transcript"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// This file replays route "mcp" scenarios: the agent runs in print mode
// (claude -p "prompt" --mcp-config …), and the person's part is played by a
// scripted MCP server on loopback — a bridge's ask_user server with the
// person built in — that answers each mcp step's tools/call from the step's
// user part, with the texts askctl mcp writes (package mcpask).

// DefaultMCPSilence is how long a silent user keeps the scripted server
// waiting before it returns its timeout, when the step gives no "after".
const DefaultMCPSilence = time.Second

// mcpServersWant is system/init's mcp_servers as shape compares it: every
// server connected.
func mcpServersWant(sc *scenarios.Scenario) string {
	var list []map[string]string
	for _, name := range sc.MCPServers() {
		list = append(list, map[string]string{"name": name, "status": "connected", "source": "dynamic"})
	}
	if list == nil {
		return "[]"
	}
	b, _ := json.Marshal(list)
	return string(b)
}

// silence is how long the scripted server waits on step st's silent user.
func silence(st *scenarios.Step) time.Duration {
	switch u := st.User; {
	case st.CancelAfter > 0:
		// The CLI ends the call first (its tool timeout): the server's
		// own timeout must not race it.
		return max(time.Duration(u.After), st.CancelAfter+10*DefaultMCPSilence)
	case u.After > 0:
		return time.Duration(u.After)
	}
	return DefaultMCPSilence
}

// scriptedResult is what the scripted server returns for an mcp step.
func scriptedResult(st *scenarios.Step) (*mcp.CallToolResult, error) {
	if len(st.MCP.Result) > 0 {
		var res mcp.CallToolResult
		if err := json.Unmarshal(st.MCP.Result, &res); err != nil {
			return nil, fmt.Errorf("line %d: mcp.result: %w", st.Line, err)
		}
		return &res, nil
	}
	u := st.User
	if u == nil {
		return nil, fmt.Errorf("line %d: the mcp step has no user part to play (add \"user\")", st.Line)
	}
	var in mcpask.Input
	_ = json.Unmarshal(st.MCP.Input, &in)
	r := u.Reply()
	switch {
	case u.Silent:
		return mcpask.TimedOut(int(math.Ceil(silence(st).Seconds()))), nil
	case r.Skip:
		return mcpask.Declined(r.Message), nil
	}
	return mcpask.Answered(in, r.Answers[in.Question]), nil
}

// mcpResultWant is the tool_result the CLI writes for res.
func mcpResultWant(st *scenarios.Step, res *mcp.CallToolResult) map[string]string {
	var texts []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			texts = append(texts, t.Text)
		}
	}
	if res.IsError {
		return map[string]string{"content[0].content": strings.Join(texts, "\n"), "content[0].is_error": "true"}
	}
	return map[string]string{"content[0].content": canonicalJSON(mustJSON(res.Content))}
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// MCPScript is the scripted ask_user server of a route "mcp" scenario, on
// loopback HTTP: one MCP endpoint per server the steps call, each with the
// tools they call. Calls are answered in step order.
type MCPScript struct {
	srv *http.Server
	url string

	mu    sync.Mutex
	steps []*scenarios.Step // mcp steps not yet answered
	log   transcript.Sink
}

// StartMCPScript serves sc's mcp steps until Close.
func StartMCPScript(sc *scenarios.Scenario, log transcript.Sink) (*MCPScript, error) {
	s := &MCPScript{log: log}
	servers := map[string]*mcp.Server{}
	for i := range sc.Steps {
		st := &sc.Steps[i]
		if st.Kind != scenarios.KindMCP {
			continue
		}
		if _, err := scriptedResult(st); err != nil && len(sc.Wire) == 0 {
			// A recording's call the CLI answered itself (the tool was
			// missing or not allowed) has nothing to play.
			return nil, fmt.Errorf("%s:%w", sc.File, err)
		}
		s.steps = append(s.steps, st)
		name, tool := st.MCP.Server, st.MCP.ToolOrDefault()
		srv := servers[name]
		if srv == nil {
			srv = mcp.NewServer(&mcp.Implementation{Name: name, Version: "askctl-replay"}, nil)
			servers[name] = srv
		}
		if tool == mcpask.ToolName {
			mcp.AddTool(srv, mcpask.Tool(), func(ctx context.Context, _ *mcp.CallToolRequest, _ mcpask.Input) (*mcp.CallToolResult, any, error) {
				return s.answer(ctx, name, tool), nil, nil
			})
		} else {
			srv.AddTool(&mcp.Tool{Name: tool, InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return s.answer(ctx, name, tool), nil
			})
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s.url = "http://" + ln.Addr().String()
	h := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		return servers[strings.Trim(r.URL.Path, "/")]
	}, nil)
	s.srv = httpserve.New(h)
	go s.srv.Serve(ln)
	return s, nil
}

// Config is the --mcp-config JSON that reaches the servers.
func (s *MCPScript) Config(sc *scenarios.Scenario) string {
	servers := map[string]any{}
	for _, name := range sc.MCPServers() {
		servers[name] = map[string]any{"type": "http", "url": s.url + "/" + name}
	}
	return string(mustJSON(map[string]any{"mcpServers": servers}))
}

// Close stops serving; calls still waiting end.
func (s *MCPScript) Close() error { return s.srv.Close() }

// answer plays the next step of server.tool: the person's delay, then
// their answer, skip or silence (the server's timeout).
func (s *MCPScript) answer(ctx context.Context, server, tool string) *mcp.CallToolResult {
	s.mu.Lock()
	var st *scenarios.Step
	for i, x := range s.steps {
		if x.MCP.Server == server && x.MCP.ToolOrDefault() == tool {
			st = x
			s.steps = append(s.steps[:i:i], s.steps[i+1:]...)
			break
		}
	}
	s.mu.Unlock()
	if st == nil {
		s.event(transcript.EventError, fmt.Sprintf("the agent called %s on server %s, and the scenario has no step left for it", tool, server))
		return mcpask.Invalid("askctl replay: the scenario has no answer for this call")
	}
	res, err := scriptedResult(st)
	if err != nil {
		s.event(transcript.EventError, fmt.Sprintf("the agent called %s on server %s, and step %d has nothing to answer with: %v", tool, server, st.N, err))
		return mcpask.Invalid("askctl replay: the scenario has no answer for this call")
	}
	var wait time.Duration
	if u := st.User; u != nil {
		wait = time.Duration(u.After)
		if u.Silent {
			wait = silence(st)
		}
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return mcpask.Withdrawn("the call was cancelled")
	}
	s.event(transcript.EventNote, fmt.Sprintf("scripted MCP server answers step %d (%s)", st.N, st.Describe()))
	return res
}

func (s *MCPScript) event(kind, text string) {
	if s.log != nil {
		_ = s.log.Write(transcript.Record{T: time.Now(), Event: kind, Text: text})
	}
}

// maxOutputLine bounds a line of the agent's output.
const maxOutputLine = 64 << 20

// PlayPrint reads a print-mode agent's output: it closes stdin at once (the
// prompt is an argument) and records each line until stdout closes or the
// timeout passes.
func PlayPrint(ctx context.Context, stdin io.WriteCloser, stdout io.Reader, opts PlayOptions) ([]transcript.Record, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = time.Minute
	}
	_ = stdin.Close()
	var (
		mu   sync.Mutex
		recs []transcript.Record
	)
	done := make(chan error, 1)
	go func() {
		r := jsonl.NewReader(stdout, maxOutputLine)
		for {
			line, err := r.Line()
			if errors.Is(err, jsonl.ErrTooLong) {
				rec := transcript.Record{T: time.Now(), Event: transcript.EventError, Kind: "stdout", Text: fmt.Sprintf("stdout line %d is over %d bytes: left out", r.N(), maxOutputLine)}
				if opts.Sink != nil {
					_ = opts.Sink.Write(rec)
				}
				continue
			}
			line = bytes.TrimRight(line, "\r\n")
			if len(line) > 0 {
				rec := transcript.Record{T: time.Now(), Dir: transcript.FromCLI, Msg: append(json.RawMessage(nil), line...)}
				if !json.Valid(line) {
					rec = transcript.Record{T: rec.T, Event: transcript.EventNote, Kind: "raw", Text: string(line)}
				}
				mu.Lock()
				recs = append(recs, rec)
				mu.Unlock()
				if opts.Sink != nil {
					_ = opts.Sink.Write(rec)
				}
			}
			if err != nil {
				if errors.Is(err, io.EOF) {
					err = nil
				}
				done <- err
				return
			}
		}
	}()
	t := time.NewTimer(opts.Timeout)
	defer t.Stop()
	var err error
	select {
	case err = <-done:
	case <-t.C:
		err = ErrSessionTimeout
	case <-ctx.Done():
		err = context.Cause(ctx)
	}
	if err != nil && opts.Kill != nil {
		opts.Kill()
	}
	mu.Lock()
	defer mu.Unlock()
	return append([]transcript.Record(nil), recs...), err
}
