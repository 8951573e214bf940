package harness

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/askctl/askctl/profile"
	"github.com/askctl/askctl/scenarios"
	"github.com/askctl/askctl/surface"
	"github.com/askctl/askctl/transcript"
)

// Env is one run against a bridge: the bridge, its surface, and everything
// its agents and surfaces have said, as State for expectations.
type Env struct {
	bridge *Bridge
	surf   surface.Surface
	// rendered: the surface reads questions as a page shows them
	// (surface.Spec.Renders), their white space folded.
	rendered bool

	mu      sync.Mutex
	st      State
	changed chan struct{} // closed and replaced on every change
	cancel  func()
	closed  bool
}

// SetupError is a failure to set the bridge up (start it, restart it, or
// start a session through it), as opposed to a requirement failing: what
// the case checks was never reached. A suite stops at the first.
type SetupError struct {
	Op  string // what was being done: "starting the bridge", …
	Err error
}

func (e *SetupError) Error() string { return e.Op + ": " + e.Err.Error() }
func (e *SetupError) Unwrap() error { return e.Err }

// NewEnv starts the bridge of p and opens its surface. Its errors are
// *SetupError.
func NewEnv(ctx context.Context, p *profile.Profile, opts Options) (*Env, error) {
	b, err := StartBridge(ctx, p, opts)
	if err != nil {
		return nil, &SetupError{Op: "starting the bridge", Err: err}
	}
	spec := b.profile.Surface
	spec.Slow, spec.Limits = opts.Slow, b.profile.Limits
	if opts.SurfaceLog {
		spec.Log = filepath.Join(b.vars["WORK"], "surface.log") // beside bridge.log, for askctl conformance --keep
	}
	s, err := surface.New(spec)
	if err != nil {
		b.Close()
		return nil, &SetupError{Op: "starting the bridge", Err: err}
	}
	// A surface with its own start-up (a browser, a logged-in tab) is
	// ready before the first session, so that session's first question
	// is seen.
	if w, ok := s.(surface.Warmer); ok {
		wctx, cancel := context.WithTimeout(ctx, spec.StartLimit())
		err := w.Warm(wctx)
		cancel()
		if err != nil {
			s.Close()
			b.Close()
			return nil, &SetupError{Op: "opening the surface", Err: err}
		}
	}
	e := &Env{bridge: b, surf: s, changed: make(chan struct{}), rendered: spec.Renders(),
		st: State{sessions: map[string]*SessionState{}, byAgent: map[string]*SessionState{}, reconnects: b.profile.Capabilities.Has("reconnect")}}
	e.cancel = b.Subscribe(transcript.Func(e.onRecord))
	return e, nil
}

// Bridge is the bridge under test.
func (e *Env) Bridge() *Bridge { return e.bridge }

// Surface is the bridge's surface, as the person reaches it: what it can do
// beyond surface.Surface is told by the interfaces it implements.
func (e *Env) Surface() surface.Surface { return e.surf }

// Close disconnects every connection, stops the surface and the bridge.
func (e *Env) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	var conns []surface.Conn
	for _, d := range e.st.drivers {
		for _, c := range d.conns {
			conns = append(conns, c)
		}
	}
	e.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
	}
	_ = e.surf.Close()
	err := e.bridge.Close()
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
	if s := e.st.byAgent[r.Session]; s != nil {
		s.add(r)
	} else {
		e.st.stray = append(e.st.stray, r)
	}
	e.changedLocked()
	return nil
}

func (e *Env) session(alias string) (*SessionState, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.st.sessions[alias]
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
// open: its questions are asked while no person is connected. A bridge that
// will not start the session, or spawns no agent for it, is a *SetupError.
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
	id, err := e.surf.Start(ctx, prompt)
	if err != nil {
		forget()
		return &SetupError{Op: fmt.Sprintf("starting session %s through the %s surface", alias, e.surf.Kind()), Err: err}
	}
	e.mu.Lock()
	s.id = id
	e.mu.Unlock()
	select {
	case <-sl.claimed:
	case <-time.After(e.bridge.opts.ClaimTimeout):
		forget()
		return &SetupError{Op: "starting session " + alias, Err: fmt.Errorf("the bridge started session %s (%s), but no agent asked the harness what to play within %v: the bridge spawned no claude, or not the harness's shim (${CLAUDE}) — is the profile's \"claude\" (%q) how this bridge finds its CLI? The bridge's log:\n%s",
			alias, id, e.bridge.opts.ClaimTimeout, e.bridge.profile.Claude, e.bridge.LogTail(15))}
	case <-ctx.Done():
		forget()
		return ctx.Err()
	}
	return nil
}

