package surface

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/askctl/askctl/internal/clip"
	"github.com/askctl/askctl/internal/proc"
)

// The exec adapter runs a command the bridge's author ships — a test channel
// into a Slack bot, a WhatsApp gateway, any surface — and talks to it in
// JSON Lines: one request a line on its stdin, one reply or event a line on
// its stdout. Its stderr is kept for error messages. The contract:
//
//	→ {"id":1,"op":"start","prompt":"…"}                        ← {"id":1,"session":"s_1"}
//	→ {"id":2,"op":"open","session":"s_1","conn":"c1"}          ← {"id":2}
//	→ {"id":3,"op":"pending","conn":"c1"}                       ← {"id":3,"pending":[{"question_id","session_id","questions":[…]}]}
//	→ {"id":4,"op":"answer","conn":"c1","question_id":"q_1","answers":{"<question>":["<label>",…]}}
//	                                                             ← {"id":4,"status":"answered"|"held","missing":[…]}
//	→ {"id":5,"op":"skip","conn":"c1","question_id":"q_1","reason":"…"}   ← {"id":5}
//	→ {"id":6,"op":"raw","conn":"c1","question_id":"q_1","data":"<bytes as the surface would send them>"} ← {"id":6}
//	→ {"id":7,"op":"close","conn":"c1"}                         ← {"id":7}
//	→ {"id":8,"op":"permit","conn":"c1","question_id":"p_1","allow":false,"reason":"…"} ← {"id":8}
//	← {"id":N,"error":"…","code":"resolved"}                      any request the bridge refused
//	← {"id":N,"unsupported":true,"error":"why"}                    the surface has no such operation (no skip in a chat): the case is skipped, naming it
//	← {"id":N,"ignored":true}                                     the surface took it and did nothing (an empty message a chat drops)
//	← {"event":{"type":"question","question_id","session_id","questions":[…]},"conn":"c1"}
//	← {"event":{"type":"permission","question_id","session_id","tool_name","input"},"conn":"c1"}
//
// raw sends data as the surface itself would carry an answer (the body of
// a chat message, an HTTP body): the bytes a malformed answer would be,
// which the bridge must refuse (error), or take and drop (ignored). Cards
// 2..N of one request (several questions shown one at a time) share the
// request's one question_id: the harness answers a request, never a card.
//
// permit answers another tool's permission prompt (a bridge that declares
// capability permissions shows them as permission events): allow, or deny
// with a reason.
//
// Event types are the Event* constants (question, expired, answered, held,
// skipped, withdrawn, resumed, status, taken, closed, permission). answers hold the
// labels a person picked in order (one element for a single-select
// question or free text); the command decides how its surface carries them.
// Each reply must come within the profile's limits.op (the first, and each
// start's, within limits.start).

type execSurface struct {
	reply  time.Duration // how long an operation's reply may take (limits.op)
	first  time.Duration // how long the first reply, and each start's, may take (limits.start)
	reconn time.Duration // how long a resume's reply may take (limits.reconnect)
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *tailBuffer
	wmu    sync.Mutex  // one request line written at a time
	log    *trafficLog // Spec.Log: every line each way, and its stderr

	mu      sync.Mutex
	nextID  int
	nextCon int
	replied bool // a reply has come: the adapter is up
	waiting map[int]chan execReply
	sinks   map[string]func(Event)
	dead    error
	done    chan struct{}
}

type execReply struct {
	ID      *int            `json:"id"`
	Error   string          `json:"error,omitempty"`
	Code    string          `json:"code,omitempty"`
	Session string          `json:"session,omitempty"`
	Status  string          `json:"status,omitempty"`
	Missing []string        `json:"missing,omitempty"`
	Pending []Pending       `json:"pending,omitempty"`
	Event   json.RawMessage `json:"event,omitempty"`
	Conn    string          `json:"conn,omitempty"`
	// Unsupported: the surface has no such operation (a chat with no
	// skip); Ignored: it took the operation and did nothing with it (an
	// empty message a chat drops).
	Unsupported bool `json:"unsupported,omitempty"`
	Ignored     bool `json:"ignored,omitempty"`
}

