package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/askctl/askctl/bench"
)

// TestBench runs askctl bench against the embedded reference bridge, with
// this test binary as askctl and as fakeclaude: every session is answered
// right, the figures and the plot cover every question, and a scenario whose
// person answers wrongly makes it fail with the agent's own verdict.
func TestBench(t *testing.T) {
	t.Setenv(envTestAsAskctl, "1") // the bridge the profile starts is this binary
	dir := t.TempDir()
	runBench := func(args ...string) (int, string, string) {
		return askctlIn(t, "", append([]string{"bench"}, args...)...)
	}
	plot := filepath.Join(dir, "latency.svg")
	code, out, errOut := runBench("--sessions", "6", "--concurrency", "3", "--scenario", "ask-multi", "--json", "--plot", plot)
	var rep struct {
		Sessions  int               `json:"sessions"`
		Outcomes  map[string]int    `json:"outcomes"`
		ToSurface bench.Percentiles `json:"question_to_surface"`
		ToAgent   bench.Percentiles `json:"answer_to_agent"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 {
		t.Fatalf("bench: exit %d, %v\n%s%s", code, err, out, errOut)
	}
	if rep.Sessions != 6 || rep.Outcomes["ok"] != 6 || rep.ToSurface.N != 6 || rep.ToAgent.N != 6 || rep.ToSurface.P50 <= 0 || rep.ToSurface.Max < rep.ToSurface.P99 {
		t.Errorf("bench report %+v", rep)
	}
	svg, err := os.ReadFile(plot)
	if err != nil || !bytes.HasPrefix(svg, []byte("<svg")) || bytes.Count(svg, []byte(`<circle cx=`)) != 12+2 {
		t.Errorf("the plot has %d points, want 12 and 2 in the legend (%v)", bytes.Count(svg, []byte(`<circle cx=`)), err)
	}
	if !strings.Contains(errOut, "100%: 6 sessions") {
		t.Errorf("no progress on stderr:\n%s", errOut)
	}

	wrong := filepath.Join(dir, "wrong.txtar")
	os.WriteFile(wrong, []byte(wrongScenario), 0o644)
	code, out, _ = runBench("--sessions", "2", "--scenario", wrong)
	if code != exitMismatch || !strings.Contains(out, "0 ok, 0 errors, 2 wrong, 0 lost") || !strings.Contains(out, "b00001 wrong:") {
		t.Errorf("bench with wrong answers: exit %d\n%s", code, out)
	}

	for _, args := range [][]string{{"--sessions", "5", "--duration", "1s"}, {"--concurrency", "0"}, {"--scenario", "mcp-ask-single"}, {"--scenario", "cancel-pending"}} {
		if code, _, errOut := runBench(args...); code != exitUsage {
			t.Errorf("bench %v: exit %d, %s", args, code, errOut)
		}
	}
}

// TestBenchInterrupted: SIGINT (here, the run's context) mid-run cuts the
// sessions in flight, which are reported as interrupted, not as errors,
// with exit status 130.
func TestBenchInterrupted(t *testing.T) {
	t.Setenv(envTestAsAskctl, "1")
	// Everything bench starts lives under its own temporary directory:
	// nothing naming it may outlive the command.
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	progress := &cancelOn{text: "sessions,", cancel: cancel} // the first progress line: some sessions have finished
	var out bytes.Buffer
	code := run(ctx, []string{"askctl", "bench", "--sessions", "400", "--concurrency", "4", "--json"}, func(string) string { return "" }, strings.NewReader(""), &out, progress)
	var rep struct {
		Sessions    int            `json:"sessions"`
		Outcomes    map[string]int `json:"outcomes"`
		Interrupted bool           `json:"interrupted"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil || code != exitInterrupted {
		t.Fatalf("bench interrupted: exit %d, %v\n%s%s", code, err, out.String(), progress.String())
	}
	if !rep.Interrupted || rep.Outcomes["error"] != 0 || rep.Outcomes["ok"] == 0 || rep.Outcomes["ok"]+rep.Outcomes["interrupted"] != rep.Sessions || rep.Sessions >= 400 {
		t.Errorf("bench interrupted: %+v, want the finished ok, the cut interrupted, no error", rep)
	}
	if left := processesNaming(tmp, 5*time.Second); len(left) > 0 {
		t.Errorf("bench left running: %v", left)
	}
}

// processesNaming waits up to d for no process (but this one) to name
// path on its command line, and returns those that still do (Linux; none
// elsewhere).
func processesNaming(path string, d time.Duration) []string {
	var left []string
	for deadline := time.Now().Add(d); ; time.Sleep(50 * time.Millisecond) {
		left = left[:0]
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid == os.Getpid() {
				continue
			}
			if cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline")); err == nil && bytes.Contains(cmdline, []byte(path)) {
				left = append(left, fmt.Sprintf("%d %s", pid, bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '})))
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
	}
}

// cancelOn calls cancel once what is written to it contains text.
type cancelOn struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	text   string
	cancel func()
}

func (c *cancelOn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buf.Write(p)
	if strings.Contains(c.buf.String(), c.text) {
		c.cancel()
	}
	return len(p), nil
}

func (c *cancelOn) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()
}

// TestBenchLost: a bridge whose surface never shows the questions its
// agents ask (here the reference bridge behind a proxy that drops them
// from the event stream and the pending list) gets every session "lost"
// once the profile's op limit has passed after the ask, not after a
// minute, each with its whole reason.
func TestBenchLost(t *testing.T) {
	t.Setenv(envTestAsAskctl, "1")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	bridgeURL, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", port))
	forward := httputil.NewSingleHostReverseProxy(bridgeURL)
	hiding := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/api/events":
			// A stream that opens and says nothing.
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		case r.URL.Path == "/api/questions" && r.Method == http.MethodGet:
			io.WriteString(w, "[]")
		default:
			forward.ServeHTTP(w, r)
		}
	}))
	defer hiding.Close()
	dir := t.TempDir()
	profile := filepath.Join(dir, "hiding.json")
	os.WriteFile(profile, []byte(fmt.Sprintf(`{"name": "a bridge whose surface shows no question",
  "start": {"command": "${ASKCTL}", "args": ["serve", "--addr", "127.0.0.1:%d", "--state", "${STATE}", "--claude", "${CLAUDE}", "--timeout", "1m"]},
  "ready": {"url": "http://127.0.0.1:%d/api/health", "timeout": "15s"},
  "claude": "arg",
  "surface": {"kind": "http", "url": %q, "token_file": "${STATE}/token"},
  "limits": {"op": "1s"},
  "capabilities": {"sdk": true}}`, port, port, hiding.URL)), 0o644)
	start := time.Now()
	code, out, errOut := askctlIn(t, "", "bench", "--bridge", profile, "--sessions", "2", "--concurrency", "2")
	if code != exitMismatch || !strings.Contains(out, "0 ok, 0 errors, 0 wrong, 2 lost") {
		t.Fatalf("bench against a bridge that shows nothing: exit %d\n%s%s", code, out, errOut)
	}
	if !strings.Contains(out, "the agent asked its question 1, and the surface did not show it within 1s (the profile's op limit)") {
		t.Errorf("the reason does not say what was lost and the bound:\n%s", out)
	}
	if took := time.Since(start); took > 45*time.Second {
		t.Errorf("lost sessions took %v, want about the op limit each", took)
	}
}

