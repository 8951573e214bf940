package bridge

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/askctl/askctl/bridgeapi"
	"github.com/askctl/askctl/claudecli"
	"github.com/askctl/askctl/protocol"
)

// What a bridge promises across a crash, and how it keeps it:
//
//   - A session it accepted is started. Its agent gets the prompt only
//     after "running" is stored, so a session a crash leaves "starting"
//     never got it, and the next bridge starts it (recover).
//   - An answer (a skip, a timeout) it accepted reaches the agent exactly
//     once. The resolution is stored "due" in the same write; the reply is
//     written to the agent; it is marked delivered (markDelivered) when the
//     agent says it took it in (the tool_result it writes, or, resumed, the
//     turn its late answer began). A
//     bridge that starts and finds replies still due waits for each lost
//     agent to end, then reads the agent's own session file: a reply found
//     there reached it; one not found (nothing written, a partial line, a
//     line the agent never read) is delivered through a resumed session
//     (redeliver).

// markDelivered records that question id's reply reached its agent. If
// the write fails, the reply stays due: a restarted bridge looks for it in
// the agent's session file, and finds it.
func (b *Bridge) markDelivered(id string) {
	if err := b.st.delivered(b.ctx, id); err != nil {
		b.cfg.Logf("question %s: its reply reached the agent; recording that: %v", id, err)
	}
}

// delivering notes that q's reply is written whole to live agent l: it is
// delivered when the agent writes the tool_result that says it has it. A
// line written is not a line taken in: an agent that dies before it reads
// it, or before it acts on it, never had it.
func (b *Bridge) delivering(l *live, q *bridgeapi.Question) {
	if q.ToolUseID == "" {
		b.markDelivered(q.ID) // nothing to know it by: as good as it gets
		return
	}
	l.await(q.ToolUseID, q.ID)
}

// agentGoneWait is how long a restarted bridge waits for a lost session's
// agent to end by itself (it reads its stdin to the end, then exits) before
// it kills it.
const agentGoneWait = 3 * time.Second

// recover keeps the promises a previous bridge made before it stopped:
// sessions it accepted and never started are started, and replies it
// stored and did not see delivered are delivered or found delivered. The
// work goes on in the background; the questions and sessions are listed
// as they are meanwhile.
func (b *Bridge) recover(ctx context.Context) error {
	due, err := b.st.due(ctx)
	if err != nil {
		return err
	}
	for _, q := range due {
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			b.redeliver(q)
		}()
	}
	// Questions left pending keep their deadlines, and the policy decides
	// them, as it would have.
	pend, err := b.st.questions(ctx, bridgeapi.QuestionPending, "")
	if err != nil {
		return err
	}
	for _, q := range pend {
		b.keepDeadline(q)
		b.startDeciding(q)
	}
	ss, err := b.st.sessions(ctx)
	if err != nil {
		return err
	}
	// A question a lost session's agent asked as its bridge died may not
	// have been stored. Its file is read once it is read to the end: a
	// bridge killed while it waited for the agent, or read, leaves the
	// session to the next.
	ids, err := b.st.unread(ctx)
	if err != nil {
		return err
	}
	unread := map[string]bool{}
	for _, id := range ids {
		unread[id] = true
	}
	n := 0
	for _, s := range ss {
		if s.Status == bridgeapi.StatusLost && unread[s.ID] {
			b.wg.Add(1)
			go func() {
				defer b.wg.Done()
				b.recoverAsked(s)
			}()
		}
		if s.Status != bridgeapi.StatusStarting {
			continue
		}
		env, _, err := b.sessionEnv(s.Scenario, "")
		if err != nil {
			s.Status, s.Detail, s.EndedAt = bridgeapi.StatusExited, "accepted by a previous bridge, and not started: "+err.Error(), time.Now()
			_ = b.st.setStatus(ctx, s)
			continue
		}
		s.Claude = b.cfg.Claude
		n++
		b.wg.Add(1)
		go b.startQueued(s, env)
	}
	if n > 0 {
		b.cfg.Logf("%d session(s) accepted before the bridge last stopped had not started: starting them now", n)
	}
	if len(due) > 0 {
		b.cfg.Logf("%d repl(ies) stored before the bridge last stopped were not seen to reach their agents: checking each agent's session file, and resuming the session where it lacks the reply", len(due))
	}
	return nil
}

