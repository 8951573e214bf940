package bridge

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/askctl/askctl/bridgeapi"
	"github.com/askctl/askctl/claudecli"
	"github.com/askctl/askctl/internal/clip"
	"github.com/askctl/askctl/policy"
	"github.com/askctl/askctl/protocol"
	"github.com/askctl/askctl/sdk"
)

// Config configures a Bridge. Zero values are the defaults.
type Config struct {
	// DB is the SQLite file of sessions, questions and events.
	DB string
	// Claude is the CLI each session spawns, with the SDK flags.
	Claude string
	// Args are extra arguments for the CLI.
	Args []string
	// Env is added to each agent's environment (this process's, inherited).
	Env []string
	// SessionEnv resolves what a session's client asked its agent to play
	// (StartOptions.Scenario, a name, and ScenarioText, a scenario's
	// content; either or both may be empty) to the environment its agent
	// gets, added after Env, and the name the session keeps
	// (Session.Scenario), which a resumed agent is resolved from again.
	// askctl serve maps them to fakeclaude's. The bridge opens nothing a
	// client names; an error refuses the session as invalid. Nil refuses
	// every session that names a scenario.
	SessionEnv func(name, text string) (env []string, ref string, err error)
	// Dir is the agents' working directory; empty means this process's.
	Dir string
	// Timeout is how long a question waits for the person; then the agent
	// gets a deny saying it timed out. Default 300s.
	Timeout time.Duration
	// TimeoutInterrupt makes that deny also abort the agent's turn.
	TimeoutInterrupt bool
	// OtherTools decides can_use_tool for tools other than AskUserQuestion:
	// "allow" (default: run with the original input) or "deny".
	OtherTools string
	// StopGrace is how long a stopped session's agent has to exit after its
	// stdin closes before it is killed. Default 5s.
	StopGrace time.Duration
	// MaxStarting bounds the agents starting at once (spawned, and not yet
	// through system/init; at most 250ms each); more session starts wait their
	// turn. Default DefaultMaxStarting: one CPU fewer than there are, so
	// that a burst of starts leaves a CPU to the sessions already running
	// (their questions and answers).
	MaxStarting int
	// Policy, if set, answers or skips questions by rules (askctl serve
	// --policy): each new pending question is decided when it is posed, and
	// acted on at once or after its rule's wait, unless a person settled it
	// first. Every decision is an event naming the rule, and a log line.
	Policy *policy.Policy
	// PolicyBudget bounds the policy's deciding of one question; past it,
	// or once the question is settled, the question is left to a person.
	// Default 1s.
	PolicyBudget time.Duration
	// Logf receives one line per thing worth knowing; nil discards.
	Logf func(format string, args ...any)
	// Crash, when set, is called at each point where a crash tests what
	// the bridge promises (an accepted session is started, an accepted
	// answer reaches its agent exactly once); the kill tests end the
	// process there. The points: CrashAccepted, CrashAnswerCommitted,
	// CrashAnswerWritten, CrashResumeCommitted, CrashAskRead, CrashAskFound.
	Crash func(point string)
}

// The points where Config.Crash is called.
const (
	CrashAccepted        = "session-accepted" // a session stored, its agent not yet spawned
	CrashAnswerCommitted = "answer-committed" // an answer stored, nothing written to the agent
	CrashAnswerWritten   = "answer-written"   // the answer written whole to the agent, not yet marked delivered
	CrashResumeCommitted = "resume-committed" // a late answer stored, the session not yet resumed
	CrashAskRead         = "ask-read"         // an agent's question read, not yet stored
	CrashAskFound        = "ask-found"        // a restarted bridge found the question a lost agent asked, not yet stored
)

func (b *Bridge) crash(point string) {
	if b.cfg.Crash != nil {
		b.cfg.Crash(point)
	}
}

// startSlotHold is the longest one agent's start holds its slot: an agent
// that hangs before system/init delays the starts behind it by this much,
// once. It is short, so that a slow agent (the real CLI takes about a
// second to its system/init) does not make the next session's start, and
// a question already asked, wait its whole start; fakeclaude reaches
// system/init well within it, so a burst of them is still metered.
const startSlotHold = 250 * time.Millisecond

// DefaultTimeout is how long a question waits for the person by default.
const DefaultTimeout = 300 * time.Second

// Bridge holds the agents' questions for people: it spawns agents, turns
// their AskUserQuestion requests into pending questions, tells the surfaces,
// and sends exactly one answer back to each request.
type Bridge struct {
	cfg      Config
	st       *store
	order    keyedLocks // one per session: its events are logged one at a time (a status read and logged together)
	unlock   func()
	closing  bool            // Close runs: agents that exit now leave their questions pending
	stopping map[string]bool // sessions being stopped: their withdrawals say so

	closeOnce sync.Once
	closeErr  error
	ctx       context.Context
	end       context.CancelFunc
	wg        sync.WaitGroup

	mu    sync.Mutex
	live  map[string]*live       // running sessions, by id
	timer map[string]*time.Timer // pending questions' deadlines, by question id
	rule  map[string]*time.Timer // pending questions' policy actions that wait for a person first
	// deciding cancels the policy's deciding of a question, by id: a
	// person settled it, or began to.
	deciding map[string]context.CancelFunc
	// acting counts policy actions under way; Close waits for them.
	acting sync.WaitGroup
	subs   map[*Subscription]bool

	qlocks keyedLocks // one per question: its pose, answers, skips, expiry and withdrawal in turn (the first wins)
	out    outbox     // events logged, in the log's order, for the subscriptions

	revoked map[string]bool // the nonces of page keys logged out (b.mu)

	starting chan struct{} // a slot per agent starting (Config.MaxStarting)
	resuming chan struct{} // as many slots again for resumed sessions: a late answer never waits behind a burst of starts
	subGen   atomic.Int64  // subscriptions made so far; each has its number
}

type live struct {
	s    *sdk.Session
	proc *claudecli.Process
	done chan struct{}
	mcp  *mcpSession // an MCP server's session (askctl mcp): no agent process

	failure atomic.Pointer[string] // the agent's last error result ("Not logged in · …")
	started func()                 // frees the agent's start slot (Config.MaxStarting); idempotent

	// Replies written to the agent and not yet taken in: by the tool_use id
	// whose tool_result the agent writes when it has the reply, the
	// question's id. And turn, for a resumed session, is called once when
	// the agent starts the turn its first message began (system/init): it
	// has the late answer then.
	mu       sync.Mutex
	awaiting map[string]string
	turn     func()
}

// await notes that question qid's reply is written: the agent takes it in
// when it writes the tool_result of toolUseID.
func (l *live) await(toolUseID, qid string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.awaiting == nil {
		l.awaiting = map[string]string{}
	}
	l.awaiting[toolUseID] = qid
}

