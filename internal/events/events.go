// Package events receives agents' live events as they happen: every record
// fakeclaude writes to its transcript, streamed over fakeclaude's Env.Events.
//
// A [Hub] listens on a unix socket or a loopback TCP port, accepts any number
// of fakeclaude connections — a bridge spawns one fakeclaude per session, all
// with the same environment — and hands each record to the subscribers of its
// session the moment it arrives, not when the agent exits. A harness awaits
// conditions on these records (a question asked, an answer checked, an exit)
// while the agent is still waiting for the bridge.
//
//	hub, _ := events.Listen("unix", filepath.Join(dir, "events.sock"))
//	defer hub.Close()
//	cancel := hub.Subscribe("", transcript.Func(func(r transcript.Record) error { … }))
//	cmd.Env = append(cmd.Env, fakeclaude.Env{Events: hub.Addr()}.Environ()...)
package events

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sort"
	"sync"
	"time"

	"github.com/askctl/askctl/transcript"
)

// Hub accepts live-event connections and routes their records by session.
type Hub struct {
	ln      net.Listener
	network string

	mu       sync.Mutex
	subs     map[int]sub
	next     int
	sessions map[string]int // session id → records seen
	conns    map[net.Conn]bool
	closed   bool
	wg       sync.WaitGroup
	director Director
}

type sub struct {
	session string // "" for every session
	sink    transcript.Sink
}

// Listen starts a hub on network ("unix" or "tcp") and address.
func Listen(network, address string) (*Hub, error) {
	if network != "unix" && network != "tcp" {
		return nil, fmt.Errorf("events: network %q: want unix or tcp", network)
	}
	ln, err := net.Listen(network, address)
	if err != nil {
		return nil, err
	}
	h := &Hub{ln: ln, network: network, subs: map[int]sub{}, sessions: map[string]int{}, conns: map[net.Conn]bool{}}
	h.wg.Add(1)
	go h.accept()
	return h, nil
}

// Addr is the value of fakeclaude's Env.Events that reaches this hub:
// "unix:/path" or "tcp:127.0.0.1:port".
func (h *Hub) Addr() string { return h.network + ":" + h.ln.Addr().String() }

// Subscribe hands every record of session (every session when "") to sink,
// from the moment of the call, until cancel is called. Sinks are called from
// the connections' goroutines, one record at a time per connection; a sink
// must not block for long.
func (h *Hub) Subscribe(session string, sink transcript.Sink) (cancel func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	id := h.next
	h.next++
	h.subs[id] = sub{session: session, sink: sink}
	return func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		delete(h.subs, id)
	}
}

// Sessions lists the session ids seen so far, sorted.
func (h *Hub) Sessions() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]string, 0, len(h.sessions))
	for s := range h.sessions {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// closeDrain bounds how long Close waits for connections to deliver what
// their agents already wrote.
const closeDrain = 2 * time.Second

// Close stops accepting, lets every connection deliver what its agent has
// written (an agent that exited has closed its end: that is at once), and
// returns once no sink will be called again. A connection still open after
// a short drain is cut.
func (h *Hub) Close() error {
	err := h.ln.Close()
	h.mu.Lock()
	h.closed = true
	for c := range h.conns {
		_ = c.SetReadDeadline(time.Now().Add(closeDrain))
	}
	h.mu.Unlock()
	h.wg.Wait()
	return err
}

func (h *Hub) accept() {
	defer h.wg.Done()
	for {
		c, err := h.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		h.mu.Lock()
		if h.closed {
			h.mu.Unlock()
			c.Close()
			return
		}
		h.conns[c] = true
		h.wg.Add(1)
		h.mu.Unlock()
		go h.serve(c)
	}
}

// serve reads one agent's records and routes each as it arrives.
func (h *Hub) serve(c net.Conn) {
	defer h.wg.Done()
	defer func() {
		h.mu.Lock()
		delete(h.conns, c)
		h.mu.Unlock()
		c.Close()
	}()
	r := transcript.NewReader(c)
	for first := true; ; first = false {
		rec, err := r.Next()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) || errors.Is(err, net.ErrClosed) || isEOF(err) {
				return
			}
			// A bad line: say so to every subscriber, and go on.
			rec = transcript.Record{Event: transcript.EventError, Kind: "events", Text: err.Error()}
		} else if first && rec.Event == EventHello {
			h.direct(c, &rec)
		}
		h.route(rec)
	}
}

func (h *Hub) route(rec transcript.Record) {
	h.mu.Lock()
	if rec.Session != "" {
		h.sessions[rec.Session]++
	}
	var sinks []transcript.Sink
	for _, s := range h.subs {
		if s.session == "" || s.session == rec.Session {
			sinks = append(sinks, s.sink)
		}
	}
	h.mu.Unlock()
	for _, s := range sinks {
		_ = s.Write(rec)
	}
}

func isEOF(err error) bool { return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) }