// expectAgent registers session alias and tells the director an agent will
// ask what to play: sc. forget undoes both, and closes the connections the
// session opened.
func (e *Env) expectAgent(alias string, sc *scenarios.Scenario, agentTimeout time.Duration, mcp bool) (*SessionState, *slot, func(), error) {
	e.mu.Lock()
	if e.st.sessions[alias] != nil {
		e.mu.Unlock()
		return nil, nil, nil, fmt.Errorf("session %q exists", alias)
	}
	e.mu.Unlock()
	sl := &slot{alias: alias, name: sc.Name, scenario: string(sc.Source), timeout: agentTimeout}
	d := e.bridge.dir
	if err := d.expect(sl); err != nil {
		return nil, nil, nil, err
	}
	s := newSessionState(alias, sl.agentID, sc, mcp)
	e.mu.Lock()
	e.st.sessions[alias] = s
	e.st.byAgent[sl.agentID] = s
	e.mu.Unlock()
	forget := func() {
		d.abandon(sl)
		e.mu.Lock()
		delete(e.st.sessions, alias)
		delete(e.st.byAgent, sl.agentID)
		conns := e.st.driver(alias).conns
		delete(e.st.drivers, alias)
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
	return e.open(ctx, alias, conn, false, -1)
}

// OpenAfter opens connection conn to alias's session as a client that
// heard event lastID of some log before (surface.AfterOpener): 0, the
// start of the log; or an id ahead of the bridge's, another log's. An
// *surface.Unsupported where the surface has no such opening.
func (e *Env) OpenAfter(ctx context.Context, alias, conn string, lastID int64) error {
	if err := e.afterOpener(); err != nil {
		return err
	}
	return e.open(ctx, alias, conn, false, lastID)
}

// Takeover says why the bridge may hold connection conn of alias's session
// taken over: TakenLater when the case opened another connection of the
// session after it (a takeover the case made), TakenForeign when conn was
// told of a takeover for another session, TakenBack when conn took the
// session back after the last one opened (Reclaim), TakenUnmade otherwise
// (none the case made: the bridge holds the wrong connection taken).
func (e *Env) Takeover(alias, conn string) Taken {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.st.sessions[alias]
	d := e.st.drivers[alias]
	if s == nil || d == nil {
		return TakenUnmade
	}
	if at, ok := d.opened[conn]; ok {
		for other, t := range d.opened {
			if other != conn && d.conns[other] != nil && t.After(at) {
				return TakenLater
			}
		}
	}
	for _, ev := range s.told {
		if ev.Conn == conn && ev.Type == surface.EventTaken && ev.Session != "" && ev.Session != s.id {
			return TakenForeign
		}
	}
	if d.reclaimed[conn] {
		return TakenBack
	}
	return TakenUnmade
}

// Taken is why a connection is held taken over (Env.Takeover).
type Taken int

const (
	TakenUnmade  Taken = iota // no takeover the case made
	TakenLater                // the case opened a later connection of the session
	TakenForeign              // another session's connection took it over
	TakenBack                 // none: conn took the session back since (Reclaim)
)

// OpenAll opens connection conn as a view of every session (a dashboard),
// where the surface has one, and files its events under alias's session.
func (e *Env) OpenAll(ctx context.Context, alias, conn string) error {
	return e.open(ctx, alias, conn, true, -1)
}

func (e *Env) open(ctx context.Context, alias, conn string, all bool, after int64) error {
	s, err := e.session(alias)
	if err != nil {
		return err
	}
	e.mu.Lock()
	d := e.st.driver(alias)
	if d.conns[conn] != nil {
		e.mu.Unlock()
		return fmt.Errorf("session %s: connection %s is open", alias, conn)
	}
	d.renew(s, conn)
	id := s.id
	if all {
		id = ""
	} else if id == "" {
		e.mu.Unlock()
		return fmt.Errorf("session %s: the bridge's session is not known yet (a route MCP session is known by its first question: await it first)", alias)
	}
	e.mu.Unlock()
	opener := e.surf.Open
	if after >= 0 {
		opener = func(ctx context.Context, session string, sink func(surface.Event)) (surface.Conn, error) {
			return e.surf.(surface.AfterOpener).OpenAfter(ctx, session, after, sink)
		}
	}
	c, err := opener(ctx, id, func(ev surface.Event) {
		if e.rendered {
			s.unfold(&ev)
		}
		if all && ev.Session != "" {
			e.mu.Lock()
			if s.mcp && s.id == "" && s.mcpQuestion(ev) && !e.st.bound(ev.Session) {
				s.id = ev.Session // the session the bridge made for the agent's MCP server
			} else if s.mcp && s.id == "" && s.altered == "" && !e.st.bound(ev.Session) {
				if asked, ok := s.mcpAltered(ev); ok {
					s.altered = fmt.Sprintf("the surface showed question %s (bridge session %s) asking %q: the text the agent asked, %q, with its white space changed; a question reaches the surface unchanged", ev.QuestionID, ev.Session, ev.Questions[0].Question, asked)
					e.changedLocked()
				}
			}
			mine := ev.Session == s.id
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
	d = e.st.driver(alias)
	d.conns[conn] = c
	d.opened[conn] = time.Now() // from here, whatever is pending must reach it
	e.mu.Unlock()
	return nil
}

// Reclaim takes alias's session back on connection conn after a later
// connection took it over, as its person does (a page's "Answer here
// again": surface.Reclaimer); a connection without such an operation
// (or whose client has no such control) closes and connects again under
// its name, as any client does. Either
// way, what conn heard before is another connection's from here (conn#N),
// and conn is held to what a connection opened now must hear.
func (e *Env) Reclaim(ctx context.Context, alias, conn string) error {
	s, err := e.session(alias)
	if err != nil {
		return err
	}
	e.mu.Lock()
	c := e.st.driver(alias).conns[conn]
	e.mu.Unlock()
	if c == nil {
		return fmt.Errorf("session %s has no connection %s", alias, conn)
	}
	r, ok := c.(surface.Reclaimer)
	if !ok {
		return e.reopen(ctx, alias, conn)
	}
	e.mu.Lock()
	e.st.driver(alias).renew(s, conn)
	e.mu.Unlock()
	if err := r.Reclaim(ctx); err != nil {
		if errors.As(err, new(*surface.Unsupported)) {
			return e.reopen(ctx, alias, conn)
		}
		return fmt.Errorf("session %s: connection %s taking the session back: %w", alias, conn, err)
	}
	e.mu.Lock()
	d := e.st.driver(alias)
	d.opened[conn], d.reclaimed[conn] = time.Now(), true
	e.mu.Unlock()
	return nil
}

// reopen takes the session back on conn as a client with no control of
// its own for it does: it closes and connects again.
func (e *Env) reopen(ctx context.Context, alias, conn string) error {
	if err := e.Disconnect(alias, conn); err != nil {
		return err
	}
	if err := e.Open(ctx, alias, conn); err != nil {
		return err
	}
	e.mu.Lock()
	e.st.driver(alias).reclaimed[conn] = true
	e.mu.Unlock()
	return nil
}

func (e *Env) onSurface(s *SessionState, conn string, ev surface.Event) {
	ev.Conn = conn
	e.mu.Lock()
	defer e.mu.Unlock()
	s.show(ev)
	e.changedLocked()
}

// Disconnect closes connection conn of alias's session.
func (e *Env) Disconnect(alias, conn string) error {
	s, err := e.session(alias)
	if err != nil {
		return err
	}
	e.mu.Lock()
	d := e.st.driver(s.alias)
	c := d.conns[conn]
	delete(d.conns, conn)
	e.mu.Unlock()
	if c == nil {
		return fmt.Errorf("session %s has no connection %s", alias, conn)
	}
	return c.Close()
}

func (e *Env) conn(alias, conn string) (*SessionState, surface.Conn, error) {
	s, err := e.session(alias)
	if err != nil {
		return nil, nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	c := e.st.driver(alias).conns[conn]
	if c == nil {
		return nil, nil, fmt.Errorf("session %s has no open connection %s", alias, conn)
	}
	return s, c, nil
}

// Answer answers question qid of alias's session over connection conn.
func (e *Env) Answer(ctx context.Context, alias, conn, qid string, answers map[string][]string) (surface.Ack, error) {
	s, c, err := e.conn(alias, conn)
	if err != nil {
		return surface.Ack{}, err
	}
	t0 := time.Now()
	ack, err := c.Answer(ctx, qid, answers)
	if err == nil {
		e.gave(s, qid, answers)
	}
	if err == nil && ack.Status != "held" {
		// The answer latency runs from the answer that completed the set.
		e.answeredAt(s, qid, t0)
	}
	return ack, err
}

// gave notes answers as what the person gave for question qid: what the
// agent's answer is held to (a held part, then the rest).
func (e *Env) gave(s *SessionState, qid string, answers map[string][]string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if s.sent[qid] == nil {
		s.sent[qid] = map[string][]string{}
	}
	for q, labels := range answers {
		s.sent[qid][q] = labels
	}
}

// answeredAt notes when the person first resolved question qid, where the
// answer latency starts.
func (e *Env) answeredAt(s *SessionState, qid string, t time.Time) {
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
		e.mu.Lock()
		s.skipped[qid] = true
		e.mu.Unlock()
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

// connAs is connection conn of alias's session as T, an operation only
// some surfaces' connections have; an *surface.Unsupported naming op, and
// why, when it has not.
func connAs[T any](e *Env, alias, conn, op, why string) (T, error) {
	var zero T
	_, c, err := e.conn(alias, conn)
	if err != nil {
		return zero, err
	}
	t, ok := c.(T)
	if !ok {
		return zero, &surface.Unsupported{Op: op, Message: why}
	}
	return t, nil
}

// resumer is connection conn of alias's session as a surface.Resumer; an
// *surface.Unsupported when the surface has no resume operation.
func (e *Env) resumer(alias, conn string) (surface.Resumer, error) {
	return connAs[surface.Resumer](e, alias, conn, "resume", "the surface's connections do not resume a dropped event stream")
}

// Drop cuts the event stream of connection conn of alias's session, to be
// resumed (Resume); an *surface.Unsupported when the surface has no resume
// operation.
func (e *Env) Drop(ctx context.Context, alias, conn string) error {
	r, err := e.resumer(alias, conn)
	if err != nil {
		return err
	}
	e.cutNow(alias, conn)
	return r.Drop(ctx)
}

// backNow notes that connection conn of alias's session has its stream
// back: what it hears from here is live again.
func (e *Env) backNow(alias, conn string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.st.driver(alias).back[conn] = time.Now()
}

// cutNow notes that connection conn of alias's session loses its stream
// now: what it hears from here may be late by as long as it is away.
func (e *Env) cutNow(alias, conn string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.st.driver(alias).cut[conn] = time.Now()
}

// offliner is connection conn of alias's session as a surface.Offliner;
// an *surface.Unsupported when its client cannot be taken offline.
func (e *Env) offliner(alias, conn string) (surface.Offliner, error) {
	return connAs[surface.Offliner](e, alias, conn, "offline", "the surface's connections have no client of their own to take offline")
}

// Offline takes the network away from connection conn's client, the client
// left open (surface.Offliner); an *surface.Unsupported where it cannot.
func (e *Env) Offline(ctx context.Context, alias, conn string) error {
	o, err := e.offliner(alias, conn)
	if err != nil {
		return err
	}
	e.cutNow(alias, conn)
	return o.Offline(ctx)
}

// Online gives connection conn's client its network back, and returns once
// it has reconnected by itself and heard the bridge's replay.
func (e *Env) Online(ctx context.Context, alias, conn string) error {
	o, err := e.offliner(alias, conn)
	if err != nil {
		return err
	}
	if err := o.Online(ctx); err != nil {
		return err
	}
	e.backNow(alias, conn)
	return nil
}

// Stop stops alias's session as its person does from the surface (the
// bridge ends its agent); an *surface.Unsupported where the surface has no
// stop operation.
func (e *Env) Stop(ctx context.Context, alias string) error {
	s, err := e.session(alias)
	if err != nil {
		return err
	}
	st, ok := e.surf.(surface.Stopper)
	if !ok {
		return &surface.Unsupported{Op: "stop", Message: "the surface has no operation that stops a session"}
	}
	e.mu.Lock()
	id := s.id
	e.mu.Unlock()
	if id == "" {
		return fmt.Errorf("session %s: the bridge's session is not known yet", alias)
	}
	return st.Stop(ctx, id)
}

// Supports is nil when connection conn of alias's session has operation
// op ("resume": Drop and Resume; "after": connections opened after an event
// id, OpenAfter, of the surface's, whatever alias and conn; "offline":
// Offline and Online), else an
// *surface.Unsupported naming it: a row
// asks before it sets up what only that operation checks.
func (e *Env) Supports(alias, conn, op string) error {
	switch op {
	case "resume":
		_, err := e.resumer(alias, conn)
		return err
	case "after":
		return e.afterOpener()
	case "offline":
		_, err := e.offliner(alias, conn)
		return err
	}
	return fmt.Errorf("no operation %q to ask about (want resume, after or offline)", op)
}

// afterOpener: nil where the surface's connections open after an event id
// (OpenAfter), an *surface.Unsupported otherwise.
func (e *Env) afterOpener() error {
	if _, ok := e.surf.(surface.AfterOpener); !ok {
		return &surface.Unsupported{Op: "connect -after", Message: "the surface has no event ids to resume after"}
	}
	return nil
}

// Resume reconnects the stream Drop cut, from the last event it heard.
func (e *Env) Resume(ctx context.Context, alias, conn string) error {
	r, err := e.resumer(alias, conn)
	if err != nil {
		return err
	}
	if err := r.Resume(ctx); err != nil {
		return err
	}
	e.backNow(alias, conn)
	return nil
}

// Permit allows or denies another tool's permission prompt over connection
// conn of alias's session; an *surface.Unsupported when the surface has no permit
// operation.
func (e *Env) Permit(ctx context.Context, alias, conn, promptID string, allow bool, reason string) error {
	p, err := connAs[surface.Permitter](e, alias, conn, "permit", "the adapter cannot answer other tools' permission prompts")
	if err != nil {
		return err
	}
	return p.Permit(ctx, promptID, allow, reason)
}

// Pending lists what connection conn of alias's session shows as waiting.
func (e *Env) Pending(ctx context.Context, alias, conn string) ([]surface.Pending, error) {
	_, c, err := e.conn(alias, conn)
	if err != nil {
		return nil, err
	}
	return c.Pending(ctx)
}

// Restart restarts the bridge (kill: as a crash). Open connections are
// dropped; reopen them.
func (e *Env) Restart(ctx context.Context, kill bool) error {
	return e.restart("restarting the bridge", func() error { return e.bridge.Restart(ctx, kill) })
}

// RestartCrashingAt restarts the bridge, as Restart does (killing it when
// kill), armed to end itself at crash point (capabilities.crash); Crashed
// waits for that and starts it again. Connections must be reopened after
// each. A point the profile does not declare is an *surface.Unsupported.
func (e *Env) RestartCrashingAt(ctx context.Context, point string, kill bool) error {
	if err := e.bridge.undeclared(point); err != nil {
		return err // nothing restarts: no connection closed, no restart noted
	}
	return e.restart("restarting the bridge armed to crash at "+point, func() error { return e.bridge.RestartCrashingAt(ctx, point, kill) })
}

// restart closes every connection, notes the restart, and restarts the
// bridge by do: its failure is a *SetupError (op), but for an
// *surface.Unsupported.
func (e *Env) restart(op string, do func() error) error {
	e.closeConns()
	e.mu.Lock()
	e.st.restarts = append(e.st.restarts, time.Now())
	e.mu.Unlock()
	if err := do(); err != nil {
		if un := (*surface.Unsupported)(nil); errors.As(err, &un) {
			return err
		}
		return &SetupError{Op: op, Err: err}
	}
	if w, ok := e.surf.(surface.RestartWatcher); ok {
		w.BridgeRestarted()
	}
	return nil
}

// Crashed waits, as long as ctx allows, for the armed bridge to end itself
// at its crash point, and starts it again. The connections are closed:
// they must be reopened, as after Restart.
func (e *Env) Crashed(ctx context.Context) error {
	err := e.bridge.Crashed(ctx)
	e.closeConns()
	e.mu.Lock()
	e.st.restarts = append(e.st.restarts, time.Now())
	e.mu.Unlock()
	if err != nil {
		if se := (startError{}); errors.As(err, &se) {
			return &SetupError{Op: "starting the bridge again after its crash", Err: se.error}
		}
		return err
	}
	if w, ok := e.surf.(surface.RestartWatcher); ok {
		w.BridgeRestarted()
	}
	return nil
}

// closeConns closes and forgets every surface connection.
func (e *Env) closeConns() {
	e.mu.Lock()
	var conns []surface.Conn
	for _, d := range e.st.drivers {
		for name, c := range d.conns {
			conns = append(conns, c)
			delete(d.conns, name)
		}
	}
	e.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
	}
}

// Await waits until exp is met. It fails at once when exp is unmeetable,
// and when ctx ends, with what was seen.
func (e *Env) Await(ctx context.Context, exp Expectation) error {
	begin, ok := ctx.Value(beginKey{}).(time.Time)
	if !ok {
		begin = time.Now()
	}
	d, afterStart := ctx.Value(afterStartKey{}).(time.Duration)
	for {
		e.mu.Lock()
		v, why := exp.Check(&e.st)
		ch := e.changed
		e.mu.Unlock()
		switch v {
		case Met:
			return nil
		case Unmeetable:
			// What happened instead first: it is what a bridge author acts on.
			return fmt.Errorf("%s\n  (so this can no longer happen: %s)", why, exp.Description)
		}
		if ctx.Err() != nil || afterStart && !time.Now().Before(e.readyDeadline(exp.alias, begin, d)) {
			return e.notMet(exp, afterStart)
		}
		select {
		case <-ch:
		case <-time.After(100 * time.Millisecond): // expectations that depend on time
		case <-e.bridge.Exited():
			// The bridge is gone: look once more, then fail.
			e.mu.Lock()
			v, _ = exp.Check(&e.st)
			e.mu.Unlock()
			if v == Met {
				return nil
			}
			return fmt.Errorf("the bridge exited (%v)\n  (so this can no longer happen: %s); its log:\n%s", e.bridge.ExitErr(), exp.Description, e.bridge.LogTail(10))
		case <-ctx.Done(): // (looked at once more above)
		}
	}
}

// notMet is Await's error when its wait ran out: what the expectation
// saw so far (an unmet one may say), an agent that had not started, and
// what the agent waited on meanwhile.
func (e *Env) notMet(exp Expectation, afterStart bool) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	var more string
	v, why := exp.Check(&e.st)
	if v == Unmet && why != "" {
		more = "; so far " + why
	}
	if s := e.st.sessions[exp.alias]; s != nil {
		if afterStart && why == "" && s.exit == nil && e.readyAt(s).IsZero() {
			more += "; the session's agent had not started: " + s.latestAgent(time.Now())
		}
		if w := s.agentWaits(time.Now()); w != "" {
			more += "; meanwhile " + w
		}
	}
	return fmt.Errorf("the following condition was not met in time:\n  %s%s", exp.Description, more)
}

type afterStartKey struct{}

// beginKey: the waits under a context with it count from one moment (the
// waits of one step, such as AwaitQuestion's, share its wait).
type beginKey struct{}

// sharedWait is ctx for waits that share one AfterStart wait from now.
func sharedWait(ctx context.Context) context.Context {
	return context.WithValue(ctx, beginKey{}, time.Now())
}

// AfterStart makes each Await under ctx wait d from when the awaited
// session's agent process is ready (it has written its first line since
// it said hello), rather than from when the Await began. An agent still
// starting does not use the wait up: the real CLI takes seconds to start,
// many more on a busy machine, and a resumed one starts only once the one
// before it has ended. ctx's own deadline still bounds the whole wait (the
// agent's start limit and d). An expectation of no one session waits d.
func AfterStart(ctx context.Context, d time.Duration) context.Context {
	return context.WithValue(ctx, afterStartKey{}, d)
}

// readyAt is when s's agent process was up, zero while it is not (under
// e.mu).
func (e *Env) readyAt(s *SessionState) time.Time {
	switch {
	case e.bridge.opts.RealClaude == "":
		// fakeclaude is ready as it says hello: it is up, and it may
		// write nothing before the bridge talks to it.
		return s.helloAt
	case e.st.restartedSince(s.helloAt):
		// The bridge restarted since the agent said hello: the agent
		// awaited is a resumed one, whose launcher says hello only once
		// the CLI before it has ended (realagent.go: lockHome).
		return time.Time{}
	}
	return s.readyAt
}

// readyDeadline is when an AfterStart wait of d that began at begin on
// alias's session ends: d after the later of begin and its latest agent's
// readiness; far off while that agent is not ready (ctx bounds it then).
func (e *Env) readyDeadline(alias string, begin time.Time, d time.Duration) time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.st.sessions[alias]
	if s == nil {
		return begin.Add(d)
	}
	ready := e.readyAt(s)
	switch {
	case ready.IsZero() && s.exit == nil:
		return begin.Add(100 * 365 * 24 * time.Hour)
	case ready.After(begin):
		return ready.Add(d)
	}
	return begin.Add(d)
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

// Read runs f with the state locked, to read it; f must not keep what it
// reads past its return, nor change it.
func (e *Env) Read(f func(*State)) {
	e.mu.Lock()
	defer e.mu.Unlock()
	f(&e.st)
}
