package bridge

import (
	"container/list"
	"context"
	"net"
	"net/http"
	"sync"
	"time"
)

// Limits bound what the bridge's clients can hold. A connection that is not
// serving the token holder (a stranger's, or an idle keep-alive one) can be
// taken back: when the connections are all taken, the oldest such is closed
// to let the next one in, so the token holder always gets in, however many
// strangers connect and stall. Streams (SSE, WebSocket, control), which the
// token holder keeps open, may take all but Reserve. Zero values are the
// defaults.
type Limits struct {
	// MaxConns bounds the connections open at once. Default: half the
	// process's open-file limit, at most 4096 (the rest is the agents',
	// the database's).
	MaxConns int
	// Reserve is how many of MaxConns streams may never take, so that a
	// new request always finds a connection; past MaxConns-Reserve a new
	// stream is refused with 503. Default MaxConns/8, at least 1.
	Reserve int
	// HeaderTimeout bounds the reading of a request's header, and
	// BodyTimeout of its body. Defaults 5s and 10s.
	HeaderTimeout, BodyTimeout time.Duration
	// IdleTimeout closes a keep-alive connection idle this long. Default 60s.
	IdleTimeout time.Duration
}

func (l Limits) withDefaults() Limits {
	if l.MaxConns <= 0 {
		l.MaxConns = min(4096, max(16, fdLimit()/2))
	}
	if l.Reserve <= 0 || l.Reserve >= l.MaxConns {
		l.Reserve = max(1, l.MaxConns/8)
	}
	if l.HeaderTimeout <= 0 {
		l.HeaderTimeout = 5 * time.Second
	}
	if l.BodyTimeout <= 0 {
		l.BodyTimeout = 10 * time.Second
	}
	if l.IdleTimeout <= 0 {
		l.IdleTimeout = 60 * time.Second
	}
	return l
}

// HTTP is the http.Server that serves s within its limits on ln, and the
// listener to serve: srv.Serve(ln).
func (s *Server) HTTP(ln net.Listener) (*http.Server, net.Listener) {
	l := s.Limits.withDefaults()
	g := &guard{max: l.MaxConns, streamsMax: l.MaxConns - l.Reserve, evictable: list.New()}
	s.guard, s.bodyTimeout = g, l.BodyTimeout
	srv := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: l.HeaderTimeout,
		IdleTimeout:       l.IdleTimeout,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			if gc, ok := c.(*guardedConn); ok {
				return context.WithValue(ctx, guardedKey{}, gc)
			}
			return ctx
		},
		ConnState: func(c net.Conn, st http.ConnState) {
			if gc, ok := c.(*guardedConn); ok && st == http.StateIdle {
				g.idle(gc)
			}
		},
	}
	return srv, &guardedListener{Listener: ln, g: g}
}

// guard counts the connections, and keeps those it may take back (not
// serving the token holder) in the order they came.
type guard struct {
	mu         sync.Mutex
	open       int // connections open
	streams    int // of them, the token holder's streams
	max        int
	streamsMax int
	evictable  *list.List // of *guardedConn, oldest first
}

type guardedKey struct{}

type guardedConn struct {
	net.Conn
	g      *guard
	el     *list.Element // in g.evictable while it may be taken back
	stream bool
	closed bool
}

func (c *guardedConn) Close() error {
	g := c.g
	g.mu.Lock()
	if !c.closed {
		c.closed = true
		g.open--
		if c.stream {
			g.streams--
		}
		if c.el != nil {
			g.evictable.Remove(c.el)
			c.el = nil
		}
	}
	g.mu.Unlock()
	return c.Conn.Close()
}

type guardedListener struct {
	net.Listener
	g *guard
}

// Accept takes every connection that comes: when all are taken, the oldest
// that may be taken back is closed for it; with none (every connection a
// stream or a request of the token holder's, which Reserve makes rare),
// the newcomer is.
func (l *guardedListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		g := l.g
		g.mu.Lock()
		var evict *guardedConn
		if g.open >= g.max && g.evictable.Len() > 0 {
			evict = g.evictable.Front().Value.(*guardedConn)
		}
		full := g.open >= g.max && evict == nil
		gc := &guardedConn{Conn: c, g: g}
		if !full {
			g.open++
			gc.el = g.evictable.PushBack(gc)
		}
		g.mu.Unlock()
		if evict != nil {
			_ = evict.Close()
		}
		if full {
			_ = c.Close()
			continue
		}
		return gc, nil
	}
}

// admit marks the request's connection as serving the token holder: it is
// not taken back while it does. A stream (stream true) is refused (false)
// when streams have taken all but the reserve.
func (g *guard) admit(r *http.Request, stream bool) bool {
	if g == nil {
		return true
	}
	c, _ := r.Context().Value(guardedKey{}).(*guardedConn)
	if c == nil {
		return true
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if c.closed {
		return true
	}
	if stream && !c.stream {
		if g.streams >= g.streamsMax {
			return false
		}
		c.stream = true
		g.streams++
	}
	if c.el != nil {
		g.evictable.Remove(c.el)
		c.el = nil
	}
	return true
}

// idle is a connection between requests: it may be taken back.
func (g *guard) idle(c *guardedConn) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if c.closed {
		return
	}
	if c.stream {
		c.stream = false
		g.streams--
	}
	if c.el == nil {
		c.el = g.evictable.PushBack(c)
	}
}