// takenIn is the question whose reply the agent's line says it took in: a
// user message with the tool_result of a reply awaited.
func (l *live) takenIn(line protocol.Line) (string, bool) {
	if line.Type != protocol.TypeUser {
		return "", false
	}
	var m struct {
		Message struct {
			Content []struct {
				Type      string `json:"type"`
				ToolUseID string `json:"tool_use_id"`
			} `json:"content"`
		} `json:"message"`
	}
	if json.Unmarshal(line.Raw, &m) != nil {
		return "", false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range m.Message.Content {
		if qid, ok := l.awaiting[c.ToolUseID]; ok && c.Type == "tool_result" {
			delete(l.awaiting, c.ToolUseID)
			return qid, true
		}
	}
	return "", false
}

// respond sends a question's resolution to its asker: the agent's
// control_response, or the waiting MCP call.
func (l *live) respond(q *bridgeapi.Question, r protocol.Reply) error {
	if l.mcp != nil {
		l.mcp.resolved(q.ID)
		return nil
	}
	return l.s.Respond(q.RequestID, r)
}

// New opens (or creates) the database and returns a bridge. Sessions a
// previous bridge left running are marked lost; their pending questions stay
// pending, and an answer resumes them.
func New(cfg Config) (*Bridge, error) {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.OtherTools == "" {
		cfg.OtherTools = "allow"
	}
	if cfg.OtherTools != "allow" && cfg.OtherTools != "deny" {
		return nil, fmt.Errorf("other tools: want allow or deny, got %q", cfg.OtherTools)
	}
	if cfg.StopGrace <= 0 {
		cfg.StopGrace = 5 * time.Second
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	if cfg.MaxStarting <= 0 {
		cfg.MaxStarting = DefaultMaxStarting()
	}
	if cfg.PolicyBudget <= 0 {
		cfg.PolicyBudget = time.Second
	}
	unlock, err := lockDB(cfg.DB)
	if err != nil {
		return nil, err
	}
	if fi, err := os.Stat(cfg.DB); err == nil && fi.Size() == 0 {
		cfg.Logf("database %s is an empty file: the bridge starts with no sessions (if it held some, it was truncated)", cfg.DB)
	}
	st, err := openStore(cfg.DB)
	if err != nil {
		unlock()
		return nil, err
	}
	ctx, end := context.WithCancel(context.Background())
	b := &Bridge{cfg: cfg, st: st, unlock: unlock, ctx: ctx, end: end, live: map[string]*live{}, timer: map[string]*time.Timer{}, subs: map[*Subscription]bool{}, stopping: map[string]bool{}}
	b.out.wake, b.out.exited = make(chan struct{}, 1), make(chan struct{})
	b.starting = make(chan struct{}, cfg.MaxStarting)
	b.resuming = make(chan struct{}, cfg.MaxStarting)
	go b.deliver()
	lostAt := time.Now()
	if n, err := st.markLost(ctx, lostAt); err != nil {
		st.Close()
		unlock()
		return nil, err
	} else if n > 0 && defect("lost-on-restart") {
		qs, _ := st.questions(ctx, bridgeapi.QuestionPending, "")
		for _, q := range qs {
			_, _ = st.resolve(ctx, q.ID, bridgeapi.QuestionWithdrawn, nil, "lost", false, time.Now())
		}
	} else if n > 0 {
		cfg.Logf("%d session(s) were running when the bridge last stopped: their pending questions stay listed, and answering one resumes its session", n)
	}
	if b.revoked, err = st.revokedKeys(ctx, time.Now()); err != nil {
		b.end()
		st.Close()
		unlock()
		return nil, err
	}
	if err := b.recover(ctx); err != nil {
		b.end()
		st.Close()
		unlock()
		return nil, err
	}
	return b, nil
}

// Close ends the bridge: its agents are stopped (stdin closed, killed after
// the grace period), but their sessions are marked lost and their pending
// questions stay pending, as after a crash, so a restarted bridge lists them
// and resumes a session when one is answered. Then it ends the
// subscriptions and closes the database.
func (b *Bridge) Close() error {
	b.closeOnce.Do(func() { b.closeErr = b.close() })
	return b.closeErr
}

func (b *Bridge) close() error {
	b.mu.Lock()
	b.closing = true
	ids := make([]string, 0, len(b.live))
	for id := range b.live {
		ids = append(ids, id)
	}
	b.mu.Unlock()
	if _, err := b.st.markLost(context.Background(), time.Now()); err != nil {
		b.cfg.Logf("marking sessions lost: %v", err)
	}
	// Together: the whole stop takes one grace period, however many
	// agents hang.
	var stops sync.WaitGroup
	for _, id := range ids {
		stops.Add(1)
		go func() {
			defer stops.Done()
			_ = b.StopSession(context.Background(), id)
		}()
	}
	stops.Wait()
	b.end()
	b.wg.Wait()
	b.acting.Wait()
	b.mu.Lock()
	for _, t := range b.timer {
		t.Stop()
	}
	for _, t := range b.rule {
		t.Stop()
	}
	for s := range b.subs {
		s.close()
	}
	b.mu.Unlock()
	err := b.st.Close()
	b.unlock()
	return err
}

var idEncoding = base32.NewEncoding("abcdefghijkmnpqrstuvwxyz23456789").WithPadding(base32.NoPadding)

func newID(prefix string) string {
	var b [5]byte
	_, _ = rand.Read(b[:])
	return prefix + idEncoding.EncodeToString(b[:])
}

// StartSession spawns an agent with the SDK flags, sends the prompt, and
// returns the session. The session ends when the agent exits: after its
// turn (the prompt is one-shot, as in the SDKs' query with a string), or
// when it is stopped.
func (b *Bridge) StartSession(ctx context.Context, o bridgeapi.StartOptions) (*bridgeapi.Session, error) {
	if strings.TrimSpace(o.Prompt) == "" {
		return nil, fmt.Errorf("%w: a session needs a prompt", bridgeapi.ErrInvalid)
	}
	if b.cfg.Claude == "" {
		return nil, errors.New("no claude CLI configured")
	}
	if len(o.ScenarioText) > bridgeapi.MaxScenarioText {
		return nil, fmt.Errorf("%w: scenario_text: %d bytes, over the %d a session's scenario may hold", bridgeapi.ErrInvalid, len(o.ScenarioText), bridgeapi.MaxScenarioText)
	}
	env, ref, err := b.sessionEnv(o.Scenario, o.ScenarioText)
	if err != nil {
		return nil, err
	}
	ss := &bridgeapi.Session{ID: newID("s_"), Prompt: o.Prompt, Scenario: ref, Claude: b.cfg.Claude, Status: bridgeapi.StatusStarting, CreatedAt: time.Now()}
	if err := b.st.insertSession(ctx, ss); err != nil {
		return nil, err
	}
	b.crash(CrashAccepted)
	// A free start slot: the agent starts now, and an agent that cannot
	// start is this call's error. All slots taken (a burst of starts): the
	// session is returned "starting", and its agent starts when a slot
	// frees; one that cannot start then ends the session with the reason.
	select {
	case b.starting <- struct{}{}:
	case <-time.After(startQueueWait):
		b.wg.Add(1)
		go b.startQueued(ss, env)
		return b.Session(ctx, ss.ID)
	case <-ctx.Done():
		ss.Status, ss.Detail, ss.EndedAt = bridgeapi.StatusExited, "the start was abandoned by its caller", time.Now()
		_ = b.st.setStatus(context.Background(), ss)
		return nil, ctx.Err()
	}
	if err := b.spawnHeld(ss, env, "", o.Prompt, b.starting, nil); err != nil {
		ss.Status, ss.Detail, ss.EndedAt = bridgeapi.StatusExited, err.Error(), time.Now()
		_ = b.st.setStatus(context.Background(), ss)
		return nil, err
	}
	return b.Session(ctx, ss.ID)
}

// startQueued starts the agent of an accepted session when a start slot
// frees: one that waited its turn, or one a previous bridge accepted and
// stopped before it started. One that cannot start ends the session with
// the reason. A bridge that closes first leaves it "starting", and the
// next one starts it.
func (b *Bridge) startQueued(ss *bridgeapi.Session, env []string) {
	defer b.wg.Done()
	select {
	case b.starting <- struct{}{}:
	case <-b.ctx.Done():
		return
	}
	if err := b.spawnHeld(ss, env, "", ss.Prompt, b.starting, nil); err != nil {
		ss.Status, ss.Detail, ss.EndedAt = bridgeapi.StatusExited, err.Error(), time.Now()
		_ = b.ended(ss, nil)
	}
}

// startQueueWait is how long a session start waits for a start slot before
// it returns the session "starting" and leaves the start queued.
const startQueueWait = time.Second

// sessionEnv is the environment a session's agent gets for what its client
// asked it to play, and the name the session keeps.
func (b *Bridge) sessionEnv(name, text string) ([]string, string, error) {
	if b.cfg.SessionEnv == nil {
		if name != "" || text != "" {
			return nil, "", fmt.Errorf("%w: scenario: this bridge's agents take no scenario", bridgeapi.ErrInvalid)
		}
		return nil, "", nil
	}
	env, ref, err := b.cfg.SessionEnv(name, text)
	if err != nil {
		return nil, "", fmt.Errorf("%w: scenario: %v", bridgeapi.ErrInvalid, err)
	}
	return env, ref, nil
}

// spawn starts the agent of ss, with extra (what its scenario resolved to)
// in its environment, and its SDK side; resume, when set, is the CLI
// session to continue (--resume).
//
// Agents start a few at a time: a start is CPU-heavy (a process, its
// runtime, its initialize), and hundreds at once would starve the sessions
// already running, whose people wait for their answers. A start holds its
// slot until the agent says system/init, exits, or startSlotHold passes (an
// agent that hangs before init blocks no one).
//
// A resumed session (a late answer) takes a slot of its own kind, so that
// it never waits behind a burst of new sessions. prompted, when set, is
// called once the agent starts the turn the prompt began (system/init): it
// has taken the prompt in.
func (b *Bridge) spawn(ss *bridgeapi.Session, extra []string, resume, prompt string, prompted func()) error {
	slots := b.starting
	if resume != "" {
		slots = b.resuming
	}
	select {
	case slots <- struct{}{}:
	case <-b.ctx.Done():
		return errors.New("the bridge is closing")
	}
	return b.spawnHeld(ss, extra, resume, prompt, slots, prompted)
}

// spawnHeld is spawn with a slot of slots already taken; it frees it.
func (b *Bridge) spawnHeld(ss *bridgeapi.Session, extra []string, resume, prompt string, slots chan struct{}, prompted func()) error {
	release := sync.OnceFunc(func() { <-slots })
	holdTimer := time.AfterFunc(startSlotHold, release)
	freeSlot := func() {
		holdTimer.Stop()
		release()
	}
	started := false
	defer func() {
		if !started {
			freeSlot()
		}
	}()
	args := append(append([]string(nil), claudecli.SDKArgs...), b.cfg.Args...)
	if resume != "" {
		args = append(args, "--resume", resume)
	}
	env := append(append(os.Environ(), b.cfg.Env...), extra...)
	proc, err := claudecli.Launch(b.ctx, claudecli.Command{Path: ss.Claude, Args: args, Env: env, Dir: b.cfg.Dir})
	if err != nil {
		return err
	}
	l := &live{proc: proc, done: make(chan struct{}), started: freeSlot}
	if prompted != nil {
		l.turn = sync.OnceFunc(prompted)
	}
	src := sdk.SourceFunc(func(s *sdk.Session, r sdk.Request) { b.ask(ss.ID, s, r) })
	s, err := sdk.Start(b.ctx, proc.Stdin, proc.Stdout, src, sdk.Options{
		OnCancel: func(_ *sdk.Session, requestID string) { b.agentCancelled(ss.ID, requestID) },
		OnResult: func(s *sdk.Session, line protocol.Line) {
			// An error result is the agent's own word on why it stops: the
			// session's detail, if it then exits with an error.
			var r struct {
				IsError bool   `json:"is_error"`
				Result  string `json:"result"`
			}
			if json.Unmarshal(line.Raw, &r) == nil && r.IsError && strings.TrimSpace(r.Result) != "" {
				text := lastLine(r.Result)
				l.failure.Store(&text)
			}
			s.CloseInput()
		},
		OnMessage: func(s *sdk.Session, line protocol.Line) {
			if line.Type == protocol.TypeSystem && line.Subtype == protocol.SubtypeInit {
				freeSlot()
				b.sawInit(ss.ID, s.SessionID())
				if l.turn != nil {
					l.turn() // the turn the prompt began: a resumed agent has its late answer
				}
			}
			if qid, ok := l.takenIn(line); ok {
				b.markDelivered(qid)
			}
		},
	})
	if err != nil {
		// The agent is gone before it read its first line: say how it
		// ended, which is what the person can act on.
		proc.Kill()
		code, _ := proc.Wait()
		why := fmt.Sprintf("the agent exited at once, with status %d", code)
		if e := strings.TrimSpace(proc.Stderr()); e != "" {
			why += ": " + lastLine(e)
		}
		return fmt.Errorf("%s (%v)", why, err)
	}
	l.s = s
	ss.Status = bridgeapi.StatusRunning
	// Running, with the agent's process, is stored before the agent gets
	// its prompt: a session a crash leaves "starting" never got it, and
	// the next bridge starts it.
	if err := b.st.setRunning(b.ctx, ss, proc.PID(), procStart(proc.PID())); err != nil {
		s.CloseInput()
		proc.Kill()
		_, _ = proc.Wait()
		return fmt.Errorf("storing that the agent runs: %w", err)
	}
	b.mu.Lock()
	b.live[ss.ID] = l
	b.mu.Unlock()
	b.wg.Add(1)
	started = true // watch frees the slot if the agent exits before init
	go b.watch(ss.ID, l)
	if err := s.Prompt(prompt); err != nil {
		b.cfg.Logf("session %s: writing the prompt: %v", ss.ID, err)
	}
	b.publishStatus(ss.ID)
	return nil
}

// watch waits for a session's agent to exit, then withdraws its pending
// questions and records how it ended.
func (b *Bridge) watch(id string, l *live) {
	defer b.wg.Done()
	defer close(l.done)
	sdkErr := l.s.Wait()
	l.s.CloseInput()
	code, waitErr := l.proc.Wait()
	if l.started != nil {
		l.started()
	}
	b.mu.Lock()
	if b.live[id] == l {
		delete(b.live, id)
	}
	closing := b.closing
	b.mu.Unlock()
	if closing {
		// The bridge is shutting down: the session stays lost and its
		// questions pending, for the next bridge to resume.
		return
	}
	var ss *bridgeapi.Session
	if b.durably("session "+id+": reading it after its agent exited", func(ctx context.Context) (err error) {
		ss, err = b.st.session(ctx, id)
		return err
	}) != nil {
		return // the bridge is closing: the next one finds the session lost
	}
	ss.Status, ss.ExitCode, ss.EndedAt = bridgeapi.StatusExited, &code, time.Now()
	switch {
	case waitErr != nil:
		ss.Detail = waitErr.Error()
	case sdkErr != nil && !errors.Is(sdkErr, context.Canceled):
		ss.Detail = sdkErr.Error()
	case code != 0:
		ss.Detail = fmt.Sprintf("the agent exited with status %d", code)
		if f := l.failure.Load(); f != nil {
			ss.Detail += ": " + *f
		} else if e := strings.TrimSpace(l.proc.Stderr()); e != "" {
			ss.Detail += ": " + lastLine(e)
		}
	}
	// Its questions are withdrawn first, so that a session read as ended
	// has none pending, and its log has every event of its end.
	var qs []*bridgeapi.Question
	if b.durably("session "+id+": listing its pending questions", func(ctx context.Context) (err error) {
		filter := id
		if defect("exit-withdraws-all") {
			filter = ""
		}
		qs, err = b.st.questions(ctx, bridgeapi.QuestionPending, filter)
		return err
	}) != nil {
		return
	}
	for _, q := range qs {
		if defect("exit-withdraw-silent") {
			_, _ = b.st.resolve(b.ctx, q.ID, bridgeapi.QuestionWithdrawn, nil, "the agent exited", false, time.Now())
			continue
		}
		b.withdraw(q, bridgeapi.QuestionWithdrawn, "the agent exited")
	}
	stderr := tail(l.proc.Stderr(), maxStderr)
	if b.ended(ss, &stderr) != nil {
		return
	}
	b.cfg.Logf("session %s ended: status %d %s", id, code, ss.Detail)
}

// maxStderr bounds the end of an agent's stderr a session keeps.
const maxStderr = 8 << 10

// tail is the last n bytes of s, from a line's start where one is near.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[len(s)-n:]
	if i := strings.IndexByte(s, '\n'); i >= 0 && i < 200 {
		s = s[i+1:]
	}
	return "…\n" + s
}

// SessionLog is what happened in session id: its logged events (what its
// surfaces were told, and so what its agent got), and the end of its
// latest agent's stderr.
func (b *Bridge) SessionLog(ctx context.Context, id string) (*bridgeapi.SessionLog, error) {
	ss, err := b.Session(ctx, id)
	if err != nil {
		return nil, err
	}
	out := &bridgeapi.SessionLog{Session: ss, Events: []bridgeapi.Event{}}
	for seq := int64(0); ; {
		evs, err := b.st.eventsAfter(ctx, seq, id, 1000)
		if err != nil {
			return nil, err
		}
		for _, e := range evs {
			seq = e.Seq
			if e.SessionID == id {
				out.Events = append(out.Events, e)
			}
		}
		if len(evs) < 1000 {
			break
		}
	}
	if out.Stderr, err = b.st.stderr(ctx, id); err != nil {
		return nil, err
	}
	return out, nil
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	s = clip.String(s, 300)
	return s
}

func (b *Bridge) sawInit(id, claudeSession string) {
	if err := b.st.setClaudeSession(context.Background(), id, claudeSession); err != nil {
		b.cfg.Logf("session %s: %v", id, err)
	}
}

// StopSession closes the agent's stdin, and kills it if it has not exited
// after the grace period. Its pending questions are withdrawn.
func (b *Bridge) StopSession(ctx context.Context, id string) error {
	b.mu.Lock()
	l := b.live[id]
	b.mu.Unlock()
	if l == nil {
		if _, err := b.st.session(ctx, id); err != nil {
			return fmt.Errorf("session %s: %w", id, err)
		}
		return nil // already ended
	}
	if l.mcp != nil {
		b.endMCP(id, l)
		return nil
	}
	b.mu.Lock()
	b.stopping[id] = true
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		delete(b.stopping, id)
		b.mu.Unlock()
	}()
	// Closing stdin waits for a write under way: an agent that stopped
	// reading holds it until it is killed, so the grace runs meanwhile.
	go l.s.CloseInput()
	select {
	case <-l.done:
	case <-time.After(b.cfg.StopGrace):
		l.proc.Kill()
		<-l.done
	}
	return nil
}