// What an exec adapter is told in its environment: the slow factor, and
// the limits it is held to (Go durations, already scaled): a reply to an
// operation, the first reply and a session start, a dropped stream's
// return.
const (
	EnvExecSlow           = "ASKCTL_SLOW"
	EnvExecSharedLink     = "ASKCTL_SHARED_LINK" // "1": the profile declares one link for all sessions
	EnvExecOpLimit        = "ASKCTL_LIMIT_OP"
	EnvExecStartLimit     = "ASKCTL_LIMIT_START"
	EnvExecReconnectLimit = "ASKCTL_LIMIT_RECONNECT"
)

func startExecSurface(s Spec) (*execSurface, error) {
	cmd := exec.Command(s.Command, s.Args...)
	cmd.Env = os.Environ()
	for k, v := range s.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	// The adapter's own waits (its bridge's replies, a chat's delivery)
	// fit in the harness's: it is told the limits it is held to, already
	// scaled by the slow factor, and the factor itself.
	slow := s.Slow
	if slow <= 0 {
		slow = 1
	}
	cmd.Env = append(cmd.Env, EnvExecSlow+"="+strconv.FormatFloat(slow, 'f', -1, 64),
		EnvExecOpLimit+"="+s.OpLimit().String(), EnvExecStartLimit+"="+s.StartLimit().String(), EnvExecReconnectLimit+"="+s.ReconnectLimit().String())
	if s.SharedLink {
		cmd.Env = append(cmd.Env, EnvExecSharedLink+"=1")
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	e := &execSurface{reply: s.OpLimit(), first: s.StartLimit(), reconn: s.ReconnectLimit(), cmd: cmd, stdin: stdin, stderr: &tailBuffer{max: 8 << 10}, waiting: map[int]chan execReply{},
		sinks: map[string]func(Event){}, done: make(chan struct{})}
	cmd.Stderr = e.stderr
	if s.Log != "" {
		f, err := os.OpenFile(s.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return nil, fmt.Errorf("the exec surface's log: %w", err)
		}
		e.log = &trafficLog{f: f}
		cmd.Stderr = io.MultiWriter(e.stderr, e.log.writer("stderr"))
	}
	// Its own process group, so Close ends whatever it started; and Wait
	// does not wait for children holding its output open.
	proc.SetGroup(cmd)
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		e.log.close()
		return nil, fmt.Errorf("starting the exec surface %s: %w", s.Command, err)
	}
	go e.read(stdout)
	return e, nil
}

func (e *execSurface) Kind() string { return "exec" }

func (e *execSurface) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	line := 0
	var fail error
	for sc.Scan() {
		line++
		e.log.line("<", sc.Bytes())
		var rep execReply
		if err := json.Unmarshal(sc.Bytes(), &rep); err != nil {
			fail = fmt.Errorf("exec surface stdout line %d: %v: %.200q", line, err, sc.Text())
			break
		}
		if rep.Event != nil {
			var ev Event
			if err := json.Unmarshal(rep.Event, &ev); err != nil {
				fail = fmt.Errorf("exec surface stdout line %d: event: %v", line, err)
				break
			}
			ev.T, ev.Conn, ev.Raw = time.Now(), rep.Conn, rep.Event
			e.mu.Lock()
			sink := e.sinks[rep.Conn]
			e.mu.Unlock()
			if sink != nil {
				sink(ev)
			}
			continue
		}
		if rep.ID == nil {
			fail = fmt.Errorf("exec surface stdout line %d: neither a reply (id) nor an event", line)
			break
		}
		e.mu.Lock()
		ch := e.waiting[*rep.ID]
		delete(e.waiting, *rep.ID)
		e.mu.Unlock()
		if ch != nil {
			ch <- rep
		}
	}
	if fail == nil {
		fail = sc.Err()
	}
	werr := e.cmd.Wait()
	if fail == nil {
		fail = fmt.Errorf("the exec surface exited (%v)", werr)
	}
	if tail := lastLines(e.stderr.String(), 5); tail != "" {
		// On the error's own line: a report shows a reason's first line.
		fail = fmt.Errorf("%w; its stderr ends: %s", fail, tail)
	}
	e.mu.Lock()
	e.dead = fail
	for id, ch := range e.waiting {
		close(ch)
		delete(e.waiting, id)
	}
	sinks := e.sinks
	e.sinks = map[string]func(Event){}
	e.mu.Unlock()
	for conn, sink := range sinks {
		sink(Event{T: time.Now(), Conn: conn, Type: EventClosed, Reason: fail.Error()})
	}
	close(e.done)
}

