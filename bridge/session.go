package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/askctl/askctl/bridgeapi"
	"github.com/askctl/askctl/claudecli"
	"github.com/askctl/askctl/internal/clip"
	"github.com/askctl/askctl/protocol"
	"github.com/askctl/askctl/sdk"
)

// startSlotHold is the longest one agent's start holds its slot: an agent
// that hangs before system/init delays the starts behind it by this much,
// once. It is short, so that a slow agent (the real CLI takes about a
// second to its system/init) does not make the next session's start, and
// a question already asked, wait its whole start; fakeclaude reaches
// system/init well within it, so a burst of them is still metered.
const startSlotHold = 250 * time.Millisecond

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
	if replied, ok := ctx.Value(startReplyKey{}).(<-chan struct{}); ok && b.cfg.Crash != nil {
		b.replies.Store(ss.ID, replied)
		go func() { <-replied; b.replies.Delete(ss.ID) }()
	}
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
	s, err := sdk.Start(b.ctx, proc.Stdin, agentOutput(proc.Stdout), src, sdk.Options{
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
	closing := b.closing || defect("stop-keeps-questions") && b.stopping[id] // a stop taken for the bridge's own
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

func (b *Bridge) liveSession(id string) *live {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.live[id]
}