// ask is the bridge as the sessions' source of answers: AskUserQuestion
// becomes a pending question; other tools follow the policy at once.
func (b *Bridge) ask(sessionID string, s *sdk.Session, r sdk.Request) {
	if r.ToolName != protocol.ToolAskUserQuestion {
		if defect("passthrough-withdraws-pending") {
			pend, _ := b.st.questions(context.Background(), bridgeapi.QuestionPending, sessionID)
			for _, q := range pend {
				b.withdraw(q, bridgeapi.QuestionWithdrawn, "the agent moved on to "+r.ToolName)
			}
		}
		reply := protocol.Reply{Allow: true}
		if b.cfg.OtherTools == "deny" || defect("passthrough-blocked-path") && r.BlockedPath != "" {
			reply = protocol.Reply{Skip: true, Message: "The bridge's policy denies " + r.ToolName + "."}
		} else if defect("passthrough-input-strings") {
			var fields map[string]string
			_ = json.Unmarshal(r.Input, &fields) // a field that is not a string comes out ""
			in, _ := json.Marshal(fields)
			if err := s.RespondRaw(r.ID, protocol.SuccessResponse(r.ID, protocol.Allow(in))); err != nil {
				b.cfg.Logf("session %s: %s: %v", sessionID, r.ToolName, err)
			}
			return
		}
		if err := s.Respond(r.ID, reply); err != nil {
			b.cfg.Logf("session %s: %s: %v", sessionID, r.ToolName, err)
		}
		return
	}
	in, err := protocol.ParseAskInput(r.Input)
	if err == nil && len(in.Questions) == 0 {
		err = errors.New("no questions")
	}
	if err != nil {
		_ = s.Respond(r.ID, protocol.Reply{Skip: true, Message: fmt.Sprintf("The bridge could not read the AskUserQuestion input: %v", err)})
		return
	}
	if defect("self-answer") {
		answers := map[string]string{}
		for _, qq := range in.Questions {
			if len(qq.Options) > 0 {
				answers[qq.Question] = qq.Options[0].Label
			}
		}
		_ = s.Respond(r.ID, protocol.Reply{Answers: answers})
		return
	}
	b.crash(CrashAskRead)
	now := time.Now()
	q := &bridgeapi.Question{ID: newID("q_"), SessionID: sessionID, RequestID: r.ID, ToolUseID: r.ToolUseID, Questions: in.Questions,
		Status: bridgeapi.QuestionPending, CreatedAt: now, Deadline: now.Add(b.cfg.Timeout), TimeoutSeconds: timeoutSeconds(b.cfg.Timeout), Input: r.Input}
	if err := b.pose(q); err != nil {
		b.cfg.Logf("session %s: storing a question: %v", sessionID, err)
		_ = s.Respond(r.ID, protocol.Reply{Error: "the bridge could not store the question: " + err.Error()})
	}
}