func (e *execSurface) call(ctx context.Context, req map[string]any) (execReply, error) {
	e.mu.Lock()
	if e.dead != nil {
		e.mu.Unlock()
		return execReply{}, e.dead
	}
	e.nextID++
	id := e.nextID
	req["id"] = id
	ch := make(chan execReply, 1)
	e.waiting[id] = ch
	e.mu.Unlock()
	data, _ := json.Marshal(req)
	err := e.write(append(data, '\n'))
	if err != nil {
		// It died: say why, with its stderr, once its end is read.
		select {
		case <-e.done:
			e.mu.Lock()
			defer e.mu.Unlock()
			return execReply{}, e.dead
		case <-time.After(2 * time.Second):
		}
		return execReply{}, fmt.Errorf("writing to the exec surface: %w", err)
	}
	// The first reply includes the adapter's own start; a session start
	// includes the bridge spawning an agent: both get the start limit.
	limit := e.reply
	e.mu.Lock()
	if !e.replied || req["op"] == "start" {
		limit = max(limit, e.first)
	}
	if req["op"] == "resume" { // a person reconnecting: limits.reconnect
		limit = max(limit, e.reconn)
	}
	e.mu.Unlock()
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case rep, ok := <-ch:
		if !ok {
			e.mu.Lock()
			defer e.mu.Unlock()
			return execReply{}, e.dead
		}
		e.mu.Lock()
		e.replied = true
		e.mu.Unlock()
		switch {
		case rep.Unsupported:
			op, _ := req["op"].(string)
			return rep, &Unsupported{Op: op, Message: rep.Error}
		case rep.Error != "":
			return rep, &Rejected{Code: rep.Code, Message: rep.Error}
		case rep.Ignored:
			return rep, ErrIgnored
		}
		return rep, nil
	case <-t.C:
		e.mu.Lock()
		delete(e.waiting, id)
		e.mu.Unlock()
		return execReply{}, fmt.Errorf("the exec surface did not reply to %s (id %d) within %v (the profile's limits.%s)", req["op"], id, limit, limitName(req["op"], limit > e.reply))
	case <-ctx.Done():
		e.mu.Lock()
		delete(e.waiting, id)
		e.mu.Unlock()
		return execReply{}, ctx.Err()
	}
}

func (e *execSurface) Start(ctx context.Context, prompt string) (string, error) {
	rep, err := e.call(ctx, map[string]any{"op": "start", "prompt": prompt})
	if err != nil {
		return "", err
	}
	if rep.Session == "" {
		return "", fmt.Errorf("the exec surface's reply to start names no session")
	}
	return rep.Session, nil
}

func (e *execSurface) Open(ctx context.Context, session string, sink func(Event)) (Conn, error) {
	e.mu.Lock()
	e.nextCon++
	conn := "c" + strconv.Itoa(e.nextCon)
	e.sinks[conn] = sink
	e.mu.Unlock()
	if _, err := e.call(ctx, map[string]any{"op": "open", "session": session, "conn": conn}); err != nil {
		e.mu.Lock()
		delete(e.sinks, conn)
		e.mu.Unlock()
		return nil, err
	}
	return &execConn{e: e, conn: conn}, nil
}

// write writes one request line, with a deadline: a command that stops
// reading cannot hang the harness.
func (e *execSurface) write(line []byte) error {
	e.wmu.Lock()
	defer e.wmu.Unlock()
	e.log.line(">", bytes.TrimRight(line, "\n"))
	done := make(chan error, 1)
	go func() {
		_, err := e.stdin.Write(line)
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(e.reply):
		return fmt.Errorf("the exec surface has not read its stdin for %v", e.reply)
	}
}

func (e *execSurface) Close() error {
	_ = e.stdin.Close()
	select {
	case <-e.done:
	case <-time.After(3 * time.Second):
		proc.KillGroup(e.cmd)
		_ = e.cmd.Process.Kill()
		select {
		case <-e.done:
		case <-time.After(5 * time.Second): // WaitDelay has ended Wait by now
		}
	}
	proc.KillGroup(e.cmd)
	e.log.close()
	return nil
}

