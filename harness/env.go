package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/askctl/askctl/internal/clip"
	"github.com/askctl/askctl/internal/events"
	"github.com/askctl/askctl/protocol"
	"github.com/askctl/askctl/scenarios"
	"github.com/askctl/askctl/transcript"
	"github.com/tidwall/gjson"
)

// Env is one run against a bridge: the bridge, its surface, and everything
// its agents and surfaces have said, as State for expectations.
type Env struct {
	Bridge  *Bridge
	Surface Surface

	mu      sync.Mutex
	st      State
	changed chan struct{} // closed and replaced on every change
	cancel  func()
	closed  bool
}

// State is what an Env has seen. Expectations read it with the Env locked.
type State struct {
	Sessions map[string]*Session // by alias
	byAgent  map[string]*Session // by the agent's session id
	Stray    []transcript.Record // records of agents the harness did not start
}

// Session is one session the harness started: its agent's records and
// what its surface connections showed.
type Session struct {
	Alias    string
	ID       string // the bridge's id
	AgentID  string // the session id fakeclaude announces
	Scenario *scenarios.Scenario
	// MCP says the harness runs the agent in print mode against the bridge's
	// MCP server (StartMCP); ID is learnt from the surface.
	MCP     bool
	Agent   []transcript.Record
	Surface []SurfaceEvent
	// Exit is the agent's exit status, once it exited (the latest agent
	// process, for a resumed session).
	Exit *int
	// Questions are the question ids the surfaces showed, in order of
	// first appearance; the n-th is the agent's n-th AskUserQuestion.
	Questions []string
	// Current is the question the case works on: the last one awaited.
	Current  string
	answered map[string]time.Time // question id → when the harness first answered it
	consumed map[string]map[string]bool
	conns    map[string]Conn
	gen      map[string]int // connections opened under each name
}

// NewEnv starts the bridge of p and opens its surface.
func NewEnv(ctx context.Context, p *Profile, opts Options) (*Env, error) {
	b, err := StartBridge(ctx, p, opts)
	if err != nil {
		return nil, err
	}
	s, err := NewSurface(b.Profile.Surface)
	if err != nil {
		b.Close()
		return nil, err
	}
	e := &Env{Bridge: b, Surface: s, changed: make(chan struct{}),
		st: State{Sessions: map[string]*Session{}, byAgent: map[string]*Session{}}}
	e.cancel = b.Subscribe(transcript.Func(e.onRecord))
	return e, nil
}

// Close disconnects every connection, stops the surface and the bridge.
func (e *Env) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	var conns []Conn
	for _, s := range e.st.Sessions {
		for _, c := range s.conns {
			conns = append(conns, c)
		}
	}
	e.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
	}
	_ = e.Surface.Close()
	err := e.Bridge.Close()
	e.cancel()
	return err
}

func (e *Env) changedLocked() {
	close(e.changed)
	e.changed = make(chan struct{})
}

func (e *Env) onRecord(r transcript.Record) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.st.byAgent[r.Session]
	if s == nil {
		e.st.Stray = append(e.st.Stray, r)
	} else {
		s.Agent = append(s.Agent, r)
		switch {
		case r.Event == events.EventHello:
			s.Exit = nil // a new agent process (a resume)
		case r.Event == transcript.EventExit && r.Code != nil:
			c := *r.Code
			s.Exit = &c
		}
	}
	e.changedLocked()
	return nil
}

func (e *Env) session(alias string) (*Session, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.st.Sessions[alias]
	if s == nil {
		return nil, fmt.Errorf("no session %q: start it first", alias)
	}
	return s, nil
}

// Start starts a session named alias whose agent plays sc: the harness
// tells the director, asks the surface to start a session with the
// scenario's first prompt, waits for the bridge to spawn the agent, and
// opens the surface connection "main".
func (e *Env) Start(ctx context.Context, alias string, sc *scenarios.Scenario, agentTimeout time.Duration) error {
	if err := e.StartDetached(ctx, alias, sc, agentTimeout); err != nil {
		return err
	}
	return e.Open(ctx, alias, "main")
}