// pose stores a new pending question, starts its deadline and tells the
// surfaces, in one step: no answer can come between, so the surfaces hear
// of the question before of its answer.
func (b *Bridge) pose(q *bridgeapi.Question) error {
	unlock := b.qlocks.lock(q.ID)
	if err := b.st.insertQuestion(b.ctx, q); err != nil {
		unlock()
		return err
	}
	b.mu.Lock()
	if !defect("no-timeout") {
		b.timer[q.ID] = time.AfterFunc(b.cfg.Timeout, func() { b.expire(q.ID) })
	}
	b.mu.Unlock()
	b.publish(bridgeapi.Event{Type: bridgeapi.EventQuestion, SessionID: q.SessionID, QuestionID: q.ID, Questions: shown(q.Questions), TimeoutSeconds: q.TimeoutSeconds})
	unlock()
	b.publishStatus(q.SessionID)
	b.startDeciding(q)
	return nil
}

// startDeciding has the policy, if any, decide question q, in the
// background, within the policy's budget.
func (b *Bridge) startDeciding(q *bridgeapi.Question) {
	if b.cfg.Policy != nil {
		ctx, cancel := context.WithTimeout(b.ctx, b.cfg.PolicyBudget)
		b.mu.Lock()
		if b.deciding == nil {
			b.deciding = map[string]context.CancelFunc{}
		}
		b.deciding[q.ID] = cancel
		b.mu.Unlock()
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			defer b.stopDeciding(q.ID)
			b.decide(ctx, q)
		}()
	}
}

