// Package httpserve makes the http.Servers of askctl's fakes and tools (the
// fake model API, the scripted MCP servers): each one bounds how long a
// client may take to send a request's header and body, and how long an idle
// connection stays, so a client that stalls holds a connection for a bounded
// time, never forever.
//
// A stream the handler keeps open (SSE, a long MCP call) is not cut: the
// read deadline covers the request, and net/http clears it once the body has
// been read. The bridge has its own server, with a connection guard
// (bridge.Server.HTTP).
package httpserve

import (
	"net/http"
	"time"
)

// Timeouts bound a client. Zero values are the defaults.
type Timeouts struct {
	// Header bounds the reading of a request's header; default 5s.
	Header time.Duration
	// Request bounds the reading of the whole request, body included;
	// default 30s.
	Request time.Duration
	// Idle closes a keep-alive connection idle this long; default 60s.
	Idle time.Duration
}

// New is a server for h with the default timeouts.
func New(h http.Handler) *http.Server { return Timeouts{}.Server(h) }

// Server is a server for h within t.
func (t Timeouts) Server(h http.Handler) *http.Server {
	if t.Header <= 0 {
		t.Header = 5 * time.Second
	}
	if t.Request <= 0 {
		t.Request = 30 * time.Second
	}
	if t.Idle <= 0 {
		t.Idle = 60 * time.Second
	}
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: t.Header,
		ReadTimeout:       max(t.Request, t.Header),
		IdleTimeout:       t.Idle,
	}
}
