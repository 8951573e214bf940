//go:build askctl_broken

package bridge

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/askctl/askctl/bridgeapi"
	"github.com/askctl/askctl/protocol"
)

// A bridge built with -tags askctl_broken has the one defect named by
// ASKCTL_DEFECT, for the conformance suite's own tests. Never shipped.
var activeDefect = os.Getenv("ASKCTL_DEFECT")

func defect(name string) bool { return activeDefect == name }

// Defects are the defects a broken bridge can have, each a mistake seen in
// real bridges.
var Defects = []string{
	"skip-allow-empty", "multi-comma", "multi-one-label", "keys-index", "no-timeout", "timeout-allow",
	"late-forwarded", "double-answer", "lost-on-reconnect", "takeover-ignored", "sessions-crossed",
	"descriptions-dropped", "cancel-ignored", "lost-on-restart", "partial-sent",
	"mcp-timeout-empty", "mcp-skip-success", "mcp-multi-first", "mcp-never-returns",
}

// activeMCPDefect is the active defect when it is one of the MCP server's.
func activeMCPDefect() string {
	if strings.HasPrefix(activeDefect, "mcp-") {
		return activeDefect
	}
	return "-"
}

// misreport is a broken MCP server's account of how a question ended: a
// timeout or a skip reported as an (empty) answer, a multiSelect answer cut
// to its first label, or no account at all (the call never returns).
func misreport(ctx context.Context, q *bridgeapi.Question) (*bridgeapi.Question, error) {
	c := *q
	switch {
	case defect("mcp-timeout-empty") && q.Status == bridgeapi.QuestionExpired:
		c.Status, c.Answers = bridgeapi.QuestionAnswered, map[string]string{}
	case defect("mcp-skip-success") && q.Status == bridgeapi.QuestionSkipped:
		c.Status, c.Answers = bridgeapi.QuestionAnswered, map[string]string{}
	case defect("mcp-multi-first") && q.Status == bridgeapi.QuestionAnswered:
		c.Answers = map[string]string{}
		for k, v := range q.Answers {
			c.Answers[k], _, _ = strings.Cut(v, ", ")
		}
	case defect("mcp-never-returns"):
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return &c, nil
}

func misjoin(qs []protocol.Question, answers map[string]string) map[string]string {
	out := map[string]string{}
	for i, q := range qs {
		a := answers[q.Question]
		switch {
		case defect("multi-comma") && q.MultiSelect:
			a = strings.ReplaceAll(a, ", ", ",")
		case defect("multi-one-label") && q.MultiSelect:
			a, _, _ = strings.Cut(a, ", ")
		}
		key := q.Question
		if defect("keys-index") {
			key = fmt.Sprintf("q_%d", i)
		}
		out[key] = a
	}
	return out
}

// forwardAgain is a broken bridge's answer to an answer that came too
// late: it sends it to the agent anyway.
func (b *Bridge) forwardAgain(ctx context.Context, id string, given map[string]bridgeapi.Answer, resolved error) (*bridgeapi.AnswerResult, error) {
	q, err := b.st.question(ctx, id)
	if err != nil {
		return nil, resolved
	}
	if defect("double-answer") && time.Since(q.ResolvedAt) > 2*time.Second {
		return nil, resolved
	}
	l := b.liveSession(q.SessionID)
	if l == nil {
		return nil, resolved
	}
	answers := map[string]string{}
	for k, v := range given {
		answers[k] = protocol.JoinLabels(v)
	}
	msg, err := protocol.Reply{Answers: answers}.Response(q.RequestID, protocol.ToolAskUserQuestion, q.Input)
	if err != nil {
		return nil, resolved
	}
	_ = l.s.Send(msg)
	return &bridgeapi.AnswerResult{Question: q}, nil
}
