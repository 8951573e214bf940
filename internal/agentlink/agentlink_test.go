package agentlink_test

import (
	"bufio"
	"net"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/askctl/askctl/internal/agentlink"
)

// hub listens on network and answers one hello with reply (nothing when
// reply is empty).
func hub(t *testing.T, network, addr, reply string) string {
	t.Helper()
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		line, _ := bufio.NewReader(c).ReadString('\n')
		if !strings.Contains(line, `"event":"hello"`) {
			return
		}
		if reply == "" {
			time.Sleep(5 * time.Second)
			return
		}
		_, _ = c.Write([]byte(reply + "\n"))
	}()
	return network + ":" + ln.Addr().String()
}

func TestDialAndAsk(t *testing.T) {
	ok := `{"name":"ask-single","scenario":"-- scenario.json --\n{}","session_id":"s1"}`
	for _, c := range []struct{ name, network, addr string }{
		{"unix", "unix", filepath.Join(t.TempDir(), "e.sock")},
		{"tcp", "tcp", "127.0.0.1:0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			conn, err := agentlink.Dial(hub(t, c.network, c.addr, ok))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			a, err := agentlink.Ask(conn, agentlink.Hello{PID: 1}, 5*time.Second)
			if err != nil || a.Name != "ask-single" || a.SessionID != "s1" {
				t.Fatalf("assignment %+v, %v", a, err)
			}
		})
	}
}

func TestAskErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := agentlink.Dial("unix:" + filepath.Join(dir, "none.sock")); err == nil {
		t.Error("dialled a socket that does not exist")
	}
	if _, err := agentlink.Dial("tcp:localhost:1"); err == nil || !strings.Contains(err.Error(), "want IP:PORT") {
		t.Errorf("a host name: %v, want an error asking for IP:PORT", err)
	}
	for _, c := range []struct{ reply, want string }{
		{"", "no scenario assigned within 200ms"},
		{`{"error":"no session is being started"}`, "no session is being started"},
		{`{"name":"x"}`, "assignment has no scenario"},
		{`not json`, "assignment:"},
	} {
		conn, err := agentlink.Dial(hub(t, "unix", filepath.Join(t.TempDir(), "e.sock"), c.reply))
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		_, err = agentlink.Ask(conn, agentlink.Hello{}, 200*time.Millisecond)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("reply %q: %v, want %q", c.reply, err, c.want)
		}
		if el := time.Since(start); el > 3*time.Second {
			t.Errorf("reply %q: Ask took %v past its 200ms deadline", c.reply, el)
		}
		conn.Close()
	}
}

// TestDialIsBounded: a hub that never accepts, its backlog full, makes
// Dial fail by its deadline instead of blocking in connect.
func TestDialIsBounded(t *testing.T) {
	defer agentlink.SetDialTimeout(agentlink.SetDialTimeout(300 * time.Millisecond))
	path := filepath.Join(t.TempDir(), "full.sock")
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	if err := syscall.Bind(fd, &syscall.SockaddrUnix{Name: path}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		// Fill the backlog (never accepted); the connect after it must
		// give up by the deadline.
		for i := 0; i < 64; i++ {
			c, err := agentlink.Dial("unix:" + path)
			if err != nil {
				done <- err
				return
			}
			defer c.Close()
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not accepted within 300ms") {
			t.Errorf("dialling a hub that accepts nothing: %v, want it refused by the deadline", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Dial blocked past its deadline")
	}
}
