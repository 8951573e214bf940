// Package agentlink is fakeclaude's end of a harness's events socket
// (FAKECLAUDE_EVENTS): the dial, the hello it sends, and the assignment it
// reads back. The hub's end is internal/events.
//
// It uses no net package, on purpose: net links the C resolver (and so
// libc, dynamically) into any program built with cgo, and fakeclaude's
// start, which every session pays, stays a static Go program's. A socket
// here is a plain file descriptor, connected by the syscall and read and
// written through os.File, which has deadlines for sockets.
//
// Importers: fakeclaude, internal/events.
package agentlink

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/askctl/askctl/internal/jsonl"
	"github.com/askctl/askctl/transcript"
	"golang.org/x/sys/unix"
)

// A bridge spawns every fakeclaude with its own arguments and one
// environment, so a harness cannot hand each its scenario on the command
// line. Instead a fakeclaude started with FAKECLAUDE_EVENTS and no scenario
// asks the hub: its first record is a hello, and the hub answers with one
// JSON line, the assignment, before any other record.
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

// Conn is a connection to the hub.
type Conn interface {
	io.ReadWriteCloser
	SetDeadline(time.Time) error
	SetWriteDeadline(time.Time) error
}

// Dial connects to addr: "unix:PATH" (or a bare PATH), or "tcp:IP:PORT"
// (an address, not a host name: the hub is on this machine).
func Dial(addr string) (Conn, error) {
	network, address := "unix", addr
	if n, a, ok := strings.Cut(addr, ":"); ok && (n == "unix" || n == "tcp") {
		network, address = n, a
	}
	var (
		family int
		sa     syscall.Sockaddr
	)
	switch network {
	case "unix":
		family, sa = syscall.AF_UNIX, &syscall.SockaddrUnix{Name: address}
	case "tcp":
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return nil, fmt.Errorf("tcp:%s: want IP:PORT (%v)", address, err)
		}
		if ip := ap.Addr().Unmap(); ip.Is4() {
			family, sa = syscall.AF_INET, &syscall.SockaddrInet4{Port: int(ap.Port()), Addr: ip.As4()}
		} else {
			family, sa = syscall.AF_INET6, &syscall.SockaddrInet6{Port: int(ap.Port()), Addr: ip.As16()}
		}
	}
	// Non-blocking from the start: the connect is bounded by dialTimeout
	// (a listener whose backlog is full makes a blocking connect wait), and
	// os.File polls the socket, so its deadlines work.
	fd, err := socket(family)
	if err != nil {
		return nil, os.NewSyscallError("socket", err)
	}
	if err := connect(fd, sa, time.Now().Add(dialTimeout)); err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("dial %s %s: %w", network, address, err)
	}
	return os.NewFile(uintptr(fd), network+":"+address), nil
}

// dialTimeout bounds a connect.
var dialTimeout = 5 * time.Second

// connect connects the non-blocking socket fd to sa by deadline: a TCP
// connect under way is waited for until the socket is writable; a unix
// socket whose listener's backlog is full is tried again.
func connect(fd int, sa syscall.Sockaddr, deadline time.Time) error {
	for {
		err := syscall.Connect(fd, sa)
		switch {
		case err == nil:
			return nil
		case err == syscall.EAGAIN: // unix: the backlog is full
			if time.Now().After(deadline) {
				return fmt.Errorf("not accepted within %v", dialTimeout)
			}
			time.Sleep(5 * time.Millisecond)
			continue
		case err != syscall.EINPROGRESS && err != syscall.EINTR:
			return err
		}
		for {
			ms := int(time.Until(deadline) / time.Millisecond)
			if ms <= 0 {
				return fmt.Errorf("not connected within %v", dialTimeout)
			}
			n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}, ms)
			if err == syscall.EINTR {
				continue
			}
			if err != nil {
				return os.NewSyscallError("poll", err)
			}
			if n > 0 {
				break
			}
		}
		soErr, err := syscall.GetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_ERROR)
		if err != nil {
			return os.NewSyscallError("getsockopt", err)
		}
		if soErr != 0 {
			return syscall.Errno(soErr)
		}
		return nil
	}
}

// Ask sends hello on conn and reads the assignment, waiting at most
// timeout.
func Ask(conn Conn, hello Hello, timeout time.Duration) (Assignment, error) {
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
		if errors.Is(err, os.ErrDeadlineExceeded) {
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