// trafficLog is an exec adapter's traffic, kept for its author (Spec.Log,
// askctl conformance --keep): "> " a request, "< " what it wrote on
// stdout, "stderr: " what it wrote on stderr, each line timed.
type trafficLog struct {
	mu sync.Mutex
	f  *os.File
}

func (l *trafficLog) line(dir string, b []byte) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.f, "%s %s %s\n", time.Now().Format("15:04:05.000000"), dir, b)
}

// writer is an io.Writer whose lines are logged as dir.
func (l *trafficLog) writer(dir string) io.Writer {
	return writerFunc(func(p []byte) (int, error) {
		for _, ln := range bytes.Split(bytes.TrimRight(p, "\n"), []byte("\n")) {
			l.line(dir+":", ln)
		}
		return len(p), nil
	})
}

func (l *trafficLog) close() {
	if l != nil {
		l.mu.Lock()
		l.f.Close()
		l.mu.Unlock()
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

type execConn struct {
	e    *execSurface
	conn string
}

func (c *execConn) Pending(ctx context.Context) ([]Pending, error) {
	rep, err := c.e.call(ctx, map[string]any{"op": "pending", "conn": c.conn})
	return rep.Pending, err
}

// Sync: the command answers each operation when it is done, so there is
// nothing to wait for.
func (c *execConn) Sync(context.Context) error { return nil }

func (c *execConn) Answer(ctx context.Context, qid string, answers map[string][]string) (Ack, error) {
	rep, err := c.e.call(ctx, map[string]any{"op": "answer", "conn": c.conn, "question_id": qid, "answers": answers})
	if err != nil {
		return Ack{}, err
	}
	return Ack{Status: rep.Status, Missing: rep.Missing}, nil
}

func (c *execConn) Skip(ctx context.Context, qid, reason string) error {
	_, err := c.e.call(ctx, map[string]any{"op": "skip", "conn": c.conn, "question_id": qid, "reason": reason})
	return err
}

func (c *execConn) SendRaw(ctx context.Context, qid string, raw []byte) error {
	_, err := c.e.call(ctx, map[string]any{"op": "raw", "conn": c.conn, "question_id": qid, "data": string(raw)})
	return err
}

func (c *execConn) Permit(ctx context.Context, id string, allow bool, reason string) error {
	_, err := c.e.call(ctx, map[string]any{"op": "permit", "conn": c.conn, "question_id": id, "allow": allow, "reason": reason})
	return err
}

// Probe asks the adapter whether it has op: {"op":OP,"conn":C,"probe":true}
// with no other field. An *Unsupported when it replies unsupported; any
// other reply (an adapter that knows nothing of probes tries the operation,
// which its bridge refuses) is read as having it.
func (c *execConn) Probe(ctx context.Context, op string) error {
	_, err := c.e.call(ctx, map[string]any{"op": op, "conn": c.conn, "probe": true})
	var un *Unsupported
	if errors.As(err, &un) {
		return err
	}
	return nil
}

// Drop and Resume: the person's link drops as a network's would (the
// adapter ends its event stream and keeps where it was), and comes back
// asking for what it missed (an SSE Last-Event-ID, a chat's history since
// a message). An adapter without them replies unsupported, and the row
// that needs them is skipped.
func (c *execConn) Drop(ctx context.Context) error {
	_, err := c.e.call(ctx, map[string]any{"op": "drop", "conn": c.conn})
	return err
}

func (c *execConn) Resume(ctx context.Context) error {
	_, err := c.e.call(ctx, map[string]any{"op": "resume", "conn": c.conn})
	return err
}

func (c *execConn) Close() error {
	_, err := c.e.call(context.Background(), map[string]any{"op": "close", "conn": c.conn})
	c.e.mu.Lock()
	delete(c.e.sinks, c.conn)
	c.e.mu.Unlock()
	return err
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// lastLines is the last n non-blank lines of s on one line, " | " between
// them, each escaped and the whole bounded.
func lastLines(s string, n int) string {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	lines = lines[max(0, len(lines)-n):]
	return clip.String(strings.Join(lines, " | "), 1000)
}

// limitName is the profile's limit a reply to op was given.
func limitName(op any, longer bool) string {
	switch {
	case op == "resume" && longer:
		return "reconnect"
	case longer:
		return "start"
	}
	return "op"
}
