package mcplink

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/askctl/askctl/claudecli"
)

type fakeDialer struct{}

func (fakeDialer) Dial(ctx context.Context, srv claudecli.MCPServer, env map[string]string, dir string) (claudecli.MCPConn, error) {
	return fakeConn{}, nil
}

type fakeConn struct{}

func (fakeConn) Protocol() string { return "2025-11-25" }
func (fakeConn) Tools(context.Context) ([]claudecli.MCPTool, error) {
	return []claudecli.MCPTool{{Name: "ask_user"}}, nil
}
func (fakeConn) Close() error { return nil }
func (fakeConn) Call(ctx context.Context, tool string, args any, meta map[string]any) (json.RawMessage, error) {
	if tool == "block" {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": tool}}, "args": args, "meta": meta})
}

// TestServe: each op's answer, errors named, a cancelled call answered
// with its error, and the end of input ending Serve. Requests are sent one
// at a time (as fakeclaude does: it dials before it lists or calls), but
// the blocked call and its cancel overlap.
func TestServe(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- Serve(ctx, fakeDialer{}, inR, outW); outW.Close() }()
	sc := bufio.NewScanner(outR)
	send := func(line string) {
		t.Helper()
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	read := func() string {
		t.Helper()
		if !sc.Scan() {
			t.Fatalf("no response: %v", sc.Err())
		}
		return sc.Text()
	}
	for _, c := range []struct{ req, want string }{
		{`{"id":1,"op":"dial","server":{"name":"ask","type":"http","url":"http://x"}}`, `"conn":1`},
		{`{"id":2,"op":"tools","conn":1}`, `"tools":[{"name":"ask_user"}]`},
		{`{"id":3,"op":"call","conn":1,"tool":"ask_user","args":{"q":1},"meta":{"m":"v"}}`, `"text":"ask_user"`},
		{`{"id":4,"op":"tools","conn":9}`, `no connection 9`},
		{`{"id":5,"op":"fly"}`, `unknown op \"fly\"`},
		{`{"id":9,"op":"dial"}`, `dial: no server`},
	} {
		send(c.req)
		if got := read(); !strings.Contains(got, c.want) {
			t.Errorf("%s: got %s, want %s", c.req, got, c.want)
		} else if c.want == `"text":"ask_user"` && (!strings.Contains(got, `\"q\":1`) && !strings.Contains(got, `"q":1`) || !strings.Contains(got, `"m":"v"`)) {
			t.Errorf("the call's arguments and _meta did not reach the connection: %s", got)
		}
	}
	send(`{"id":6,"op":"call","conn":1,"tool":"block"}`)
	send(`{"id":7,"op":"cancel","target":6}`)
	if got := read(); !strings.Contains(got, `"id":6`) || !strings.Contains(got, "context canceled") {
		t.Errorf("a cancelled call: %s", got)
	}
	send(`{"id":8,"op":"close","conn":1}`)
	if got := read(); got != `{"id":8}` {
		t.Errorf("close: %s", got)
	}
	inW.Close()
	if err := <-served; err != nil {
		t.Errorf("Serve at the end of input: %v", err)
	}
	if sc.Scan() {
		t.Errorf("a response nobody asked for (a cancel answers none): %s", sc.Text())
	}
	var out bytes.Buffer
	if err := Serve(ctx, fakeDialer{}, strings.NewReader("not json\n"), &out); err == nil || !strings.Contains(err.Error(), "not JSON") {
		t.Errorf("a line that is not JSON: %v", err)
	}
}