// stopDeciding ends the policy's deciding of question qid, if it goes on.
func (b *Bridge) stopDeciding(qid string) {
	b.mu.Lock()
	cancel := b.deciding[qid]
	delete(b.deciding, qid)
	b.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// decide applies the policy to a question just posed: its answer or skip
// goes through Answer and Skip as a person's would, at once or after the
// rule's wait; a person who settles it first wins (the rule's action then
// finds it resolved, and does nothing).
func (b *Bridge) decide(ctx context.Context, q *bridgeapi.Question) {
	d, err := b.cfg.Policy.DecideContext(ctx, policy.Request{Session: q.SessionID, Questions: q.Questions, Input: q.Input})
	if errors.Is(err, context.Canceled) {
		return // settled, or a person began: nothing to decide
	}
	if d.Action == policy.ActPerson {
		if d.Rule != nil || err != nil {
			b.cfg.Logf("question %s: %s", q.ID, d.Reason)
		}
		return
	}
	act := func() {
		b.mu.Lock()
		delete(b.rule, q.ID)
		if b.closing {
			b.mu.Unlock()
			return
		}
		b.acting.Add(1) // Close waits for it before it closes the store
		b.mu.Unlock()
		defer b.acting.Done()
		ctx := context.Background()
		var err error
		verb := "answered"
		if d.Action == policy.ActSkip {
			verb = "skipped"
			_, err = b.skip(ctx, q.ID, d.Reason, false, d.Named())
		} else {
			given := make(map[string]bridgeapi.Answer, len(d.Answers))
			for k, v := range d.Answers {
				given[k] = v
			}
			_, err = b.answer(ctx, q.ID, given, d.Named())
		}
		switch {
		case errors.Is(err, bridgeapi.ErrResolved), errors.Is(err, errPersonStarted):
			// Settled first by a person, the agent, or the deadline; or a
			// person has begun to answer it.
		case err != nil:
			b.cfg.Logf("question %s: the policy's %s could not settle it: %v", q.ID, d.Named(), err)
		default:
			b.cfg.Logf("question %s: %s by the policy's %s", q.ID, verb, d.Named())
		}
	}
	if d.After <= 0 {
		go act()
		return
	}
	b.mu.Lock()
	if b.rule == nil {
		b.rule = map[string]*time.Timer{}
	}
	b.rule[q.ID] = time.AfterFunc(d.After, act)
	b.mu.Unlock()
	b.cfg.Logf("question %s: the policy's %s will %s it if nobody has in %v", q.ID, d.Rule, d.Action, d.After)
}

// errPersonStarted refuses a policy's answer to a question a person has
// begun to answer (part of it is held).
var errPersonStarted = errors.New("a person has begun to answer it")

// stopRule stops the policy's waiting action on question qid, if any.
func (b *Bridge) stopRule(qid string) {
	b.mu.Lock()
	stopIn(b.rule, qid)
	b.mu.Unlock()
	b.stopDeciding(qid)
}

// stopTimer stops question qid's deadline, and the policy's action.
func (b *Bridge) stopTimer(qid string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	stopIn(b.timer, qid)
	stopIn(b.rule, qid)
}

// stopIn stops and forgets timers[qid]; b.mu is held.
func stopIn(timers map[string]*time.Timer, qid string) {
	if t := timers[qid]; t != nil {
		t.Stop()
		delete(timers, qid)
	}
}

func (b *Bridge) liveSession(id string) *live {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.live[id]
}

// pending loads question id, if it is still pending; with its lock held.
func (b *Bridge) pending(ctx context.Context, id string) (*bridgeapi.Question, error) {
	q, err := b.st.question(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("question %s: %w", id, err)
	}
	if q.Status != bridgeapi.QuestionPending {
		return nil, resolvedError(q)
	}
	return q, nil
}

// claim resolves pending question q as status, if nothing resolved it first
// (the database decides), and stops its deadline. due: a reply is on its
// way to an agent process (see markDelivered).
func (b *Bridge) claim(ctx context.Context, q *bridgeapi.Question, status string, answers map[string]string, reason string, due bool) error {
	won, err := b.st.resolve(ctx, q.ID, status, answers, reason, due, time.Now())
	if err != nil {
		return err
	}
	if !won {
		if now, err := b.st.question(ctx, q.ID); err == nil {
			q = now
		}
		return resolvedError(q)
	}
	b.stopTimer(q.ID)
	b.stopDeciding(q.ID)
	return nil
}

// Answer answers question id. Answers are keyed by question text or number;
// a multi-question request answered in part is held until every question
// has an answer. The first complete answer wins; any later one gets
// ErrResolved, and a malformed one ErrInvalid, leaving the question pending.
func (b *Bridge) Answer(ctx context.Context, id string, given map[string]bridgeapi.Answer) (*bridgeapi.AnswerResult, error) {
	return b.answer(ctx, id, given, "")
}

// answer is Answer by a person (rule "") or by a policy's rule.
func (b *Bridge) answer(ctx context.Context, id string, given map[string]bridgeapi.Answer, rule string) (*bridgeapi.AnswerResult, error) {
	ctx = urgently(ctx) // before the writes of sessions starting
	defer b.qlocks.lock(id)()
	q, err := b.pending(ctx, id)
	if err != nil {
		if (defect("late-forwarded") || defect("double-answer")) && errors.Is(err, bridgeapi.ErrResolved) {
			return b.forwardAgain(ctx, id, given, err)
		}
		if defect("double-answer-acked") && errors.Is(err, bridgeapi.ErrResolved) {
			if cur, qerr := b.st.question(ctx, id); qerr == nil && cur.Status == bridgeapi.QuestionAnswered {
				return &bridgeapi.AnswerResult{Question: cur}, nil // already answered: acknowledge again
			}
		}
		return nil, err
	}
	if rule != "" && len(q.Draft) > 0 {
		return nil, fmt.Errorf("question %s: %w", id, errPersonStarted)
	}
	merged, missing, err := resolveAnswers(q, given)
	if err != nil {
		return nil, err
	}
	if defect("partial-sent") && len(missing) > 0 {
		missing = nil
	}
	if len(missing) > 0 {
		if err := b.st.saveDraft(ctx, id, merged); err != nil {
			return nil, err
		}
		q.Draft = merged
		if defect("held-stops-deadline") {
			b.stopTimer(id)
		} else {
			b.stopRule(id) // a person has begun: the policy leaves the question to them
		}
		if defect("deadline-reset-held") {
			b.mu.Lock()
			if t := b.timer[id]; t != nil {
				t.Reset(b.cfg.Timeout)
			}
			b.mu.Unlock()
		}
		b.publishIn(ctx, bridgeapi.Event{Type: bridgeapi.EventHeld, SessionID: q.SessionID, QuestionID: id, Answers: merged, Reason: fmt.Sprintf("waiting for %d more answer(s)", len(missing))})
		return &bridgeapi.AnswerResult{Question: q, Held: true, Missing: missing}, nil
	}
	l := b.liveSession(q.SessionID)
	if l == nil && !q.Orphaned {
		// The agent is gone and its exit has not been processed yet.
		return nil, fmt.Errorf("%w: question %s: its agent has exited", bridgeapi.ErrResolved, id)
	}
	if q.Orphaned {
		if ss, err := b.st.session(ctx, q.SessionID); err != nil {
			return nil, err
		} else if ss.ClaudeSessionID == "" {
			return nil, fmt.Errorf("%w: question %s cannot be answered late: its agent never said its session id, so the session cannot be resumed", bridgeapi.ErrInvalid, id)
		}
	}
	if err := b.claim(ctx, q, bridgeapi.QuestionAnswered, merged, "", q.Orphaned || l.mcp == nil); err != nil {
		return nil, err
	}
	res := &bridgeapi.AnswerResult{}
	if q.Orphaned {
		b.crash(CrashResumeCommitted)
		if err := b.resume(q, LateAnswerPrompt(q.Questions, merged), func() { b.markDelivered(id) }); err != nil {
			// Nothing reached an agent: the question stays answerable.
			if rerr := b.st.reopen(ctx, id, bridgeapi.QuestionPending, ""); rerr != nil {
				b.cfg.Logf("question %s: answered, its session not resumed, and still marked answered: %v", id, rerr)
			}
			return nil, fmt.Errorf("resuming session %s for question %s: %w", q.SessionID, id, err)
		}
		res.Resumed = true
	} else if err := func() error {
		if defect("questions-reencoded") && l.mcp == nil {
			upd, _ := json.Marshal(map[string]any{"questions": q.Questions, "answers": sent(q.Questions, merged)})
			return l.s.RespondRaw(q.RequestID, protocol.SuccessResponse(q.RequestID, protocol.Allow(upd)))
		}
		b.crash(CrashAnswerCommitted)
		return l.respond(q, protocol.Reply{Answers: sent(q.Questions, merged)})
	}(); err != nil {
		// Nothing was sent: the agent withdrew the request a moment before,
		// or it is exiting. The surfaces are told, as for any withdrawal.
		status, reason := bridgeapi.QuestionWithdrawn, "the agent exited before the answer reached it"
		if errors.Is(err, sdk.ErrWithdrawn) {
			status, reason = bridgeapi.QuestionCancelled, "withdrawn by the agent (control_cancel_request)"
		}
		if err := b.st.reopen(ctx, id, status, reason); err != nil {
			b.cfg.Logf("question %s: %v", id, err)
		}
		b.stopTimer(id)
		b.publishIn(ctx, bridgeapi.Event{Type: bridgeapi.EventWithdrawn, SessionID: q.SessionID, QuestionID: id, Reason: reason})
		b.publishStatusIn(ctx, q.SessionID)
		return nil, fmt.Errorf("%w: question %s was withdrawn (%s)", bridgeapi.ErrResolved, id, reason)
	} else if l.mcp == nil {
		b.crash(CrashAnswerWritten)
		b.delivering(l, q)
	}
	if res.Question, err = b.st.question(ctx, id); err != nil {
		res.Question = q
	}
	b.fillTimeout(res.Question)
	b.publishIn(ctx, bridgeapi.Event{Type: bridgeapi.EventAnswered, SessionID: q.SessionID, QuestionID: id, Answers: merged, Rule: rule})
	if res.Resumed {
		b.publishIn(ctx, bridgeapi.Event{Type: bridgeapi.EventResumed, SessionID: q.SessionID, QuestionID: id, Answers: merged,
			Reason: "the agent had stopped with the previous bridge: its session was resumed with the question and this answer"})
	}
	b.publishStatusIn(ctx, q.SessionID)
	return res, nil
}

// Skip declines question id: the agent gets a deny with reason (never an
// allow), and interrupt also aborts its turn.
func (b *Bridge) Skip(ctx context.Context, id, reason string, interrupt bool) (*bridgeapi.Question, error) {
	if defect("skip-reason-dropped") {
		reason = ""
	}
	return b.skip(ctx, id, reason, interrupt, "")
}

// skip is Skip by a person (rule "") or by a policy's rule.
func (b *Bridge) skip(ctx context.Context, id, reason string, interrupt bool, rule string) (*bridgeapi.Question, error) {
	ctx = urgently(ctx) // before the writes of sessions starting
	defer b.qlocks.lock(id)()
	q, err := b.pending(ctx, id)
	if err != nil {
		return nil, err
	}
	if defect("skip-other-pending") {
		if qs, _ := b.st.questions(ctx, bridgeapi.QuestionPending, q.SessionID); len(qs) > 0 {
			q = qs[len(qs)-1]
			id = q.ID
		}
	}
	if strings.TrimSpace(reason) == "" {
		reason = bridgeapi.DefaultSkipReason
	}
	l := b.liveSession(q.SessionID)
	if l == nil && !q.Orphaned {
		return nil, fmt.Errorf("%w: question %s: its agent has exited", bridgeapi.ErrResolved, id)
	}
	if err := b.claim(ctx, q, bridgeapi.QuestionSkipped, nil, reason, l != nil && l.mcp == nil); err != nil {
		return nil, err
	}
	if l != nil {
		reply := protocol.Reply{Skip: true, Message: reason, Interrupt: interrupt}
		if defect("skip-allow-empty") {
			reply = protocol.Reply{Allow: true}
		}
		if defect("skip-error-response") {
			reply = protocol.Reply{Error: reason}
		}
		if err := l.respond(q, reply); err != nil {
			b.cfg.Logf("question %s: %v", id, err)
		} else if l.mcp == nil {
			b.delivering(l, q)
		}
	}
	q, _ = b.st.question(ctx, id)
	b.publishIn(ctx, bridgeapi.Event{Type: bridgeapi.EventSkipped, SessionID: q.SessionID, QuestionID: id, Reason: reason, Rule: rule})
	b.publishStatusIn(ctx, q.SessionID)
	return q, nil
}

// TimeoutMessage is the deny an agent gets when nobody answered in time.
func TimeoutMessage(d time.Duration) string {
	return fmt.Sprintf("The user did not answer within %v: the question timed out. Continue without the answer, or ask again later.", d)
}

// expire answers a question nobody answered in time with a deny.
func (b *Bridge) expire(id string) {
	defer b.qlocks.lock(id)()
	ctx := context.Background()
	b.stopTimer(id)
	q, err := b.st.question(ctx, id)
	if err == nil && q.Status != bridgeapi.QuestionPending {
		return
	}
	var won bool
	if err == nil && defect("expiry-not-persisted") {
		won = true
	} else if err == nil {
		l := b.liveSession(q.SessionID)
		won, err = b.st.resolve(ctx, id, bridgeapi.QuestionExpired, nil, "timed out", l != nil && l.mcp == nil, time.Now())
	}
	if err != nil {
		// The deadline must still be kept: try again shortly.
		b.cfg.Logf("question %s: expiring: %v; trying again in 1s", id, err)
		b.mu.Lock()
		b.timer[id] = time.AfterFunc(time.Second, func() { b.expire(id) })
		b.mu.Unlock()
		return
	}
	if !won {
		return
	}
	if l := b.liveSession(q.SessionID); l != nil {
		msg := TimeoutMessage(b.cfg.Timeout)
		if defect("timeout-says-skipped") {
			msg = bridgeapi.DefaultSkipReason
		}
		reply := protocol.Reply{Skip: true, Message: msg, Interrupt: b.cfg.TimeoutInterrupt}
		if defect("timeout-allow") {
			first := map[string]string{}
			for _, qq := range q.Questions {
				first[qq.Question] = qq.Options[0].Label
			}
			reply = protocol.Reply{Answers: first}
		}
		if err := l.respond(q, reply); err != nil {
			b.cfg.Logf("question %s: %v", id, err)
		} else if l.mcp == nil {
			b.delivering(l, q)
		}
	}
	b.publish(bridgeapi.Event{Type: bridgeapi.EventTimeout, SessionID: q.SessionID, QuestionID: id, Error: "User response timed out"})
	b.publishStatus(q.SessionID)
}

// agentCancelled withdraws the question of a request the agent withdrew.
func (b *Bridge) agentCancelled(sessionID, requestID string) {
	b.mu.Lock()
	closing, stopping := b.closing, b.stopping[sessionID]
	b.mu.Unlock()
	if closing || defect("cancel-ignored") {
		return // the agent withdraws because the bridge is stopping it
	}
	status, reason := bridgeapi.QuestionCancelled, "withdrawn by the agent (control_cancel_request)"
	if stopping {
		status, reason = bridgeapi.QuestionWithdrawn, "the session was stopped"
	}
	qs, _ := b.st.questions(context.Background(), bridgeapi.QuestionPending, sessionID)
	for _, q := range qs {
		if q.RequestID == requestID {
			b.withdraw(q, status, reason)
		}
	}
}

// withdraw takes a pending question off the surfaces; nothing is sent to
// the agent, which withdrew it or is gone.
func (b *Bridge) withdraw(q *bridgeapi.Question, status, reason string) {
	defer b.qlocks.lock(q.ID)()
	var won bool
	if err := b.durably("question "+q.ID+": withdrawing it", func(ctx context.Context) (err error) {
		won, err = b.st.resolve(ctx, q.ID, status, nil, reason, false, time.Now())
		return err
	}); err != nil || !won {
		return
	}
	b.stopTimer(q.ID)
	if l := b.liveSession(q.SessionID); l != nil && l.mcp != nil {
		l.mcp.resolved(q.ID)
	}
	b.publish(bridgeapi.Event{Type: bridgeapi.EventWithdrawn, SessionID: q.SessionID, QuestionID: q.ID, Reason: reason})
	b.publishStatus(q.SessionID)
}

// LateAnswerPrompt is the first message of a session resumed by a late
// answer: the question the agent asked, and the answer (seed 004's path).
func LateAnswerPrompt(qs []protocol.Question, answers map[string]string) string {
	var parts []string
	for _, q := range qs {
		parts = append(parts, fmt.Sprintf("%q: %q", q.Question, answers[q.Question]))
	}
	return "You previously asked the user (AskUserQuestion), and the session stopped before the answer came. The user answered: " +
		strings.Join(parts, "; ") + ". Continue with these answers in mind."
}

// resume restarts the session of an orphaned question with --resume and
// prompt (the late answer) as its first message; prompted is called once
// the agent has taken it in.
func (b *Bridge) resume(q *bridgeapi.Question, prompt string, prompted func()) error {
	ss, err := b.st.session(b.ctx, q.SessionID)
	if err != nil {
		return err
	}
	if b.liveSession(ss.ID) != nil {
		return fmt.Errorf("session %s is running", ss.ID)
	}
	if ss.ClaudeSessionID == "" {
		return fmt.Errorf("session %s cannot be resumed: the agent never said its session id", ss.ID)
	}
	// The CLI this bridge runs now: the one that started the session may be
	// gone with the previous bridge's configuration.
	ss.Claude = b.cfg.Claude
	ss.Status, ss.ExitCode, ss.EndedAt, ss.Detail = bridgeapi.StatusStarting, nil, time.Time{}, "resumed by a late answer to "+q.ID
	extra, _, err := b.sessionEnv(ss.Scenario, "")
	if err != nil {
		return err
	}
	return b.spawn(ss, extra, ss.ClaudeSessionID, prompt, prompted)
}

// RevokeKey makes the page key with nonce stop working (its page logged
// out), until it would have expired.
func (b *Bridge) RevokeKey(ctx context.Context, nonce string, expires time.Time) error {
	if err := b.st.revokeKey(ctx, nonce, expires, time.Now()); err != nil {
		return err
	}
	b.mu.Lock()
	b.revoked[nonce] = true
	b.mu.Unlock()
	return nil
}

// KeyRevoked reports whether the page key with nonce was logged out.
func (b *Bridge) KeyRevoked(nonce string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.revoked[nonce]
}

// Session returns a session with its waiting state.
func (b *Bridge) Session(ctx context.Context, id string) (*bridgeapi.Session, error) {
	ss, err := b.st.session(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("session %s: %w", id, err)
	}
	b.fillWaiting(ctx, ss)
	return ss, nil
}

// Sessions lists every session, oldest first.
func (b *Bridge) Sessions(ctx context.Context) ([]*bridgeapi.Session, error) {
	all, err := b.st.sessions(ctx)
	if err != nil {
		return nil, err
	}
	for _, ss := range all {
		b.fillWaiting(ctx, ss)
	}
	return all, nil
}

func (b *Bridge) fillWaiting(ctx context.Context, ss *bridgeapi.Session) {
	qs, _ := b.st.questions(ctx, bridgeapi.QuestionPending, ss.ID)
	if len(qs) > 0 {
		ss.WaitingForUser, ss.PendingQuestionID = true, qs[0].ID
	}
}

// Question returns one question.
func (b *Bridge) Question(ctx context.Context, id string) (*bridgeapi.Question, error) {
	q, err := b.st.question(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("question %s: %w", id, err)
	}
	b.fillTimeout(q)
	return q, nil
}

// Pending lists the pending questions, oldest first; session filters.
func (b *Bridge) Pending(ctx context.Context, session string) ([]*bridgeapi.Question, error) {
	qs, err := b.st.questions(ctx, bridgeapi.QuestionPending, session)
	for _, q := range qs {
		b.fillTimeout(q)
	}
	return qs, err
}

// Questions lists questions of any status.
func (b *Bridge) Questions(ctx context.Context, status, session string) ([]*bridgeapi.Question, error) {
	qs, err := b.st.questions(ctx, status, session)
	for _, q := range qs {
		b.fillTimeout(q)
	}
	return qs, err
}

func (b *Bridge) fillTimeout(q *bridgeapi.Question) {
	q.TimeoutSeconds = timeoutSeconds(q.Deadline.Sub(q.CreatedAt))
}

// timeoutSeconds is a timeout in whole seconds, rounded up: a surface told
// 0 would show no time at all.
func timeoutSeconds(d time.Duration) int { return int((d + time.Second - 1) / time.Second) }

// durably runs a state change until it reaches the database: a write
// that fails (a full disk, a locked file) is logged once and retried, with
// a growing pause, until it is made or the bridge closes (then the next
// bridge finds the session lost, and its questions pending, as after a
// crash). Nothing is left half-changed in memory.
func (b *Bridge) durably(what string, f func(ctx context.Context) error) error {
	delay := 20 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := f(b.ctx)
		if err == nil {
			if attempt > 1 {
				b.cfg.Logf("%s: written after %d attempts", what, attempt)
			}
			return nil
		}
		if attempt == 1 {
			b.cfg.Logf("%s: %v; retrying until it is written", what, err)
		}
		select {
		case <-b.ctx.Done():
			return err
		case <-time.After(delay):
		}
		if delay < time.Second {
			delay *= 2
		}
	}
}

