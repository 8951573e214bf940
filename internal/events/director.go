package events

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/askctl/askctl/internal/jsonl"
	"github.com/askctl/askctl/transcript"
)

// A bridge spawns every fakeclaude with its own arguments and one
// environment, so a harness cannot hand each its scenario on the command
// line. Instead a fakeclaude started with Env.Events and no scenario
// asks the hub: its first record is a hello, and the hub's [Director]
// answers with one JSON line, the assignment, before any other record.
//
//	fakeclaude → {"event":"hello","msg":{"pid":4242,"args":["--output-format",…],"cwd":"/w","resume":""}}
//	hub        → {"name":"ask-multi","scenario":"<txtar>","session_id":"9f…","timeout":"30s"}
//	hub        → {"error":"no session is being started"}

// EventHello is the event of the record a fakeclaude without a scenario
// sends first.
const EventHello = "hello"

// Hello says who a fakeclaude is.
type Hello struct {
	PID    int      `json:"pid"`
	Args   []string `json:"args"`
	Cwd    string   `json:"cwd,omitempty"`
	Resume string   `json:"resume,omitempty"` // the session id of --resume ID, if any
}

// Assignment tells a fakeclaude what to play.
type Assignment struct {
	Name      string `json:"name,omitempty"`       // the scenario's name, for messages
	Scenario  string `json:"scenario,omitempty"`   // the scenario, a txtar archive
	SessionID string `json:"session_id,omitempty"` // the session id to announce (not with --resume)
	Timeout   string `json:"timeout,omitempty"`    // each wait's deadline (fakeclaude's Env.Timeout)
	Error     string `json:"error,omitempty"`      // no assignment: why
}

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

// Ask is the fakeclaude side: it sends hello on conn and reads the
// assignment, waiting at most timeout.
func Ask(conn net.Conn, hello Hello, timeout time.Duration) (Assignment, error) {
	msg, err := json.Marshal(hello)
	if err != nil {
		return Assignment{}, err
	}
	_ = conn.SetDeadline(time.Now().Add(timeout))
	defer conn.SetDeadline(time.Time{})
	if err := transcript.NewWriter(conn).Write(transcript.Record{Event: EventHello, Msg: msg}); err != nil {
		return Assignment{}, fmt.Errorf("saying hello: %w", err)
	}
	// The hub sends this one line and nothing after it.
	line, err := jsonl.NewReader(conn, 4<<20).Line()
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return Assignment{}, fmt.Errorf("no scenario assigned within %v", timeout)
		}
		return Assignment{}, fmt.Errorf("reading the assignment: %w", err)
	}
	var a Assignment
	if err := json.Unmarshal(line, &a); err != nil {
		return Assignment{}, fmt.Errorf("assignment: %w", err)
	}
	if a.Error != "" {
		return a, errors.New(a.Error)
	}
	if strings.TrimSpace(a.Scenario) == "" {
		return a, errors.New("assignment has no scenario")
	}
	return a, nil
}