// StartDetached starts a session as Start does, with no surface connection
// open: its questions are asked while no person is connected.
func (e *Env) StartDetached(ctx context.Context, alias string, sc *scenarios.Scenario, agentTimeout time.Duration) error {
	prompt := ""
	for _, st := range sc.Steps {
		if st.Kind == scenarios.KindPrompt {
			prompt = st.Prompt
			break
		}
	}
	if prompt == "" {
		return fmt.Errorf("scenario %s has no prompt step", sc.Name)
	}
	s, sl, forget, err := e.expectAgent(alias, sc, agentTimeout, false)
	if err != nil {
		return err
	}
	id, err := e.Surface.Start(ctx, prompt)
	if err != nil {
		forget()
		return fmt.Errorf("starting session %s through the %s surface: %w", alias, e.Surface.Kind(), err)
	}
	e.mu.Lock()
	s.ID = id
	e.mu.Unlock()
	select {
	case <-sl.claimed:
	case <-time.After(e.Bridge.opts.ClaimTimeout):
		forget()
		return fmt.Errorf("the bridge started session %s (%s), but no agent asked the harness what to play within %v: the bridge spawned no claude, or not the harness's shim (${CLAUDE}) — is the profile's \"claude\" (%q) how this bridge finds its CLI? The bridge's log:\n%s",
			alias, id, e.Bridge.opts.ClaimTimeout, e.Bridge.Profile.Claude, e.Bridge.LogTail(15))
	case <-ctx.Done():
		forget()
		return ctx.Err()
	}
	return nil
}

// expectAgent registers session alias and tells the director an agent will
// ask what to play: sc. forget undoes both, and closes the connections the
// session opened.
func (e *Env) expectAgent(alias string, sc *scenarios.Scenario, agentTimeout time.Duration, mcp bool) (*Session, *slot, func(), error) {
	e.mu.Lock()
	if e.st.Sessions[alias] != nil {
		e.mu.Unlock()
		return nil, nil, nil, fmt.Errorf("session %q exists", alias)
	}
	e.mu.Unlock()
	sl := &slot{alias: alias, name: sc.Name, scenario: string(sc.Source), timeout: agentTimeout}
	d := e.Bridge.dir
	if err := d.expect(sl); err != nil {
		return nil, nil, nil, err
	}
	s := &Session{Alias: alias, AgentID: sl.agentID, Scenario: sc, MCP: mcp, answered: map[string]time.Time{}, consumed: map[string]map[string]bool{}, conns: map[string]Conn{}, gen: map[string]int{}}
	e.mu.Lock()
	e.st.Sessions[alias] = s
	e.st.byAgent[sl.agentID] = s
	e.mu.Unlock()
	forget := func() {
		d.abandon(sl)
		e.mu.Lock()
		delete(e.st.Sessions, alias)
		delete(e.st.byAgent, sl.agentID)
		conns := s.conns
		s.conns = map[string]Conn{}
		e.mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	}
	return s, sl, forget, nil
}

// Open connects a person to alias's session as connection conn (a second
// connection to a session takes it over, where the bridge does that).
func (e *Env) Open(ctx context.Context, alias, conn string) error {
	return e.open(ctx, alias, conn, false)
}

// OpenAll opens connection conn as a view of every session (a dashboard),
// where the surface has one, and files its events under alias's session.
func (e *Env) OpenAll(ctx context.Context, alias, conn string) error {
	return e.open(ctx, alias, conn, true)
}

