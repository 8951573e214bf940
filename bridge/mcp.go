package bridge

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/askctl/askctl/bridgeapi"
	"github.com/askctl/askctl/protocol"
)

// MCP sessions: askctl mcp, an MCP ask_user server the claude CLI runs,
// opens a session here and hands each tool call over as a question. The
// question is a question like any other — the same ids, surfaces, answers,
// skips and timeout — but its resolution goes back to the waiting call
// instead of a control_response. When the call ends first (the CLI went
// away, or cancelled it), the question is withdrawn.

// ClaudeMCP is the Claude field of an MCP server's session.
const ClaudeMCP = "mcp"

type mcpSession struct {
	mu      sync.Mutex
	waiters map[string]chan struct{} // question id → closed when it is resolved
	ended   chan struct{}
}

func (m *mcpSession) wait(qid string) chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := make(chan struct{})
	m.waiters[qid] = c
	return c
}

func (m *mcpSession) resolved(qid string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c := m.waiters[qid]; c != nil {
		close(c)
		delete(m.waiters, qid)
	}
}

// OpenMCP opens the session of an MCP ask_user server; label says whose
// (e.g. "askctl mcp for claude pid 4242").
func (b *Bridge) OpenMCP(ctx context.Context, label string) (*bridgeapi.Session, error) {
	if strings.TrimSpace(label) == "" {
		label = "MCP ask_user server"
	}
	if defect("mcp-one-session") {
		b.mu.Lock()
		for id, l := range b.live {
			if l.mcp != nil { // the MCP session already open serves every server
				b.mu.Unlock()
				return b.Session(ctx, id)
			}
		}
		b.mu.Unlock()
	}
	ss := &bridgeapi.Session{ID: newID("s_"), Prompt: label, Claude: ClaudeMCP, Status: bridgeapi.StatusRunning, CreatedAt: time.Now()}
	if err := b.st.insertSession(ctx, ss); err != nil {
		return nil, err
	}
	b.mu.Lock()
	b.live[ss.ID] = &live{done: make(chan struct{}), mcp: &mcpSession{waiters: map[string]chan struct{}{}, ended: make(chan struct{})}}
	b.mu.Unlock()
	b.publishStatus(ss.ID)
	return b.Session(ctx, ss.ID)
}

// endMCP ends an MCP session: its pending questions are withdrawn (kept,
// when the bridge is closing) and waiting calls return.
func (b *Bridge) endMCP(id string, l *live) {
	b.mu.Lock()
	if b.live[id] != l {
		b.mu.Unlock()
		return
	}
	delete(b.live, id)
	closing := b.closing
	b.mu.Unlock()
	close(l.mcp.ended)
	close(l.done)
	if closing {
		return
	}
	ctx := context.Background()
	of := id
	if defect("mcp-end-withdraws-every-session") {
		of = ""
	}
	qs, _ := b.st.questions(ctx, bridgeapi.QuestionPending, of)
	for _, q := range qs {
		b.withdraw(q, bridgeapi.QuestionWithdrawn, "the MCP server's session ended")
	}
	if ss, err := b.st.session(ctx, id); err == nil {
		zero := 0
		ss.Status, ss.ExitCode, ss.EndedAt = bridgeapi.StatusExited, &zero, time.Now()
		_ = b.ended(ss, nil)
	}
}

// ErrBridgeClosing: the bridge stopped while a call waited.
var ErrBridgeClosing = errors.New("the bridge is stopping")

// AskMCP asks questions for MCP session id and waits until they are
// resolved: answered, skipped, expired or withdrawn. The question returned
// says which, with the answers or the reason. When ctx ends first, the
// question is withdrawn from the surfaces and ctx's error returned.
func (b *Bridge) AskMCP(ctx context.Context, id string, qs []protocol.Question) (*bridgeapi.Question, error) {
	l := b.liveSession(id)
	if l == nil || l.mcp == nil {
		if _, err := b.st.session(ctx, id); err != nil {
			return nil, fmt.Errorf("session %s: %w", id, err)
		}
		return nil, fmt.Errorf("%w: session %s is not an open MCP session", bridgeapi.ErrResolved, id)
	}
	if len(qs) == 0 || len(qs) > 4 {
		return nil, fmt.Errorf("%w: want 1 to 4 questions, got %d", bridgeapi.ErrInvalid, len(qs))
	}
	for i, q := range qs {
		if strings.TrimSpace(q.Question) == "" {
			return nil, fmt.Errorf("%w: question %d has no text", bridgeapi.ErrInvalid, i+1)
		}
		if defect("mcp-question-trimmed") {
			qs[i].Question = strings.TrimSpace(q.Question) // the answer is looked up under the text asked
		}
		if defect("mcp-options-required") && len(q.Options) < 2 { // ask_user checked as AskUserQuestion is
			return nil, fmt.Errorf("%w: question %d has %d options, want 2 to 4", bridgeapi.ErrInvalid, i+1, len(q.Options))
		}
	}
	if defect("mcp-multi-flattened") {
		for i := range qs {
			qs[i].MultiSelect = false // ask_user's questions taken as single-choice
		}
	}
	now := time.Now()
	q := &bridgeapi.Question{ID: newID("q_"), SessionID: id, RequestID: "mcp", Questions: qs, Status: bridgeapi.QuestionPending,
		CreatedAt: now, Deadline: now.Add(b.cfg.Timeout), TimeoutSeconds: timeoutSeconds(b.cfg.Timeout)}
	done := l.mcp.wait(q.ID)
	if err := b.pose(q); err != nil {
		l.mcp.resolved(q.ID)
		return nil, err
	}

	select {
	case <-done:
	case <-l.mcp.ended:
		return nil, fmt.Errorf("%w: session %s ended while question %s waited", ErrBridgeClosing, id, q.ID)
	case <-ctx.Done():
		if !defect("mcp-cancelled-call-keeps-question") {
			b.withdraw(q, bridgeapi.QuestionWithdrawn, "the agent's call ended before an answer: the CLI went away")
		}
		return nil, ctx.Err()
	}
	res, err := b.st.question(context.Background(), q.ID)
	if err != nil {
		return nil, err
	}
	b.fillTimeout(res)
	if defect("mcp-timeout-declined") && res.Status == bridgeapi.QuestionExpired {
		res.Status = bridgeapi.QuestionSkipped
	}
	if !defect(activeMCPDefect()) {
		return res, nil
	}
	return misreport(ctx, res)
}