// DefaultMaxStarting is Config.MaxStarting's default: the CPUs less one,
// at least one. Measured on 2 cores with 1000 sessions started at once
// (BenchmarkLoad), 1 kept answer → agent p99 at 21–48 ms where 2 let it
// reach 170–230 ms, for 10–15 % fewer sessions a second.
func DefaultMaxStarting() int { return max(1, runtime.NumCPU()-1) }

// publishStatus tells the surfaces a session's state.
func (b *Bridge) publishStatus(id string) { b.publishStatusIn(context.Background(), id) }

// publishStatusIn is publishStatus with ctx's values (urgently). The
// state is read and its event logged with no other event of the session
// logged between: a status read before a new question was stored cannot
// be logged after that question's event, where it would tell the surfaces
// that nobody waits any more, about a question that does wait.
func (b *Bridge) publishStatusIn(ctx context.Context, id string) {
	unlock := b.order.lock(id)
	ss, err := b.Session(ctx, id)
	if err != nil {
		unlock()
		return
	}
	if statusRead != nil {
		statusRead() // a test's moment between the read and the log
	}
	o := b.logEvent(ctx, statusEvent(ss))
	unlock()
	b.delivered(o)
}

// statusRead, in tests, runs between a status's read and its log.
var statusRead func()

func statusEvent(ss *bridgeapi.Session) bridgeapi.Event {
	waiting := ss.WaitingForUser
	var pq *string
	if ss.PendingQuestionID != "" {
		pending := ss.PendingQuestionID
		pq = &pending
	}
	return bridgeapi.Event{Type: bridgeapi.EventStatus, SessionID: ss.ID, Status: ss.Status, WaitingForUser: &waiting, PendingQuestionID: pq,
		ExitCode: ss.ExitCode, Detail: ss.Detail, Time: time.Now().UTC()}
}