func (e *Env) open(ctx context.Context, alias, conn string, all bool) error {
	s, err := e.session(alias)
	if err != nil {
		return err
	}
	e.mu.Lock()
	if s.conns[conn] != nil {
		e.mu.Unlock()
		return fmt.Errorf("session %s: connection %s is open", alias, conn)
	}
	// A name used before starts afresh: the old connection's events keep
	// a name of their own.
	s.gen[conn]++
	if s.gen[conn] > 1 {
		old := fmt.Sprintf("%s#%d", conn, s.gen[conn]-1)
		for i := range s.Surface {
			if s.Surface[i].Conn == conn {
				s.Surface[i].Conn = old
			}
		}
		delete(s.consumed, conn)
	}
	id := s.ID
	if all {
		id = ""
	} else if id == "" {
		e.mu.Unlock()
		return fmt.Errorf("session %s: the bridge's session is not known yet (a route MCP session is known by its first question: await it first)", alias)
	}
	e.mu.Unlock()
	c, err := e.Surface.Open(ctx, id, func(ev SurfaceEvent) {
		if all && ev.Session != "" {
			e.mu.Lock()
			if s.MCP && s.ID == "" && s.mcpQuestion(ev) && !e.st.bound(ev.Session) {
				s.ID = ev.Session // the session the bridge made for the agent's MCP server
			}
			mine := ev.Session == s.ID
			e.mu.Unlock()
			if !mine {
				return // another session's, on the dashboard
			}
		}
		e.onSurface(s, conn, ev)
	})
	if err != nil {
		return fmt.Errorf("session %s: opening connection %s: %w", alias, conn, err)
	}
	e.mu.Lock()
	s.conns[conn] = c
	e.mu.Unlock()
	return nil
}

func (e *Env) onSurface(s *Session, conn string, ev SurfaceEvent) {
	ev.Conn = conn
	e.mu.Lock()
	defer e.mu.Unlock()
	s.Surface = append(s.Surface, ev)
	if ev.Type == SurfQuestion && ev.QuestionID != "" && !slices.Contains(s.Questions, ev.QuestionID) {
		s.Questions = append(s.Questions, ev.QuestionID)
	}
	e.changedLocked()
}

// Disconnect closes connection conn of alias's session.
func (e *Env) Disconnect(alias, conn string) error {
	s, err := e.session(alias)
	if err != nil {
		return err
	}
	e.mu.Lock()
	c := s.conns[conn]
	delete(s.conns, conn)
	e.mu.Unlock()
	if c == nil {
		return fmt.Errorf("session %s has no connection %s", alias, conn)
	}
	return c.Close()
}

func (e *Env) conn(alias, conn string) (*Session, Conn, error) {
	s, err := e.session(alias)
	if err != nil {
		return nil, nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	c := s.conns[conn]
	if c == nil {
		return nil, nil, fmt.Errorf("session %s has no open connection %s", alias, conn)
	}
	return s, c, nil
}

// Answer answers question qid of alias's session over connection conn.
func (e *Env) Answer(ctx context.Context, alias, conn, qid string, answers map[string][]string) (Ack, error) {
	s, c, err := e.conn(alias, conn)
	if err != nil {
		return Ack{}, err
	}
	t0 := time.Now()
	ack, err := c.Answer(ctx, qid, answers)
	if err == nil && ack.Status != "held" {
		// The answer latency runs from the answer that completed the set.
		e.answeredAt(s, qid, t0)
	}
	return ack, err
}

// answeredAt notes when the person first resolved question qid, where the
// answer latency starts.
func (e *Env) answeredAt(s *Session, qid string, t time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := s.answered[qid]; !ok {
		s.answered[qid] = t
	}
}

// Skip skips question qid of alias's session over connection conn.
func (e *Env) Skip(ctx context.Context, alias, conn, qid, reason string) error {
	s, c, err := e.conn(alias, conn)
	if err != nil {
		return err
	}
	t0 := time.Now()
	err = c.Skip(ctx, qid, reason)
	if err == nil {
		e.answeredAt(s, qid, t0)
	}
	return err
}

// SendRaw sends raw bytes where an answer to qid goes.
func (e *Env) SendRaw(ctx context.Context, alias, conn, qid string, raw []byte) error {
	_, c, err := e.conn(alias, conn)
	if err != nil {
		return err
	}
	return c.SendRaw(ctx, qid, raw)
}

// Pending lists what connection conn of alias's session shows as waiting.
func (e *Env) Pending(ctx context.Context, alias, conn string) ([]Pending, error) {
	_, c, err := e.conn(alias, conn)
	if err != nil {
		return nil, err
	}
	return c.Pending(ctx)
}

// Restart restarts the bridge (kill: as a crash). Open connections are
// dropped; reopen them.
func (e *Env) Restart(ctx context.Context, kill bool) error {
	e.mu.Lock()
	var conns []Conn
	for _, s := range e.st.Sessions {
		for name, c := range s.conns {
			conns = append(conns, c)
			delete(s.conns, name)
		}
	}
	e.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
	}
	return e.Bridge.Restart(ctx, kill)
}