// TestBenchNeverAsked: an agent the bridge spawns and never gives its
// prompt (here, its stdin is a pipe nobody writes) never asks; the session
// ends at the profile's start limit saying so, not at the session's whole
// limit, and is an error, not a lost question.
func TestBenchNeverAsked(t *testing.T) {
	t.Setenv(envTestAsAskctl, "1")
	dir := t.TempDir()
	wrapper := filepath.Join(dir, "claude")
	os.WriteFile(wrapper, []byte("#!/bin/sh\nsleep 600 | exec \"$WRAPPED_CLAUDE\" \"$@\"\n"), 0o755)
	profile := filepath.Join(dir, "mute.json")
	os.WriteFile(profile, []byte(fmt.Sprintf(`{"name": "a bridge that never gives its agent the prompt",
  "start": {"command": "${ASKCTL}", "args": ["serve", "--addr", "127.0.0.1:${PORT}", "--state", "${STATE}", "--claude", %q, "--timeout", "1m"],
            "env": {"WRAPPED_CLAUDE": "${CLAUDE}"}},
  "ready": {"url": "http://127.0.0.1:${PORT}/api/health", "timeout": "15s"},
  "claude": "arg",
  "surface": {"kind": "http", "url": "http://127.0.0.1:${PORT}", "token_file": "${STATE}/token"},
  "limits": {"start": "2s"},
  "capabilities": {"sdk": true}}`, wrapper)), 0o644)
	code, out, errOut := askctlIn(t, "", "bench", "--bridge", profile, "--sessions", "1")
	if code != exitMismatch || !strings.Contains(out, "0 ok, 1 errors, 0 wrong, 0 lost") {
		t.Fatalf("bench against a bridge whose agent never asks: exit %d\n%s%s", code, out, errOut)
	}
	if !strings.Contains(out, "the agent did not ask its question 1 within 2s (the profile's start limit)") {
		t.Errorf("the reason does not say the agent never asked, and the bound:\n%s", out)
	}
}
