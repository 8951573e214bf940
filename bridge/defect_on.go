//go:build askctl_broken

package bridge

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
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
	"other-collapsed", "multi-option-order", "answer-latin1", "skip-reason-dropped", "skip-other-pending",
	"replay-multiselect-lost", "replay-outcome-dropped", "deadline-reset-held", "timeout-says-skipped",
	"snapshot-all-sessions", "exit-withdraw-silent", "passthrough-blocked-path", "passthrough-input-strings",
	"expiry-not-persisted",
	// A third batch, held out: written by a reader of the bridge and the
	// requirements who read none of the suite, after the explorer.
	"questions-reencoded", "other-html-escaped", "multi-other-dropped", "draft-ignored", "skip-error-response",
	"double-answer-acked", "replay-request-id", "takeover-skip-bypass", "held-stops-deadline", "pending-filter-param",
	"exit-withdraws-all", "passthrough-withdraws-pending", "orphan-not-marked", "mcp-timeout-declined",
	// A bridge that answers every question itself with its first options
	// and shows none to a person (a shortcut seen in real bridges).
	"self-answer",
	// An SSE stream resumed with Last-Event-ID starts over as a new one.
	"resume-ignores-last-id",
	// A fourth batch, held out
	"multi-json-text", "other-as-annotation", "deny-reason-field", "resume-skips-one", "takeover-no-replay",
	"timeout-grace-added", "timeout-surface-silent", "status-pending-any-session", "cancel-first-pending",
	"passthrough-tool-use-id", "orphan-answer-refused", "mcp-multi-flattened", "mcp-one-session",
	"control-withdraw-unsent",
	// A fifth batch, held out
	"takeover-marks-new-conn", "withdrawn-event-request-id", "deadline-stored-as-created", "mcp-timeout-call-hangs",
	"control-timeout-status-cancelled", "pending-list-unfiltered", "skip-blank-reason-kept", "passthrough-policy-constant",
	"takeover-key-per-dialect", "sse-replayed-by-session",
	// its four in the page (pageDefects)
	"page-multiselect-field-case", "page-taken-page-reconnects", "page-timeout-event-name", "page-other-text-trimmed",
	// A sixth batch, held out: those it taught the suite to catch
	"redeliver-earlier-question-counts", "recover-asked-matches-request-id", "ws-read-limit-default",
	"page-skip-button-sends", "page-multi-uncheck-drops-later", "page-other-typed-not-picked",
	// Taught by none: a line of the agent's stream longer than a line
	// reader's default, where the reading stops.
	"agent-scanner-64k",
	// ask_user's optional fields taken as required: a question alone is
	// refused.
	"mcp-options-required",
	// The sixth batch's, caught since by the rule that a status agrees
	// with what waits.
	"status-read-without-waiting",
	// A seventh batch, held out: the one in the page that taught rows,
	// the page that never reconnects by itself (offline and online), and
	// requests routed by the CLI's requires_user_interaction rather than
	// the tool's name (ExitPlanMode's prompt carries it too).
	"page-other-text-wrong-index", "page-socket-forgotten-on-close", "route-by-interaction-flag",
	// An eighth batch, held out: those it taught the suite to catch (a
	// reply counted delivered on any tool result of the call, a skip
	// reported to ask_user as a withdrawal, an empty set of answers over
	// /ws taken for a skip, a refused card locked on the page, a timeout
	// that ends only an untouched card).
	"redeliver-any-tool-result", "mcp-skip-withdrawn", "ws-empty-answers-skip",
	"page-error-state-locks-card", "page-timeout-pending-only",
	// A ninth batch, held out: a restored question given a whole timeout
	// from the restart; ask_user's question trimmed; a session stopped
	// from the surface left with its question pending (shown by a CLI
	// before 2.1.328, which does not withdraw it as its stdin closes).
	"restart-deadline-renewed", "mcp-question-trimmed", "stop-keeps-questions",
	// A tenth batch, held out: those it taught the suite to catch
	"stop-before-closing", "redeliver-matched-on-block-id", "bad-answer-reported-resolved",
	// (the MCP server's, in internal/mcpask)
	"mcp-option-label-optional", "mcp-free-text-quoted",
	// and one the cases could not meet then: an ask_user call the CLI ends
	// (notifications/cancelled) leaves its question pending (a scenario's
	// mcp step now takes cancel_after).
	"mcp-cancelled-call-keeps-question",
	// An eleventh batch, held out: those it taught the suite to catch (a
	// body with more after its JSON value taken; a ws skip that carries
	// answers allowed; an MCP agent's end withdrawing every session's
	// question; a late answer not stored as due, lost in a crash before
	// the resume).
	"trailing-json-accepted", "ws-skip-with-answers-allowed", "mcp-end-withdraws-every-session",
	"late-answer-not-stored-due",
}

// Variants are not defects: bridges that differ from the reference one
// as the requirements allow, for the suite's tests that it passes them.
// parts-refused refuses part of a request's answers (SDK-ANSWER-ALL: held
// or refused) instead of holding it.
var Variants = []string{"parts-refused"}