// publish logs an event and hands it to every subscriber of its session.
//
// The event is logged with the store's next commit, and delivered once it
// is committed, in the log's order; publish returns when it is delivered.
// Publishes from many goroutines share commits.
func (b *Bridge) publish(e bridgeapi.Event) { b.publishIn(context.Background(), e) }

// publishIn is publish with ctx's values (urgently), never its
// cancellation: an event is delivered once it is logged.
func (b *Bridge) publishIn(ctx context.Context, e bridgeapi.Event) {
	unlock := func() {} // an event of no session waits for nothing
	if e.SessionID != "" {
		unlock = b.order.lock(e.SessionID)
	}
	o := b.logEvent(ctx, e)
	unlock()
	b.delivered(o)
}

// logEvent logs e and queues it for delivery once committed.
func (b *Bridge) logEvent(ctx context.Context, e bridgeapi.Event) *outgoing {
	e.Time = time.Now().UTC()
	data, _ := json.Marshal(e)
	o := &outgoing{e: e, done: make(chan struct{})}
	err := b.st.appendEvent(context.WithoutCancel(ctx), e.SessionID, data, e.Time, b.queue(o))
	if err != nil {
		// Not logged (a resumed stream will not replay it), but surfaces
		// that are connected still hear it.
		b.cfg.Logf("logging an event: %v", err)
		o.subs = b.subGen.Load()
		b.out.push(o)
	}
	return o
}

