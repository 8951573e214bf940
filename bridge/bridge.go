package bridge

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/askctl/askctl/bridgeapi"
	"github.com/askctl/askctl/policy"
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
	// CrashAnswerWritten, CrashResumeCommitted, CrashSkipCommitted,
	// CrashExpiryCommitted, CrashAskRead, CrashAskFound (CrashPoints).
	Crash func(point string)
}

// The points where Config.Crash is called.
const (
	CrashAccepted        = "session-accepted" // a session stored, its agent not yet spawned
	CrashAnswerCommitted = "answer-committed" // an answer stored, nothing written to the agent
	CrashAnswerWritten   = "answer-written"   // the answer written whole to the agent, not yet marked delivered
	CrashResumeCommitted = "resume-committed" // a late answer stored, the session not yet resumed
	CrashSkipCommitted   = "skip-committed"   // a person's skip stored, nothing written to the agent
	CrashExpiryCommitted = "expiry-committed" // a timeout stored, nothing written to the agent
	CrashAskRead         = "ask-read"         // an agent's question read, not yet stored
	CrashAskFound        = "ask-found"        // a restarted bridge found the question a lost agent asked, not yet stored
)

// CrashPoints are the points Config.Crash is called at, in the order a
// session meets them.
var CrashPoints = []string{CrashAccepted, CrashAskRead, CrashAskFound, CrashAnswerCommitted, CrashAnswerWritten,
	CrashResumeCommitted, CrashSkipCommitted, CrashExpiryCommitted}

// WithStartReply is ctx for StartSession by a caller that replies to a
// starter once it returns (the HTTP API): replied is closed once the reply
// is given. Where a crash hook is set, the ask-read point waits for it: an
// agent that asks at once must not end the bridge before its starter has
// the session's id (that would be a crash of the start, not of a question
// read).
func WithStartReply(ctx context.Context, replied <-chan struct{}) context.Context {
	return context.WithValue(ctx, startReplyKey{}, replied)
}

type startReplyKey struct{}

// awaitStartReply waits, at most limit, for the reply to session's start
// to be given, where its starter has one to give.
func (b *Bridge) awaitStartReply(session string, limit time.Duration) {
	v, ok := b.replies.Load(session)
	if !ok {
		return
	}
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case <-v.(<-chan struct{}):
	case <-t.C:
	case <-b.ctx.Done():
	}
}

func (b *Bridge) crash(point string) {
	if b.cfg.Crash != nil {
		b.cfg.Crash(point)
	}
}

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
	// replies are the sessions whose start has a reply still to give (a
	// channel closed once given: WithStartReply), where a crash hook is
	// set: the ask-read point waits for it.
	replies  sync.Map
	closeErr error
	ctx      context.Context
	end      context.CancelFunc
	wg       sync.WaitGroup

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
	b.closing = !defect("stop-before-closing")
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
	if defect("stop-before-closing") {
		b.mu.Lock()
		b.closing = true // the agents are stopped: nothing more will start
		b.mu.Unlock()
	}
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
	filter := ss.ID
	if defect("status-pending-any-session") {
		filter = ""
	}
	qs, _ := b.st.questions(ctx, bridgeapi.QuestionPending, filter)
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
