package profile

import (
	"strings"
	"testing"
	"time"

	"github.com/askctl/askctl/surface"
)

func TestParseProfileErrors(t *testing.T) {
	for _, tc := range []struct{ name, doc, want string }{
		{"syntax", "{\n  \"name\": \"x\",\n  \"surface\": {\n}", "p.json:4: unexpected end of JSON input"},
		{"unknown field", "{\n  \"name\": \"x\",\n  \"capabilites\": {}\n}", `p.json:3: unknown field "capabilites"`},
		{"type", "{\n  \"name\": \"x\",\n  \"capabilities\": {\"sdk\": \"yes\"}\n}", "p.json:3: capabilities.sdk: want bool"},
		{"duration", "{\n  \"name\": \"x\",\n  \"capabilities\": {\n    \"timeout\": \"soon\"\n  }\n}", `p.json:4: capabilities.timeout: want a duration such as "2s", got "soon"`},
		{"limit", "{\n  \"name\": \"x\",\n  \"limits\": {\"start\": \"30s\",\n    \"op\": \"later\"\n  }\n}", `p.json:4: limits.op: want a duration such as "2s", got "later"`},
		{"no name", `{"surface": {"kind": "http", "url": "http://x"}, "capabilities": {"sdk": true}}`, "p.json:1: name: missing"},
		{"kind", "{\n \"name\": \"x\",\n \"claude\": \"arg\",\n \"surface\": {\"kind\": \"websocket\"},\n \"capabilities\": {\"sdk\": true}\n}", `p.json:4: surface.kind: want one of ws, control-ws, http, exec, browser, got "websocket"`},
		{"claude", "{\n \"name\": \"x\",\n \"start\": {\"command\": \"b\"},\n \"claude\": \"flag\",\n \"surface\": {\"kind\": \"http\", \"url\": \"u\"},\n \"capabilities\": {\"sdk\": true}\n}", `p.json:4: claude: want arg, path or env:NAME, got "flag"`},
		{"arg without ${CLAUDE}", "{\n \"name\": \"x\",\n \"start\": {\"command\": \"b\"},\n \"claude\": \"arg\",\n \"surface\": {\"kind\": \"http\", \"url\": \"u\"},\n \"capabilities\": {\"sdk\": true}\n}", `p.json:4: claude: "arg" but no start.args or start.env uses ${CLAUDE}`},
		{"no route", `{"name": "x", "surface": {"kind": "http", "url": "u"}, "capabilities": {}}`, "capabilities: declares neither sdk nor mcp"},
		{"mcp missing", "{\n \"name\": \"x\",\n \"surface\": {\"kind\": \"http\", \"url\": \"u\"},\n \"capabilities\": {\"mcp\": true}\n}", `mcp: missing: capability mcp needs "mcp"`},
		{"mcp config", `{"name": "x", "surface": {"kind": "http", "url": "u"}, "capabilities": {"mcp": true}, "mcp": {"config": {"servers": {}}}}`, `mcp.config: want {"mcpServers"`},
		{"mcp server", `{"name": "x", "surface": {"kind": "http", "url": "u"}, "capabilities": {"mcp": true}, "mcp": {"config": {"mcpServers": {"a": {"command": "a"}, "b": {"command": "b"}}}}}`, "mcp.server: missing: mcp.config has 2 servers (a, b)"},
		{"mcp server unknown", `{"name": "x", "surface": {"kind": "http", "url": "u"}, "capabilities": {"mcp": true}, "mcp": {"server": "c", "config": {"mcpServers": {"a": {"command": "a"}}}}}`, `mcp.server: "c" is not a server of mcp.config (a)`},
		{"shared link with takeover", "{\n \"name\": \"x\",\n \"surface\": {\"kind\": \"exec\", \"command\": \"a\", \"shared_link\": true},\n \"capabilities\": {\"sdk\": true,\n  \"takeover\": true}\n}", "p.json:5: capabilities.takeover: a surface with one shared link for all sessions has no second connection"},
		{"shared link not exec", `{"name": "x", "surface": {"kind": "http", "url": "u", "shared_link": true}, "capabilities": {"sdk": true}}`, "surface.shared_link: only for an exec surface"},
		{"crash without start", `{"name": "x", "surface": {"kind": "http", "url": "u"}, "capabilities": {"sdk": true, "persist": true, "crash": {"env": "C", "points": ["ask-read"]}}}`, "capabilities.crash: the harness arms a crash by starting the bridge"},
		{"crash without persist", `{"name": "x", "start": {"command": "b", "args": ["${CLAUDE}"]}, "claude": "arg", "surface": {"kind": "http", "url": "u"}, "capabilities": {"sdk": true, "crash": {"env": "C", "points": ["ask-read"]}}}`, "capabilities.crash: crash rows check what a restarted bridge kept: declare persist too"},
		{"crash env", `{"name": "x", "start": {"command": "b", "args": ["${CLAUDE}"]}, "claude": "arg", "surface": {"kind": "http", "url": "u"}, "capabilities": {"sdk": true, "persist": true, "crash": {"env": "A B", "points": ["ask-read"]}}}`, `capabilities.crash.env: want the name of the environment variable that arms a crash point, got "A B"`},
		{"crash no points", `{"name": "x", "start": {"command": "b", "args": ["${CLAUDE}"]}, "claude": "arg", "surface": {"kind": "http", "url": "u"}, "capabilities": {"sdk": true, "persist": true, "crash": {"env": "C"}}}`, "capabilities.crash.points: missing"},
		{"crash point", "{\n \"name\": \"x\", \"start\": {\"command\": \"b\", \"args\": [\"${CLAUDE}\"]}, \"claude\": \"arg\",\n \"surface\": {\"kind\": \"http\", \"url\": \"u\"},\n \"capabilities\": {\"sdk\": true, \"persist\": true,\n  \"crash\": {\"env\": \"C\", \"points\": [\"ask-read\", \"answer-sent\"]}}\n}", `p.json:5: capabilities.crash.points[1]: unknown point "answer-sent": want one of ask-read, answer-committed, answer-written, resume-committed, skip-committed, expiry-committed`},
		{"unknown var", "{\n \"name\": \"x\",\n \"surface\": {\"kind\": \"http\", \"url\": \"http://${NO_SUCH_VAR_ASKCTL}\"},\n \"capabilities\": {\"sdk\": true}\n}", "p.json:3: ${NO_SUCH_VAR_ASKCTL}: not a harness variable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("p.json", []byte(tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v\nwant it to contain %q", err, tc.want)
			}
		})
	}
}

