package surface

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// TestSocketReconnectLimit: a second connection to a session is a person
// reconnecting, bounded by limits.reconnect, not by limits.start. The
// server here takes 3 s to accept any connection after the first: within
// start (30 s), past reconnect (100 ms).
func TestSocketReconnectLimit(t *testing.T) {
	var n atomic.Int32
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) > 1 {
			select {
			case <-release:
			case <-time.After(3 * time.Second):
			}
		}
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		for { // until the client closes (its close handshake answered)
			if _, _, err := c.Read(r.Context()); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	defer close(release)
	spec := Spec{Kind: "ws", URL: "ws" + strings.TrimPrefix(srv.URL, "http"), API: srv.URL,
		Limits: Limits{Start: Duration(30 * time.Second), Reconnect: Duration(100 * time.Millisecond)}}
	s := newSocketSurface(spec, func() (string, error) { return "", nil })
	first, err := s.Open(context.Background(), "s1", func(Event) {})
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	again, err := s.Open(context.Background(), "s1", func(Event) {})
	if err == nil {
		again.Close()
		t.Fatal("a reconnect the server took 3 s to accept was waited for: limits.reconnect is 100ms")
	}
	if n.Load() < 2 {
		t.Fatalf("the reconnect never reached the server: %v", err)
	}
}

// TestOverseers: the socket surfaces' connection with no session hears
// every session (the race case answers on two connections there); http's
// event stream is one session's.
func TestOverseers(t *testing.T) {
	for kind, want := range map[string]bool{"ws": true, "control-ws": true, "http": false} {
		s, err := New(Spec{Kind: kind, URL: "ws://127.0.0.1:1", API: "http://127.0.0.1:1"})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := s.(Overseer); ok != want {
			t.Errorf("%s: an Overseer is %v, want %v", kind, ok, want)
		}
		s.Close()
	}
}

// TestResumesStreams: the http surface's connections are Resumers, and its
// Spec says so before it is opened; the socket surfaces' are not.
func TestResumesStreams(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer srv.Close()
	for _, kind := range []string{"http", "ws", "control-ws"} {
		spec := Spec{Kind: kind, URL: srv.URL, API: srv.URL}
		s, err := New(spec)
		if err != nil {
			t.Fatal(err)
		}
		if kind == "http" {
			c, err := s.Open(context.Background(), "s1", func(Event) {})
			if err != nil {
				t.Fatalf("http: %v", err)
			}
			if _, ok := c.(Resumer); !ok || !spec.ResumesStreams() {
				t.Errorf("http: a Resumer %v, ResumesStreams %v", ok, spec.ResumesStreams())
			}
			c.Close()
		} else if spec.ResumesStreams() {
			t.Errorf("%s: ResumesStreams", kind)
		}
		s.Close()
	}
}