// Await waits until exp is met. It fails at once when exp is unmeetable,
// and when ctx ends, with what was seen.
func (e *Env) Await(ctx context.Context, exp Expectation) error {
	for {
		e.mu.Lock()
		v, why := exp.Check(&e.st)
		ch := e.changed
		e.mu.Unlock()
		switch v {
		case Met:
			return nil
		case Unmeetable:
			return fmt.Errorf("the following condition is Unmeetable:\n  %s\nreason:\n  %s", exp.Description, why)
		}
		select {
		case <-ch:
		case <-time.After(100 * time.Millisecond): // expectations that depend on time
		case <-e.Bridge.Exited():
			// The bridge is gone: look once more, then fail.
			e.mu.Lock()
			v, _ = exp.Check(&e.st)
			e.mu.Unlock()
			if v == Met {
				return nil
			}
			return fmt.Errorf("the following condition is Unmeetable:\n  %s\nreason:\n  the bridge exited (%v); its log:\n%s", exp.Description, e.Bridge.ExitErr(), e.Bridge.LogTail(10))
		case <-ctx.Done():
			return fmt.Errorf("the following condition was not met in time:\n  %s", exp.Description)
		}
	}
}

// Hold checks that exp stays met for d (for "never happens": Hold of a
// Not). It fails at once when exp stops being met.
func (e *Env) Hold(ctx context.Context, d time.Duration, exp Expectation) error {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		e.mu.Lock()
		v, why := exp.Check(&e.st)
		ch := e.changed
		e.mu.Unlock()
		if v != Met {
			if why == "" {
				why = v.String()
			}
			return fmt.Errorf("the following condition did not hold for %v:\n  %s\nreason:\n  %s", d, exp.Description, why)
		}
		select {
		case <-ch:
		case <-t.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Do runs f with the state locked, for reading or for marking progress
// (Session.Current, what a connection consumed).
func (e *Env) Do(f func(*State)) {
	e.mu.Lock()
	defer e.mu.Unlock()
	f(&e.st)
}

// Consume marks question qid as handled on conn, so the next NewQuestion
// there waits for another, and makes it alias's current question.
func (s *Session) Consume(conn, qid string) {
	if s.consumed[conn] == nil {
		s.consumed[conn] = map[string]bool{}
	}
	s.consumed[conn][qid] = true
	s.Current = qid
}

// ---- what the agent said ----

// AgentRequests are the agent's AskUserQuestion can_use_tool requests, in
// order: request id and when it was sent. In a route MCP session they are
// its MCP tool calls, by tool_use id.
func (s *Session) AgentRequests() []AgentRequest {
	var out []AgentRequest
	for _, r := range s.Agent {
		if r.Dir != transcript.FromCLI {
			continue
		}
		m := gjson.ParseBytes(r.Msg)
		if s.MCP {
			if b := m.Get(`message.content.#(type=="tool_use")`); m.Get("type").String() == protocol.TypeAssistant && strings.HasPrefix(b.Get("name").String(), "mcp__") {
				out = append(out, AgentRequest{ID: b.Get("id").String(), T: r.T, Input: json.RawMessage(b.Get("input").Raw)})
			}
			continue
		}
		if m.Get("type").String() == protocol.TypeControlRequest && m.Get("request.subtype").String() == protocol.SubtypeCanUseTool &&
			m.Get("request.tool_name").String() == protocol.ToolAskUserQuestion {
			out = append(out, AgentRequest{ID: m.Get("request_id").String(), T: r.T, Input: json.RawMessage(m.Get("request.input").Raw)})
		}
	}
	return out
}

// AgentRequest is one AskUserQuestion request the agent sent.
type AgentRequest struct {
	ID    string
	T     time.Time
	Input json.RawMessage
}

// Responses are the control_responses the agent received for request id.
func (s *Session) Responses(requestID string) []transcript.Record {
	var out []transcript.Record
	for _, r := range s.Agent {
		if r.Dir != transcript.ToCLI {
			continue
		}
		m := gjson.ParseBytes(r.Msg)
		if m.Get("type").String() == protocol.TypeControlResponse && m.Get("response.request_id").String() == requestID {
			out = append(out, r)
		}
	}
	return out
}

// RequestOf is the agent's request behind question qid: the n-th question
// the surfaces showed is the agent's n-th AskUserQuestion.
func (s *Session) RequestOf(qid string) (AgentRequest, bool) {
	reqs := s.AgentRequests()
	for i, id := range s.Questions {
		if id == qid && i < len(reqs) {
			return reqs[i], true
		}
	}
	return AgentRequest{}, false
}

// Failures are what the agent reported wrong: protocol errors, broken
// expectations.
func (s *Session) Failures() []string {
	var out []string
	for _, r := range s.Agent {
		switch {
		case r.Event == transcript.EventError:
			out = append(out, fmt.Sprintf("%s: %s", r.Kind, r.Text))
		case r.Event == transcript.EventExpect && r.OK != nil && !*r.OK:
			out = append(out, "expectation: "+r.Text)
		}
	}
	return out
}

// Summary describes what the session saw, for failure messages: the
// agent's messages about questions and the surface events.
func (s *Session) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "session %s (bridge id %s, agent %s, scenario %s)\n", s.Alias, s.ID, s.AgentID, s.Scenario.Name)
	b.WriteString("  agent:\n")
	n := 0
	for _, r := range s.Agent {
		line := ""
		switch {
		case r.IsWire():
			m := gjson.ParseBytes(r.Msg)
			t := m.Get("type").String()
			if t != protocol.TypeControlRequest && t != protocol.TypeControlResponse && t != protocol.TypeControlCancelRequest && t != "result" {
				continue
			}
			line = fmt.Sprintf("%s %s", r.Dir, clip.String(string(r.Msg), 300))
		case r.Event == transcript.EventError || r.Event == transcript.EventExit || (r.Event == transcript.EventExpect && r.OK != nil && !*r.OK):
			line = fmt.Sprintf("%s %s %s", r.Event, r.Kind, r.Text)
			if r.Code != nil {
				line += fmt.Sprintf("code %d", *r.Code)
			}
		default:
			continue
		}
		fmt.Fprintf(&b, "    %s\n", line)
		n++
	}
	if n == 0 {
		b.WriteString("    (nothing)\n")
	}
	b.WriteString("  surface:\n")
	if len(s.Surface) == 0 {
		b.WriteString("    (nothing)\n")
	}
	for _, ev := range s.Surface {
		fmt.Fprintf(&b, "    [%s] %s %s %s\n", ev.Conn, ev.Type, ev.QuestionID, clip.String(ev.Reason, 200))
	}
	return b.String()
}

// Sessions lists the sessions by alias.
func (st *State) List() []*Session {
	var out []*Session
	for _, s := range st.Sessions {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Alias < out[j].Alias })
	return out
}

// bound reports whether a session the harness started is bridge session id.
func (st *State) bound(id string) bool {
	for _, s := range st.Sessions {
		if s.ID == id {
			return true
		}
	}
	return false
}
