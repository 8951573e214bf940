package events

import (
	"encoding/json"
	"fmt"
	"net"
	"time"

	"github.com/askctl/askctl/internal/agentlink"
	"github.com/askctl/askctl/transcript"
)

// The agent's end of the hello and the assignment is package agentlink;
// the types are its.

// EventHello is the event of the record a fakeclaude without a scenario
// sends first.
const EventHello = agentlink.EventHello

// Hello says who a fakeclaude is.
type Hello = agentlink.Hello

// Assignment tells a fakeclaude what to play.
type Assignment = agentlink.Assignment

// Director decides what a fakeclaude plays. It is called once per
// connection that says hello, from that connection's goroutine; an error
// sends the fakeclaude away (it exits with a usage error naming it).
type Director func(Hello) (Assignment, error)

// SetDirector makes h answer hellos with d. Set it before agents connect.
func (h *Hub) SetDirector(d Director) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.director = d
}

// direct answers a hello record on c.
func (h *Hub) direct(c net.Conn, rec *transcript.Record) {
	var hello Hello
	var a Assignment
	if err := json.Unmarshal(rec.Msg, &hello); err != nil {
		a.Error = fmt.Sprintf("hello: %v", err)
	} else {
		h.mu.Lock()
		d := h.director
		h.mu.Unlock()
		if d == nil {
			a.Error = "this harness assigns no scenarios: give fakeclaude its scenario"
		} else if got, err := d(hello); err != nil {
			a.Error = err.Error()
		} else {
			a = got
		}
	}
	if a.Error == "" && hello.Resume == "" && a.SessionID != "" {
		rec.Session = a.SessionID
	} else if hello.Resume != "" {
		rec.Session = hello.Resume
	}
	b, _ := json.Marshal(a)
	_ = c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	_, _ = c.Write(append(b, '\n'))
	_ = c.SetWriteDeadline(time.Time{})
}
