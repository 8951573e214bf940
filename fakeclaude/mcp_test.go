package fakeclaude_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/askctl/askctl/claudecli"
	"github.com/askctl/askctl/claudecli/mcpclient"
	"github.com/askctl/askctl/fakeclaude"
	"github.com/askctl/askctl/fakeclaude/mcplink"
	"github.com/askctl/askctl/internal/mcpask"
	"github.com/askctl/askctl/scenarios"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tidwall/gjson"
)

// envMCPServer makes the test binary an MCP ask_user server on stdio that
// answers every call the way its value says: ok, skip, success-on-skip
// (a broken server), hang (never starts), never (never returns).
const envMCPServer = "FAKECLAUDE_TEST_MCP_SERVER"

// envMCPHelper makes the test binary fakeclaude's MCP helper program
// (as cmd/fakeclaude-mcp).
const envMCPHelper = "FAKECLAUDE_TEST_MCP_HELPER"

func init() {
	mode := os.Getenv(envMCPServer)
	if mode == "" {
		if os.Getenv(envMCPHelper) != "" {
			if err := mcplink.Serve(context.Background(), mcpclient.Dialer{}, os.Stdin, os.Stdout); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			os.Exit(0)
		}
		return
	}
	if f := os.Getenv("FAKECLAUDE_TEST_MCP_PIDFILE"); f != "" {
		_ = os.WriteFile(f, []byte(strconv.Itoa(os.Getpid())), 0o644)
	}
	switch mode {
	case "hang":
		time.Sleep(time.Minute)
		os.Exit(0)
	case "legacy":
		legacyServer()
		os.Exit(0)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	mcp.AddTool(s, mcpask.Tool(), func(ctx context.Context, _ *mcp.CallToolRequest, in mcpask.Input) (*mcp.CallToolResult, any, error) {
		switch mode {
		case "skip":
			return mcpask.Declined("not now"), nil, nil
		case "never", "slow":
			select {
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			case <-time.After(map[string]time.Duration{"never": time.Hour, "slow": 3 * time.Second}[mode]):
			}
		}
		return mcpask.Answered(in, in.Options[0].Label), nil, nil
	})
	_ = s.Run(context.Background(), &mcp.StdioTransport{})
	os.Exit(0)
}

// legacyServer is an MCP server of before server/discover, by hand: it
// ignores the probe (no reply at all), and speaks the classic handshake.
func legacyServer() {
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		m := gjson.ParseBytes(sc.Bytes())
		id := m.Get("id").Raw
		var result string
		switch m.Get("method").String() {
		case "initialize":
			result = `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"legacy","version":"0.1"}}`
		case "tools/list":
			result = `{"tools":[{"name":"ask_user","inputSchema":{"type":"object","properties":{"question":{"type":"string"}},"required":["question"]}}]}`
		case "tools/call":
			result = `{"content":[{"type":"text","text":"User selected: Summary"}]}`
		default:
			continue // server/discover and notifications: no reply
		}
		fmt.Printf(`{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", id, result)
	}
}

// mcpConfig is an --mcp-config running this test binary as server name.
func mcpConfig(t *testing.T, name, mode string) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{name: map[string]any{"command": self, "env": map[string]string{envMCPServer: mode}}}})
	return string(b)
}

type printRun struct {
	stdout, stderr string
	out            fakeclaude.Outcome
	lines          []gjson.Result
}

func (r printRun) first(typ string) gjson.Result {
	for _, l := range r.lines {
		if l.Get("type").String() == typ && (typ != "user" || l.Get("message.content.0.type").String() == "tool_result") {
			return l
		}
	}
	return gjson.Result{}
}

// runPrint runs fakeclaude in print mode on sc with args, stdin as given.
func runPrint(t *testing.T, sc *scenarios.Scenario, args []string, stdin string, opts fakeclaude.Options) printRun {
	t.Helper()
	flags, err := fakeclaude.ParseArgs(args)
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	opts.Scenario, opts.Flags, opts.Stderr = sc, flags, &stderr
	if opts.Release == nil {
		opts.Release = baseRelease(t)
	}
	if opts.MCP == nil {
		opts.MCP = mcpclient.Dialer{}
	}
	if opts.Home == "" {
		opts.Home = t.TempDir() // a getenv of the test's own has no CLAUDE_CONFIG_DIR: keep out of ~/.claude
	}
	if opts.Timeout == 0 {
		opts.Timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	o := fakeclaude.Run(ctx, opts, strings.NewReader(stdin), &stdout)
	r := printRun{stdout: stdout.String(), stderr: stderr.String(), out: o}
	for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		if gjson.Valid(l) {
			r.lines = append(r.lines, gjson.Parse(l))
		}
	}
	return r
}

func builtin(t *testing.T, name string) *scenarios.Scenario {
	t.Helper()
	sc, err := scenarios.Builtin(name)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

const allowAsk = "mcp__askctl__ask_user"

// TestPrintModeMCPStdio: a stdio server from --mcp-config is spawned and
// connected before system/init, listed there, and called for the mcp step;
// the tool_result carries the content as it came, and the answer is checked.
func TestPrintModeMCPStdio(t *testing.T) {
	forEachClient(t, testPrintModeMCPStdio)
}

// forEachClient runs test with fakeclaude's MCP client in process and
// through the helper program (the test binary as fakeclaude-mcp), as
// fakeclaude runs it.
func forEachClient(t *testing.T, test func(*testing.T, func() claudecli.MCPDialer)) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Run("in-process", func(t *testing.T) { test(t, func() claudecli.MCPDialer { return mcpclient.Dialer{} }) })
	t.Run("helper", func(t *testing.T) {
		test(t, func() claudecli.MCPDialer { return &mcplink.Helper{Path: self, Env: []string{envMCPHelper + "=1"}} })
	})
}

func testPrintModeMCPStdio(t *testing.T, client func() claudecli.MCPDialer) {
	sc := builtin(t, "mcp-ask-single")
	r := runPrint(t, sc, []string{"-p", "Ask me how to format.", "--output-format", "stream-json", "--verbose", "--mcp-config", mcpConfig(t, "askctl", "ok"), "--allowedTools", allowAsk}, "", fakeclaude.Options{MCP: client()})
	if r.out.Code != 0 {
		t.Fatalf("exit %d: %v\n%s", r.out.Code, r.out.Failures, r.stdout)
	}
	init := r.first("system")
	if got := init.Get(`mcp_servers`).Raw; got != `[{"name":"askctl","status":"connected","source":"dynamic"}]` {
		t.Errorf("mcp_servers %s", got)
	}
	if !strings.Contains(init.Get("tools").Raw, `"mcp__askctl__ask_user"`) || strings.Contains(init.Get("tools").Raw, "AskUserQuestion") {
		t.Errorf("tools %s: want the MCP tool and no AskUserQuestion (print mode)", init.Get("tools").Raw)
	}
	a := r.first("assistant")
	if got := a.Get("tool_use_meta.0").Raw; got != `{"id":"toolu_02B","display_name":"Ask User","server_display_name":"askctl","tool_name":"ask_user"}` {
		t.Errorf("tool_use_meta %s", got)
	}
	u := r.first("user")
	if got := u.Get("message.content.0.content").Raw; got != `[{"type":"text","text":"User selected: Summary"}]` {
		t.Errorf("tool_result content %s", got)
	}
	if u.Get("message.content.0.is_error").Exists() {
		t.Errorf("an answer has no is_error: %s", u.Raw)
	}
	// The stdio session negotiates the current protocol, whose results carry
	// the server's _meta; the CLI keeps it in tool_use_result.
	if !u.Get(`tool_use_result._meta.io\.modelcontextprotocol/serverInfo`).Exists() {
		t.Errorf("tool_use_result %s: want content and _meta", u.Get("tool_use_result").Raw)
	}
	if res := r.first("result"); res.Get("result").String() != "Done." || res.Get("subtype").String() != "success" {
		t.Errorf("result %s", res.Raw)
	}
}

// TestPrintModeOutputFormats: text prints the result text only, json the
// result object only; the prompt comes from stdin when no argument gives it.
func TestPrintModeOutputFormats(t *testing.T) {
	sc := builtin(t, "mcp-ask-single")
	cfg := mcpConfig(t, "askctl", "ok")
	r := runPrint(t, sc, []string{"-p", "--mcp-config", cfg, "--allowedTools", allowAsk}, "Ask me how to format.\n", fakeclaude.Options{})
	if r.out.Code != 0 || r.stdout != "Done.\n" {
		t.Errorf("text: exit %d, stdout %q; want 0 and \"Done.\\n\"", r.out.Code, r.stdout)
	}
	r = runPrint(t, sc, []string{"-p", "Ask me how to format.", "--output-format", "json", "--mcp-config", cfg, "--allowedTools", allowAsk}, "", fakeclaude.Options{})
	if r.out.Code != 0 || len(r.lines) != 1 || r.lines[0].Get("type").String() != "result" || r.lines[0].Get("result").String() != "Done." {
		t.Errorf("json: exit %d, stdout %q; want one result object", r.out.Code, r.stdout)
	}
	if r.lines[0].Get("model_usage_since_last_result").Exists() {
		t.Errorf("json: the CLI writes no model_usage_since_last_result with --output-format json")
	}
	r = runPrint(t, sc, []string{"-p", "--mcp-config", cfg}, "", fakeclaude.Options{})
	if r.out.Code != fakeclaude.ExitErrorResult || !strings.Contains(r.stderr, "Input must be provided") {
		t.Errorf("no prompt: exit %d, stderr %q", r.out.Code, r.stderr)
	}
}

// TestPrintModeMCPFailures: each way an MCP call cannot happen gives the
// CLI's tool_result and a clear failure, never a hang.
func TestPrintModeMCPFailures(t *testing.T) {
	forEachClient(t, testPrintModeMCPFailures)
}

func testPrintModeMCPFailures(t *testing.T, client func() claudecli.MCPDialer) {
	base := []string{"-p", "Ask me.", "--output-format", "stream-json", "--verbose"}
	tests := []struct {
		name, scenario string
		args           []string
		opts           fakeclaude.Options
		env            map[string]string
		code           int
		content        string // tool_result content
		stderr         string
		status         string // mcp_servers[0].status
	}{
		{"not allowed", "mcp-ask-single", []string{"--mcp-config", mcpConfig(t, "askctl", "ok")}, fakeclaude.Options{}, nil, fakeclaude.ExitExpectation,
			"Claude requested permissions to use mcp__askctl__ask_user, but you haven't granted it yet.", "pass --allowedTools mcp__askctl__ask_user", "connected"},
		{"server missing", "mcp-ask-single", []string{"--mcp-config", `{"mcpServers":{"askctl":{"command":"/nonexistent/ask-server"}}}`, "--allowedTools", allowAsk}, fakeclaude.Options{}, nil, fakeclaude.ExitExpectation,
			"<tool_use_error>Error: No such tool available: mcp__askctl__ask_user</tool_use_error>", "MCP server askctl failed", "failed"},
		{"server never starts", "mcp-ask-single", []string{"--mcp-config", mcpConfig(t, "askctl", "hang"), "--allowedTools", allowAsk}, fakeclaude.Options{}, map[string]string{"MCP_TIMEOUT": "400"}, fakeclaude.ExitExpectation,
			"<tool_use_error>Error: No such tool available: mcp__askctl__ask_user</tool_use_error>", "no answer within 400ms (MCP_TIMEOUT)", "failed"},
		{"call never returns", "mcp-ask-single", []string{"--mcp-config", mcpConfig(t, "askctl", "never"), "--allowedTools", allowAsk}, fakeclaude.Options{Timeout: 500 * time.Millisecond}, nil, fakeclaude.ExitTimeout,
			"", "MCP server askctl did not return tools/call ask_user within 500ms", "connected"},
		{"success for a skip", "mcp-ask-skip", []string{"--mcp-config", mcpConfig(t, "askctl", "ok"), "--allowedTools", allowAsk}, fakeclaude.Options{}, nil, fakeclaude.ExitExpectation,
			`[{"type":"text","text":"User selected: Postgres"}]`, "the call returned success", "connected"},
		{"server unconfigured", "mcp-ask-single", []string{"--allowedTools", allowAsk}, fakeclaude.Options{}, nil, fakeclaude.ExitExpectation,
			"<tool_use_error>Error: No such tool available: mcp__askctl__ask_user</tool_use_error>", "it is not configured (--mcp-config)", ""},
		{"bad config", "mcp-ask-single", []string{"--mcp-config", `{"mcpServers":{"askctl":{"type":"http"}}}`}, fakeclaude.Options{}, nil, fakeclaude.ExitUsage,
			"", "mcpServers.askctl.url: required for a http server", ""},
		{"config file missing", "mcp-ask-single", []string{"--mcp-config", "/nonexistent/mcp.json"}, fakeclaude.Options{}, nil, fakeclaude.ExitUsage,
			"", "--mcp-config /nonexistent/mcp.json: open /nonexistent/mcp.json", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Getenv = func(k string) string { return tt.env[k] }
			tt.opts.MCP = client()
			start := time.Now()
			r := runPrint(t, builtin(t, tt.scenario), append(append([]string(nil), base...), tt.args...), "", tt.opts)
			if r.out.Code != tt.code || !strings.Contains(r.stderr, tt.stderr) {
				t.Errorf("exit %d, stderr %q; want %d and %q", r.out.Code, r.stderr, tt.code, tt.stderr)
			}
			if el := time.Since(start); el > 8*time.Second {
				t.Errorf("took %v: a failing server must not hold the session", el)
			}
			if tt.status != "" {
				if got := r.first("system").Get("mcp_servers.0.status").String(); got != tt.status {
					t.Errorf("mcp_servers status %q, want %q", got, tt.status)
				}
			}
			if tt.content != "" {
				c := r.first("user").Get("message.content.0.content")
				got := c.String()
				if c.IsArray() {
					got = c.Raw
				}
				if got != tt.content {
					t.Errorf("tool_result content %s, want %s", got, tt.content)
				}
			}
		})
	}
}

// TestMCPLegacyServer: a server that ignores the server/discover probe is
// started again and spoken to with the classic handshake, as the real CLI
// does (after its 3 s probe), and its answer lands.
func TestMCPLegacyServer(t *testing.T) {
	sc := builtin(t, "mcp-ask-single")
	r := runPrint(t, sc, []string{"-p", "Ask me.", "--output-format", "stream-json", "--verbose", "--mcp-config", mcpConfig(t, "askctl", "legacy"), "--allowedTools", allowAsk}, "", fakeclaude.Options{})
	if r.out.Code != 0 {
		t.Fatalf("exit %d: %v\nstderr %s", r.out.Code, r.out.Failures, r.stderr)
	}
	u := r.first("user")
	if got := u.Get("tool_use_result").Raw; got != `[{"type":"text","text":"User selected: Summary"}]` {
		t.Errorf("tool_use_result %s: want the content array (no _meta: the classic protocol)", got)
	}
}

// TestMCPToolTimeout: a call past the server's tool timeout gets the CLI's
// error result, and the turn goes on.
func TestMCPToolTimeout(t *testing.T) {
	sc := builtin(t, "mcp-ask-single")
	env := map[string]string{"MCP_TOOL_TIMEOUT": "1000"}
	r := runPrint(t, sc, []string{"-p", "Ask me.", "--output-format", "stream-json", "--verbose", "--mcp-config", mcpConfig(t, "askctl", "slow"), "--allowedTools", allowAsk}, "",
		fakeclaude.Options{Getenv: func(k string) string { return env[k] }})
	u := r.first("user")
	if got := u.Get("message.content.0.content").String(); got != `MCP server "askctl" tool "ask_user" timed out after 1s` || !u.Get("message.content.0.is_error").Bool() {
		t.Errorf("tool_result %s", u.Raw)
	}
	if res := r.first("result"); res.Get("subtype").String() != "success" {
		t.Errorf("result %s: the turn goes on", res.Raw)
	}
	if r.out.Code != fakeclaude.ExitExpectation {
		t.Errorf("exit %d: the scenario wanted an answer", r.out.Code)
	}
}

// TestMCPServerStoppedWhenTheSessionEnds: a session that ends before its
// first turn (stdin closed) still stops the stdio server it started.
func TestMCPServerStoppedWhenTheSessionEnds(t *testing.T) {
	forEachClient(t, testMCPServerStopped)
}

func testMCPServerStopped(t *testing.T, client func() claudecli.MCPDialer) {
	pidfile := filepath.Join(t.TempDir(), "pid")
	t.Setenv("FAKECLAUDE_TEST_MCP_PIDFILE", pidfile)
	sc := builtin(t, "ask-single")
	flags, err := fakeclaude.ParseArgs(append(append([]string(nil), sdkFlags...), "--mcp-config", mcpConfig(t, "askctl", "ok")))
	if err != nil {
		t.Fatal(err)
	}
	// The session starts (the server is connected before system/init),
	// asks, and its SDK side goes away.
	in := `{"type":"control_request","request_id":"req_1","request":{"subtype":"initialize"}}` + "\n" +
		`{"type":"user","message":{"role":"user","content":"Ask me."},"parent_tool_use_id":null,"session_id":""}` + "\n"
	o := fakeclaude.Run(context.Background(), fakeclaude.Options{Scenario: sc, Flags: flags, Timeout: 5 * time.Second, Home: t.TempDir(), MCP: client()}, strings.NewReader(in), io.Discard)
	if o.Code != fakeclaude.ExitEarlyEOF {
		t.Errorf("exit %d, want %d: %v", o.Code, fakeclaude.ExitEarlyEOF, o.Failures)
	}
	b, err := os.ReadFile(pidfile)
	if err != nil {
		t.Fatalf("the server never started: %v", err)
	}
	pid, _ := strconv.Atoi(string(b))
	deadline := time.Now().Add(5 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("the MCP server (pid %d) still runs after the session ended", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