// pageDefects are the broken pages: each a one-line edit of the page's
// script (what it has, what the broken one has instead), served in its
// place.
var pageDefects = map[string][2]string{
	"page-multiselect-field-case":    {"const multi = !!q.multiSelect;", "const multi = !!q.multiselect;"},
	"page-taken-page-reconnects":     {"if (page.ws !== ws || page.taken) return;", "if (page.ws !== ws) return;"},
	"page-timeout-event-name":        {`case "ask_user_timeout":`, `case "ask_user_expired":`},
	"page-other-text-trimmed":        {`c["text" + i].value : v));`, `c["text" + i].value.trim() : v));`},
	"page-skip-button-sends":         {"onclick: () => skip(c) });", "onclick: () => send(c) });"},
	"page-multi-uncheck-drops-later": {"p.splice(at, 1);", "p.splice(at);"},
	"page-other-typed-not-picked":    {"other.checked = want;\n        choose(OTHER, other);", "other.checked = want;"},
	// The seventh batch's: the pick's index shadows the question's.
	"page-other-text-wrong-index": {`c.picks[i].map((v) => (v === OTHER ? c["text" + i].value : v))`, `c.picks[i].map((v, i) => (v === OTHER ? c["text" + i].value : v))`},
	// And its page that forgets its socket on a close, so that its own
	// retry never fires: it never reconnects by itself.
	"page-socket-forgotten-on-close": {"const wait = Math.min(5000, 250 * 2 ** page.retry++);", "page.ws = null;\n      const wait = Math.min(5000, 250 * 2 ** page.retry++);"},
	// The eighth batch's: a card refused (its controls then disabled for
	// good), and a timeout that ends only a card nobody touched.
	"page-error-state-locks-card": {`const live = state === "pending" || state === "error";`, `const live = state === "pending";`},
	"page-timeout-pending-only":   {`if (c) ended(c, "expired",`, `if (c && c.state === "pending") ended(c, "expired",`},
	// The tenth batch's: a replay keeps the card the page holds, open or
	// not, so a page that takes its session back leaves it taken over.
	"page-replay-keeps-ended-card": {"if (c && open(c)) return; // a replay of one shown already\n        if (c) c.el.remove();", "if (c) return; // a replay of one shown already"},
}

// pageEdited is the page's file name as the broken page has it, where the
// active defect is a page's and name is its script; an error where the
// script no longer has the line the defect edits.
func pageEdited(name string) ([]byte, bool, error) {
	edit, ok := pageDefects[activeDefect]
	if !ok || name != "app.js" {
		return nil, false, nil
	}
	data, err := pageFiles.ReadFile("page/app.js")
	if err != nil || !bytes.Contains(data, []byte(edit[0])) {
		return nil, false, fmt.Errorf("page defect %s: the page's script no longer has %q", activeDefect, edit[0])
	}
	return bytes.Replace(data, []byte(edit[0]), []byte(edit[1]), 1), true, nil
}

// A broken page whose edit no longer applies would fail its case for
// another reason, and prove nothing: the bridge does not start.
func init() {
	if _, _, err := pageEdited("app.js"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
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
	case defect("mcp-skip-withdrawn") && q.Status == bridgeapi.QuestionSkipped:
		c.Status, c.Reason = bridgeapi.QuestionWithdrawn, "skipped: "+q.Reason
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

// optionOrder is a broken bridge's multiSelect answer: the selected labels
// collected by walking the options (checkbox order), not in the order the
// person picked them; what is no label (free text) goes last.
func optionOrder(q protocol.Question, a string) string {
	picked := strings.Split(a, protocol.MultiSelectSeparator)
	sel := map[string]bool{}
	for _, l := range picked {
		sel[l] = true
	}
	var out []string
	for _, o := range q.Options {
		if sel[o.Label] {
			out = append(out, o.Label)
		}
	}
	for _, l := range picked {
		if !protocol.IsLabel(q, l) {
			out = append(out, l)
		}
	}
	return protocol.JoinLabels(out)
}

// latin1Answers is a broken bridge's reading of answers: each byte taken as
// a character (Latin-1), so UTF-8 text comes out as mojibake ("é" → "Ã©").
func latin1Answers(given map[string]bridgeapi.Answer) map[string]bridgeapi.Answer {
	out := make(map[string]bridgeapi.Answer, len(given))
	for k, vals := range given {
		c := make(bridgeapi.Answer, len(vals))
		for i, v := range vals {
			r := make([]rune, len(v))
			for j := 0; j < len(v); j++ {
				r[j] = rune(v[j])
			}
			c[i] = string(r)
		}
		out[k] = c
	}
	return out
}

// agentOutput is the agent's stdout as the bridge reads it. With
// agent-scanner-64k it goes through a bufio.Scanner left at its default
// buffer, as many bridges read the CLI: a line over 64 KiB ends the
// scan, and so the bridge hears nothing more from that agent.
func agentOutput(r io.Reader) io.Reader {
	if !defect("agent-scanner-64k") {
		return r
	}
	pr, pw := io.Pipe()
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			if _, err := pw.Write(append(sc.Bytes(), '\n')); err != nil {
				return
			}
		}
		pw.CloseWithError(sc.Err())
	}()
	return pr
}
