//go:build !mutation

package bridge_test

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/askctl/askctl/bridge"
	"github.com/askctl/askctl/bridgeapi"
	"github.com/askctl/askctl/fakeclaude"
)

// smallBuffers is a listener whose connections have small send buffers, so
// a client that stops reading stalls the server's writes at once.
type smallBuffers struct{ net.Listener }

func (l smallBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(4096)
	}
	return c, err
}

// TestSlowEventClientIsDropped: an SSE client that never reads is dropped
// once a write to it stalls past the write timeout, as a WebSocket one is:
// it does not hold the bridge's memory and goroutine for ever.
func TestSlowEventClientIsDropped(t *testing.T) {
	dir := t.TempDir()
	// A question big enough to fill both sides' socket buffers.
	big := strings.Repeat("a long description ", 20000)
	sc := fmt.Sprintf("A big question.\n-- scenario.json --\n{\"name\":\"big\",\"route\":\"sdk\"}\n-- steps.jsonl --\n{\"prompt\":\"Go.\"}\n"+
		`{"ask":{"questions":[{"question":"Which?","header":"Big","options":[{"label":"A","description":%q},{"label":"B","description":"b"}],"multiSelect":false}]},"id":"toolu_01B","user":{"answers":{"Which?":"B"}}}`+"\n", big)
	e := newEnv(t, bridge.Config{SessionEnv: func(name, text string) ([]string, string, error) {
		path := filepath.Join(dir, "big.txtar")
		return fakeclaude.Env{Scenario: path}.Environ(), "big", os.WriteFile(path, []byte(sc), 0o644)
	}})
	closed := make(chan struct{})
	srv := httptest.NewUnstartedServer((&bridge.Server{B: e.b, Token: "test-token", WriteTimeout: 300 * time.Millisecond}).Handler())
	srv.Listener = smallBuffers{srv.Listener}
	var client atomic.Pointer[string] // the test client's address
	srv.Config.ConnState = func(c net.Conn, st http.ConnState) {
		if a := client.Load(); st == http.StateClosed && a != nil && c.RemoteAddr().String() == *a {
			close(closed)
		}
	}
	srv.Start()
	defer srv.Close()

	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		_ = c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		return serr
	}}
	conn, err := d.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	addr := conn.LocalAddr().String()
	client.Store(&addr)
	defer conn.Close()
	fmt.Fprintf(conn, "GET /api/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer test-token\r\n\r\n")
	// Never read. The question comes, its event stalls, and the bridge
	// lets the client go.
	if _, err := e.b.StartSession(bg, bridgeapi.StartOptions{Prompt: "Go.", Scenario: "big"}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-closed:
	case <-time.After(30 * time.Second):
		t.Fatal("an event client that never reads is still held 30s after its question came")
	}
}