// ended records how session ss ended, with the end of its agent's stderr
// when stderr is not nil, and logs its status event in the same commit,
// so whoever reads the session ended finds its end in the log. Like every
// change of an ended session, it is retried until it is written (a full
// disk), or the session would stay "running" until a restart; it fails
// only when the bridge closes first.
func (b *Bridge) ended(ss *bridgeapi.Session, stderr *string) error {
	unlock := b.order.lock(ss.ID)
	b.fillWaiting(b.ctx, ss)
	var o *outgoing
	err := b.durably("session "+ss.ID+": marking it "+ss.Status, func(ctx context.Context) error {
		e := statusEvent(ss)
		data, _ := json.Marshal(e)
		o = &outgoing{e: e, done: make(chan struct{})}
		return b.st.setStatusLogged(ctx, ss, stderr, data, e.Time, b.queue(o))
	})
	unlock()
	if err != nil {
		return err
	}
	b.delivered(o)
	return nil
}

// queue is the store's after for o's event: once committed, it is queued
// for delivery to the subscriptions made so far; a later one finds it in
// the log (or in the state it reads), so it is not delivered there too,
// late, after what that one read.
func (b *Bridge) queue(o *outgoing) func(seq int64) {
	return func(seq int64) {
		o.e.Seq, o.subs = seq, b.subGen.Load()
		b.out.push(o)
	}
}

// delivered waits until o is delivered (or the deliverer has ended).
func (b *Bridge) delivered(o *outgoing) {
	select {
	case <-o.done:
	case <-b.out.exited:
	}
}

// outbox hands logged events from the store's writer to the deliverer, so
// the writer never waits for the bridge's lock.
type outbox struct {
	mu     sync.Mutex
	queue  []*outgoing
	wake   chan struct{} // 1-buffered: the queue has something
	exited chan struct{} // closed when the deliverer has ended
}

type outgoing struct {
	e    bridgeapi.Event
	subs int64         // delivered to the subscriptions numbered up to this
	done chan struct{} // closed when delivered
}

func (o *outbox) push(e *outgoing) {
	o.mu.Lock()
	o.queue = append(o.queue, e)
	o.mu.Unlock()
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// deliver hands each logged event to the subscriptions that want it, in
// order, until the bridge ends and the queue is empty.
func (b *Bridge) deliver() {
	defer close(b.out.exited)
	for {
		select {
		case <-b.out.wake:
		case <-b.ctx.Done():
		}
		b.mu.Lock()
		b.out.mu.Lock()
		queue := b.out.queue
		b.out.queue = nil
		b.out.mu.Unlock()
		if len(queue) == 0 && b.ctx.Err() != nil {
			b.mu.Unlock()
			return
		}
		for _, o := range queue {
			for s := range b.subs {
				if s.gen <= o.subs && (s.session == "" || s.session == o.e.SessionID) {
					s.deliver(o.e)
				}
			}
		}
		b.mu.Unlock()
		for _, o := range queue {
			close(o.done)
		}
	}
}

// shown is what the surfaces are shown of questions.
func shown(qs []protocol.Question) []protocol.Question {
	if !defect("descriptions-dropped") {
		return qs
	}
	out := make([]protocol.Question, len(qs))
	for i, q := range qs {
		q.Options = append([]protocol.Option(nil), q.Options...)
		for j := range q.Options {
			q.Options[j].Description = ""
		}
		out[i] = q
	}
	return out
}

// sent is what the agent is sent of the answers: them, unchanged, but in
// broken bridges that join multiSelect labels wrongly or key answers by
// index.
func sent(qs []protocol.Question, answers map[string]string) map[string]string {
	if defect("multi-comma") || defect("multi-one-label") || defect("keys-index") {
		return misjoin(qs, answers)
	}
	return answers
}

// keyedLocks is a mutex per key, made when first locked and dropped when
// nobody holds or waits for it: what happens to one question never waits
// for another's (an agent that stops reading its stdin stalls only the
// answer to its own question).
type keyedLocks struct {
	mu sync.Mutex
	m  map[string]*keyedLock
}

type keyedLock struct {
	sync.Mutex
	refs int
}

// lock locks key's mutex and returns its unlock.
func (k *keyedLocks) lock(key string) func() {
	k.mu.Lock()
	if k.m == nil {
		k.m = map[string]*keyedLock{}
	}
	l := k.m[key]
	if l == nil {
		l = &keyedLock{}
		k.m[key] = l
	}
	l.refs++
	k.mu.Unlock()
	l.Lock()
	return func() {
		l.Unlock()
		k.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(k.m, key)
		}
		k.mu.Unlock()
	}
}