func TestProfileExpand(t *testing.T) {
	t.Setenv("ASKCTL_TEST_HOST", "example.test")
	p, err := Parse("/d/p.json", []byte(`{"name":"x","start":{"command":"${ASKCTL}","args":["--port","${PORT}","--claude","${CLAUDE}"]},"claude":"arg",
		"surface":{"kind":"ws","url":"ws://${ASKCTL_TEST_HOST}:${PORT}/ws","api":"http://127.0.0.1:${PORT}"},"capabilities":{"sdk":true,"timeout":"1.5s"}}`))
	if err != nil {
		t.Fatal(err)
	}
	e := p.Expanded(map[string]string{"PORT": "7", "ASKCTL": "/bin/askctl", "CLAUDE": "/w/bin/claude"})
	if got := e.Start.Command + " " + strings.Join(e.Start.Args, " "); got != "/bin/askctl --port 7 --claude /w/bin/claude" {
		t.Errorf("start: %s", got)
	}
	if e.Surface.URL != "ws://example.test:7/ws" {
		t.Errorf("surface url: %s", e.Surface.URL)
	}
	if p.Capabilities.Timeout.D() != 1500*time.Millisecond || !p.Capabilities.Has("timeout") || p.Capabilities.Has("takeover") {
		t.Errorf("capabilities: %+v", p.Capabilities)
	}
}

