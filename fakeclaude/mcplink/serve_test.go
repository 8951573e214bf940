package mcplink

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/askctl/askctl/claudecli"
)

type fakeDialer struct{}

func (fakeDialer) Dial(ctx context.Context, srv claudecli.MCPServer, env map[string]string, dir string) (Conn, error) {
	return fakeConn{}, nil
}

type fakeConn struct{}

func (fakeConn) Protocol() string                      { return "2025-11-25" }
func (fakeConn) Tools(context.Context) ([]Tool, error) { return []Tool{{Name: "ask_user"}}, nil }
func (fakeConn) Close() error                          { return nil }
func (fakeConn) Call(ctx context.Context, tool string, args any, meta map[string]any) (json.RawMessage, error) {
	if tool == "block" {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": tool}}, "args": args, "meta": meta})
}

// TestServe: each op's answer, errors named, a cancelled call answered
// with its error, and the end of input ending Serve.
func TestServe(t *testing.T) {
	in := strings.Join([]string{
		`{"id":1,"op":"dial","server":{"name":"ask","type":"http","url":"http://x"}}`,
		`{"id":2,"op":"tools","conn":1}`,
		`{"id":3,"op":"call","conn":1,"tool":"ask_user","args":{"q":1},"meta":{"m":"v"}}`,
		`{"id":4,"op":"tools","conn":9}`,
		`{"id":5,"op":"fly"}`,
		`{"id":6,"op":"call","conn":1,"tool":"block"}`,
		`{"id":7,"op":"cancel","target":6}`,
		`{"id":8,"op":"close","conn":1}`,
		`{"id":9,"op":"dial"}`,
	}, "\n") + "\n"
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := Serve(ctx, fakeDialer{}, strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	got := map[int64]response{}
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var r response
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		got[r.ID] = r
	}
	want := map[int64]string{1: `"conn":1`, 2: `"tools":[{"name":"ask_user"}]`, 3: `"text":"ask_user"`, 4: `no connection 9`, 5: `unknown op \"fly\"`,
		6: `context canceled`, 8: `{"id":8}`, 9: `dial: no server`}
	for id, w := range want {
		b, _ := json.Marshal(got[id])
		if !strings.Contains(string(b), w) {
			t.Errorf("response %d: %s, want %s", id, b, w)
		}
	}
	if _, ok := got[7]; ok || len(got) != len(want) {
		t.Errorf("%d responses (cancel answers none): %v", len(got), got)
	}
	if !strings.Contains(out.String(), `"args":{"q":1}`) || !strings.Contains(out.String(), `"meta":{"m":"v"}`) {
		t.Errorf("the call's arguments and _meta did not reach the connection: %s", out.String())
	}
	if err := Serve(ctx, fakeDialer{}, strings.NewReader("not json\n"), &out); err == nil || !strings.Contains(err.Error(), "not JSON") {
		t.Errorf("a line that is not JSON: %v", err)
	}
}
