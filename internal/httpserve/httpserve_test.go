package httpserve

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// serve starts a server for h within t on loopback.
func serve(t *testing.T, to Timeouts, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := to.Server(h)
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// closedWithin reports whether the server closes c (a read ends in EOF or a
// reset) before the bound; the bound is only a backstop against a hang.
func closedWithin(c net.Conn, bound time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(bound))
	_, err := io.Copy(io.Discard, c)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		return false
	}
	return true
}

var short = Timeouts{Header: 100 * time.Millisecond, Request: 200 * time.Millisecond, Idle: 300 * time.Millisecond}

// backstop bounds a wait for what the timeouts above must do: far longer
// than they are, so a busy machine does not fail it.
const backstop = 20 * time.Second

func TestStalledHeaderIsClosed(t *testing.T) {
	addr := serve(t, short, http.NotFoundHandler())
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: x\r\n") // and never the blank line
	if !closedWithin(c, backstop) {
		t.Fatalf("a header that never ends held its connection for %v", backstop)
	}
}

func TestStalledBodyIsClosed(t *testing.T) {
	got := make(chan error, 1)
	addr := serve(t, short, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		got <- err
	}))
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"half\":") // and never the rest
	select {
	case err := <-got:
		if err == nil {
			t.Fatal("the handler read a body that never came whole")
		}
	case <-time.After(backstop):
		t.Fatalf("a body that never ends held its handler for %v", backstop)
	}
	if !closedWithin(c, backstop) {
		t.Fatalf("a body that never ends held its connection for %v", backstop)
	}
}

func TestIdleConnectionIsClosed(t *testing.T) {
	addr := serve(t, short, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if !closedWithin(c, backstop) {
		t.Fatalf("an idle keep-alive connection stayed open for %v", backstop)
	}
}

// A stream the handler keeps open (SSE, an MCP call waiting for a person)
// outlives every timeout: they bound the request, not the response.
func TestStreamOutlivesTimeouts(t *testing.T) {
	const events = 10
	gap := short.Request / 2 // the stream lasts 5× the request timeout
	addr := serve(t, short, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range events {
			select {
			case <-r.Context().Done():
				return
			case <-time.After(gap):
			}
			fmt.Fprintf(w, "data: %d\n\n", i)
			w.(http.Flusher).Flush()
		}
	}))
	resp, err := http.Post("http://"+addr, "application/json", strings.NewReader(`{"call":1}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("the stream was cut: %v after %q", err, body)
	}
	if n := strings.Count(string(body), "data: "); n != events {
		t.Fatalf("the stream was cut after %d of %d events: %q", n, events, body)
	}
}

// Every http.Server the project makes, outside tests, bounds its clients:
// built here, or (the bridge's, which bounds each request's body itself and
// guards its connections) with a header and an idle timeout of its own.
// http.ListenAndServe and http.Serve, which take no timeouts, are not used.
func TestEveryServerIsBounded(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root: %v", err)
	}
	// The bridge bounds each request's body in its handler (admitted).
	perRequest := map[string]bool{"bridge/limits.go": true}
	self, _ := filepath.Abs(".")
	servers := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (strings.HasPrefix(n, ".") || n == "testdata" || n == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				if sel, ok := n.Fun.(*ast.SelectorExpr); ok && isHTTP(sel.X) && (sel.Sel.Name == "ListenAndServe" || sel.Sel.Name == "Serve" || sel.Sel.Name == "ListenAndServeTLS") {
					t.Errorf("%s: http.%s serves with no timeouts; use httpserve.New", fset.Position(n.Pos()), sel.Sel.Name)
				}
			case *ast.CompositeLit:
				sel, ok := n.Type.(*ast.SelectorExpr)
				if !ok || !isHTTP(sel.X) || sel.Sel.Name != "Server" {
					return true
				}
				servers++
				if filepath.Dir(path) == self {
					return true
				}
				keys := map[string]bool{}
				for _, e := range n.Elts {
					if kv, ok := e.(*ast.KeyValueExpr); ok {
						if id, ok := kv.Key.(*ast.Ident); ok {
							keys[id.Name] = true
						}
					}
				}
				want := []string{"ReadHeaderTimeout", "ReadTimeout", "IdleTimeout"}
				if perRequest[rel] {
					want = want[:1]
					want = append(want, "IdleTimeout")
				}
				for _, k := range want {
					if !keys[k] {
						t.Errorf("%s: an http.Server with no %s; use httpserve.New", fset.Position(n.Pos()), k)
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if servers < 2 {
		t.Fatalf("found %d http.Server literals: the walk missed the module", servers)
	}
}

func isHTTP(x ast.Expr) bool {
	id, ok := x.(*ast.Ident)
	return ok && id.Name == "http"
}