// TestProfileMCP: the mcp section's server and tool default, and its
// config's ${VAR}s expand.
func TestProfileMCP(t *testing.T) {
	p, err := Parse("p.json", []byte(`{"name":"x","surface":{"kind":"http","url":"u"},"capabilities":{"mcp":true},
		"mcp":{"config":{"mcpServers":{"ask":{"command":"${ASKCTL}","args":["mcp","--state","${STATE}"]}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	e := p.Expanded(map[string]string{"ASKCTL": "/bin/askctl", "STATE": "/w/state"})
	if e.MCP.Server != "ask" || e.MCP.Tool != "ask_user" || e.MCP.ToolName() != "mcp__ask__ask_user" {
		t.Errorf("server %q tool %q", e.MCP.Server, e.MCP.Tool)
	}
	if got := string(e.MCP.Config); !strings.Contains(got, `"command":"/bin/askctl"`) || !strings.Contains(got, `"/w/state"`) {
		t.Errorf("config %s", got)
	}
}

// TestSlowScalesWaits: the slow factor multiplies the harness's own waits;
// below 1 it changes nothing.
func TestSlowScalesWaits(t *testing.T) {
	for _, tt := range []struct {
		factor float64
		want   time.Duration
	}{{0, 10 * time.Second}, {0.5, 10 * time.Second}, {1, 10 * time.Second}, {2.5, 25 * time.Second}} {
		if got := (surface.Spec{Slow: tt.factor}).Scaled(10 * time.Second); got != tt.want {
			t.Errorf("slow %v: %v, want %v", tt.factor, got, tt.want)
		}
	}
}

// TestSlowScalesTheBridgesTimeout: a profile that starts its bridge with
// ${TIMEOUT} has its declared timeout scaled by --slow, and the bridge is
// started with the scaled one; a profile with the timeout written in keeps
// it.
func TestSlowScalesTheBridgesTimeout(t *testing.T) {
	p, err := Parse("p.json", []byte(`{"name": "b", "start": {"command": "b", "args": ["--timeout", "${TIMEOUT}", "--claude", "${CLAUDE}"]},
		"claude": "arg", "surface": {"kind": "http", "url": "http://127.0.0.1:${PORT}"}, "capabilities": {"sdk": true, "timeout": "2s"}}`))
	if err != nil {
		t.Fatal(err)
	}
	slow := p.WithSlowTimeout(2.5)
	if got := slow.Capabilities.Timeout.D(); got != 5*time.Second {
		t.Errorf("declared timeout at --slow 2.5: %v, want 5s", got)
	}
	if p.Capabilities.Timeout.D() != 2*time.Second {
		t.Error("WithSlowTimeout changed the profile it was given")
	}
	if got := slow.Expanded(map[string]string{"TIMEOUT": slow.Capabilities.Timeout.D().String()}).Start.Args[1]; got != "5s" {
		t.Errorf("the bridge is started with --timeout %s, want 5s", got)
	}
	if p.WithSlowTimeout(1) != p {
		t.Error("--slow 1 changed the profile")
	}
	fixed, err := Parse("q.json", []byte(`{"name": "b", "start": {"command": "b", "args": ["--timeout", "2s", "--claude", "${CLAUDE}"]},
		"claude": "arg", "surface": {"kind": "http", "url": "http://127.0.0.1:${PORT}"}, "capabilities": {"sdk": true, "timeout": "2s"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if fixed.WithSlowTimeout(3) != fixed {
		t.Error("a timeout written in the profile was scaled: the bridge would not know")
	}
	if fixed.WithTimeout(time.Minute) != fixed {
		t.Error("a timeout written in the profile was changed: the bridge would not know")
	}
	for d, want := range map[time.Duration]string{10 * time.Minute: "600s", 2 * time.Second: "2s", 1500 * time.Millisecond: "1.5s"} {
		if got := TimeoutVar(d); got != want {
			t.Errorf("TimeoutVar(%v) = %q, want %q", d, got, want)
		}
	}
	if got := p.WithTimeout(time.Minute).Capabilities.Timeout.D(); got != time.Minute {
		t.Errorf("WithTimeout(1m) declares %v", got)
	}
}