// keepDeadline expires pending question q at its deadline (at once if it
// has passed).
func (b *Bridge) keepDeadline(q *bridgeapi.Question) {
	if defect("no-timeout") {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	left := max(0, time.Until(q.Deadline))
	if defect("restart-deadline-renewed") {
		left = b.cfg.Timeout // a whole timeout from the restart
	}
	b.timer[q.ID] = time.AfterFunc(left, func() { b.expire(q.ID) })
}

// redeliver settles a reply a previous bridge stored and did not see
// reach the agent.
func (b *Bridge) redeliver(q *bridgeapi.Question) {
	defer b.qlocks.lock(q.ID)()
	ctx := b.ctx
	ss, err := b.st.session(ctx, q.SessionID)
	if err != nil {
		b.cfg.Logf("question %s: its reply is due, and its session: %v", q.ID, err)
		return
	}
	if ss.Status != bridgeapi.StatusLost {
		// The agent ended on its own while the bridge still ran: there is
		// no one to deliver to.
		b.cfg.Logf("question %s: its agent ended (%s) before it took the reply in, while the bridge ran: nothing to deliver to", q.ID, ss.Status)
		b.markDelivered(q.ID)
		return
	}
	// An agent asks again only once it has the reply to what it asked
	// before: a later question of the session proves this reply arrived
	// (and its session must not be resumed twice).
	if later, err := b.st.questions(ctx, "", ss.ID); err == nil {
		for _, l := range later {
			if l.ID != q.ID && (l.CreatedAt.After(q.CreatedAt) && !defect("redeliver-earlier-question-counts") || defect("redeliver-earlier-question-counts") && l.CreatedAt.Before(q.CreatedAt)) {
				b.cfg.Logf("question %s: its agent asked again after it (%s): it was delivered", q.ID, l.ID)
				b.markDelivered(q.ID)
				return
			}
		}
	}
	b.awaitAgentGone(ss.ID)
	prompt := replyPrompt(q)
	if found, err := b.received(ss, q, prompt); err != nil {
		b.cfg.Logf("question %s: reading its agent's session file: %v; resuming the session with the reply", q.ID, err)
	} else if found {
		b.cfg.Logf("question %s: its reply is in the agent's session file: it was delivered", q.ID)
		b.markDelivered(q.ID)
		return
	}
	if err := b.resume(q, prompt, func() { b.markDelivered(q.ID) }); err != nil {
		b.cfg.Logf("question %s: its reply never reached the agent, and resuming session %s failed: %v", q.ID, ss.ID, err)
		if q.Status == bridgeapi.QuestionAnswered {
			// The person's answer reached no one: the question is theirs
			// to answer again.
			if err := b.st.reopen(ctx, q.ID, bridgeapi.QuestionPending, ""); err != nil {
				b.cfg.Logf("question %s: %v", q.ID, err)
			}
			b.publish(bridgeapi.Event{Type: bridgeapi.EventWithdrawn, SessionID: q.SessionID, QuestionID: q.ID,
				Reason: "the answer did not reach the agent before the bridge stopped, and its session could not be resumed: " + err.Error()})
		}
		return
	}
	b.cfg.Logf("question %s: its reply never reached the agent before the bridge stopped: session %s resumed with it", q.ID, ss.ID)
	if q.Status == bridgeapi.QuestionAnswered {
		b.publish(bridgeapi.Event{Type: bridgeapi.EventResumed, SessionID: q.SessionID, QuestionID: q.ID, Answers: q.Answers,
			Reason: "the answer had not reached the agent when the bridge stopped: its session was resumed with it"})
	}
	b.publishStatus(q.SessionID)
}

// recoverAsked stores the question a lost session's agent asked and the
// previous bridge did not store (it died in between): its AskUserQuestion
// call in the agent's session file with no tool_result. It is listed
// orphaned, and an answer resumes the session, as for any question a
// crash left pending.
func (b *Bridge) recoverAsked(ss *bridgeapi.Session) {
	if ss.ClaudeSessionID == "" {
		b.readAsked(ss) // no file to read: the agent never said its session
		return
	}
	b.awaitAgentGone(ss.ID)
	if b.ctx.Err() != nil {
		return // the next bridge reads it
	}
	toolUseID, input, askedAt, err := b.unanswered(ss)
	if err != nil {
		b.cfg.Logf("session %s: reading its agent's session file: %v", ss.ID, err)
		return
	}
	if toolUseID == "" {
		b.readAsked(ss)
		return
	}
	known, err := b.st.questions(b.ctx, "", ss.ID)
	if err != nil {
		return
	}
	for _, q := range known {
		if q.ToolUseID == toolUseID && !defect("recover-asked-matches-request-id") || defect("recover-asked-matches-request-id") && q.RequestID == toolUseID {
			b.readAsked(ss) // stored: it is listed, or was settled
			return
		}
	}
	in, err := protocol.ParseAskInput(input)
	if err != nil || len(in.Questions) == 0 {
		b.cfg.Logf("session %s: its agent asked %s as the bridge stopped, with input it cannot read: %v", ss.ID, toolUseID, err)
		b.readAsked(ss)
		return
	}
	b.crash(CrashAskFound)
	// Its deadline runs from the ask, which its row in the session file
	// dates, not from now: a restart moves no deadline.
	now := time.Now()
	if askedAt.IsZero() || askedAt.After(now) {
		askedAt = now
	}
	q := &bridgeapi.Question{ID: newID("q_"), SessionID: ss.ID, ToolUseID: toolUseID, Questions: in.Questions, Status: bridgeapi.QuestionPending,
		CreatedAt: askedAt, Deadline: askedAt.Add(b.cfg.Timeout), TimeoutSeconds: timeoutSeconds(b.cfg.Timeout), Input: input, Orphaned: true}
	unlock := b.qlocks.lock(q.ID)
	defer unlock()
	if err := b.st.insertOrphan(b.ctx, q); err != nil {
		b.cfg.Logf("session %s: storing the question its agent asked as the bridge stopped: %v", ss.ID, err)
		return
	}
	b.readAsked(ss) // a bridge killed before this finds the question stored
	b.cfg.Logf("session %s: its agent asked as the bridge stopped, before the question was stored: stored now as %s; answering it resumes the session", ss.ID, q.ID)
	b.keepDeadline(q)
	b.publish(bridgeapi.Event{Type: bridgeapi.EventQuestion, SessionID: q.SessionID, QuestionID: q.ID, Questions: shown(q.Questions), TimeoutSeconds: q.TimeoutSeconds})
	b.publishStatus(q.SessionID)
	b.startDeciding(q)
}

// readAsked records that ss's agent file was read for a question asked as
// its bridge died: no later bridge reads it again.
func (b *Bridge) readAsked(ss *bridgeapi.Session) {
	if err := b.st.read(b.ctx, ss.ID); err != nil {
		b.cfg.Logf("session %s: recording that its agent's file was read: %v", ss.ID, err)
	}
}

// unanswered is the last AskUserQuestion call in a session's file that has
// no tool_result, or only the one the agent writes when its stdin closes
// while it asks: its tool_use id and input ("" if there is none).
func (b *Bridge) unanswered(ss *bridgeapi.Session) (string, json.RawMessage, time.Time, error) {
	var id string
	var input json.RawMessage
	var at time.Time
	err := b.eachRow(ss, func(r sessionRow) bool {
		for _, bl := range r.Blocks {
			switch {
			case r.Type == "assistant" && bl.Type == "tool_use" && bl.Name == protocol.ToolAskUserQuestion:
				id, input, at = bl.ID, bl.Input, r.T
			case r.Type == "user" && bl.Type == "tool_result" && bl.ToolUseID == id && !r.Unanswered:
				id, input, at = "", nil, time.Time{}
			}
		}
		return false
	})
	return id, input, at, err
}

// replyPrompt is the first message of a session resumed to deliver q's
// stored reply.
func replyPrompt(q *bridgeapi.Question) string {
	switch q.Status {
	case bridgeapi.QuestionAnswered:
		return LateAnswerPrompt(q.Questions, q.Answers)
	case bridgeapi.QuestionExpired:
		return DeclinedPrompt(q.Questions, "nobody answered in time: the question timed out")
	}
	return DeclinedPrompt(q.Questions, "the user declined to answer: "+q.Reason)
}

// DeclinedPrompt is the first message of a session resumed to tell the
// agent that its question was skipped or timed out (why).
func DeclinedPrompt(qs []protocol.Question, why string) string {
	var parts []string
	for _, q := range qs {
		parts = append(parts, fmt.Sprintf("%q", q.Question))
	}
	return "You previously asked the user (AskUserQuestion) " + strings.Join(parts, "; ") +
		", and the session stopped before the reply came: " + why + ". Continue without the answer."
}

// awaitAgentGone waits for the agent a lost session last ran as to end,
// and kills it (its process group) after agentGoneWait: until it is gone,
// what it read is not all in its session file.
func (b *Bridge) awaitAgentGone(session string) {
	pid, start, err := b.st.agent(b.ctx, session)
	if err != nil || pid <= 0 || start == "" {
		return
	}
	gone := func() bool { return procStart(pid) != start }
	deadline := time.Now().Add(agentGoneWait)
	for !gone() {
		if time.Now().After(deadline) {
			b.cfg.Logf("session %s: its agent (pid %d) still runs %v after the bridge restarted: killing it", session, pid, agentGoneWait)
			killGroup(pid)
			deadline = time.Now().Add(agentGoneWait)
			for !gone() && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			return
		}
		select {
		case <-b.ctx.Done():
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// received reports whether the agent's session file holds q's reply: the
// tool_result of its AskUserQuestion call, or a prompt that is prompt (a
// resumed session that got it).
func (b *Bridge) received(ss *bridgeapi.Session, q *bridgeapi.Question, prompt string) (bool, error) {
	found := false
	err := b.eachRow(ss, func(r sessionRow) bool {
		if r.Type != "user" {
			return false
		}
		if r.Text == prompt {
			found = true
		}
		for _, bl := range r.Blocks {
			of := bl.ToolUseID // the call a tool result is of
			if defect("redeliver-matched-on-block-id") {
				of = bl.ID
			}
			if bl.Type == "tool_result" && q.ToolUseID != "" && of == q.ToolUseID && (isReply(q, bl) || defect("redeliver-any-tool-result")) || bl.Type == "text" && bl.Text == prompt {
				found = true
			}
		}
		return found
	})
	return found, err
}

// sessionBlock is a content block of a session file's message.
type sessionBlock struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Text      string          `json:"text"`
	IsError   bool            `json:"is_error"`
	Content   json.RawMessage `json:"content"`
}

// isReply reports whether tool_result bl records q's reply, not another
// end of the call: an agent whose stdin closes while it waits records the
// call as declined ("The user doesn't want to proceed…"). An answer is a
// result that is no error; a skip or a timeout is an error that carries
// its message.
func isReply(q *bridgeapi.Question, bl sessionBlock) bool {
	if q.Status == bridgeapi.QuestionAnswered {
		return !bl.IsError
	}
	msg := q.Reason
	if q.Status == bridgeapi.QuestionExpired {
		msg = "timed out"
	}
	var text string
	if json.Unmarshal(bl.Content, &text) != nil {
		text = string(bl.Content) // blocks: their raw JSON holds the text
	}
	return bl.IsError && msg != "" && strings.Contains(text, msg)
}

// sessionRow is a message row of an agent's session file.
type sessionRow struct {
	T      time.Time // its timestamp (zero: none, or not one the CLI writes)
	Type   string
	Blocks []sessionBlock // its content blocks
	Text   string         // its content, when that is a string
	// Unanswered marks the row of a tool result the agent wrote for a
	// request its stdin closed on: the CLI withdraws the request
	// (interruptedByShutdown) or, in releases before that, fails the tool
	// (toolDenialUnanswered). Nobody answered it.
	Unanswered bool
}

// eachRow calls f with each message row of the agent's session file; f
// returning true stops. A missing file has no rows.
func (b *Bridge) eachRow(ss *bridgeapi.Session, f func(sessionRow) bool) error {
	if ss.ClaudeSessionID == "" {
		return nil
	}
	extra, _, _ := b.sessionEnv(ss.Scenario, "")
	getenv := lookup(append(append(os.Environ(), b.cfg.Env...), extra...))
	home := getenv("HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	file, err := os.Open(claudecli.SessionFile(claudecli.ConfigDir(getenv, home), b.agentCwd(), ss.ClaudeSessionID))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	defer file.Close()
	sc := bufio.NewScanner(file)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		var row struct {
			Type    string `json:"type"`
			Message struct {
				Content json.RawMessage `json:"content"`
			} `json:"message"`
			InterruptedByShutdown bool   `json:"interruptedByShutdown"`
			ToolDenialUnanswered  bool   `json:"toolDenialUnanswered"`
			Timestamp             string `json:"timestamp"` // parsed apart: a row with another format still counts
		}
		if json.Unmarshal(sc.Bytes(), &row) != nil {
			continue
		}
		r := sessionRow{Type: row.Type, Unanswered: row.InterruptedByShutdown || row.ToolDenialUnanswered}
		r.T, _ = time.Parse(time.RFC3339Nano, row.Timestamp)
		if json.Unmarshal(row.Message.Content, &r.Text) != nil {
			_ = json.Unmarshal(row.Message.Content, &r.Blocks)
		}
		if f(r) {
			return nil
		}
	}
	return sc.Err()
}

// agentCwd is the agents' working directory as the CLI names it.
func (b *Bridge) agentCwd() string {
	if b.cfg.Dir == "" {
		return claudecli.RealCwd()
	}
	d, err := filepath.Abs(b.cfg.Dir)
	if err != nil {
		return b.cfg.Dir
	}
	if r, err := filepath.EvalSymlinks(d); err == nil {
		return r
	}
	return d
}

// lookup is getenv over env, the last setting winning (as exec does).
func lookup(env []string) func(string) string {
	return func(k string) string {
		for i := len(env) - 1; i >= 0; i-- {
			if v, ok := strings.CutPrefix(env[i], k+"="); ok {
				return v
			}
		}
		return ""
	}
}
