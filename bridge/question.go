package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/askctl/askctl/bridgeapi"
	"github.com/askctl/askctl/policy"
	"github.com/askctl/askctl/protocol"
	"github.com/askctl/askctl/sdk"
)

// ask is the bridge as the sessions' source of answers: AskUserQuestion
// becomes a pending question; other tools follow the policy at once.
func (b *Bridge) ask(sessionID string, s *sdk.Session, r sdk.Request) {
	if r.ToolName != protocol.ToolAskUserQuestion && !(defect("route-by-interaction-flag") && r.RequiresUserInteraction) {
		if defect("passthrough-withdraws-pending") {
			pend, _ := b.st.questions(context.Background(), bridgeapi.QuestionPending, sessionID)
			for _, q := range pend {
				b.withdraw(q, bridgeapi.QuestionWithdrawn, "the agent moved on to "+r.ToolName)
			}
		}
		reply := protocol.Reply{Allow: true}
		if b.cfg.OtherTools == "deny" || defect("passthrough-policy-constant") || defect("passthrough-blocked-path") && r.BlockedPath != "" {
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
		if defect("passthrough-tool-use-id") {
			if msg, err := reply.Response(r.ToolUseID, r.ToolName, r.Input); err == nil { // the tool_use id taken for the request id
				_ = s.Send(msg)
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
	if b.cfg.Crash != nil {
		b.awaitStartReply(sessionID, 5*time.Second)
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
		wait := b.cfg.Timeout
		if defect("timeout-grace-added") {
			wait += 5 * time.Second // a grace for a surface whose answer is on its way
		}
		b.timer[q.ID] = time.AfterFunc(wait, func() { b.expire(q.ID) })
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
	if defect("parts-refused") && len(missing) > 0 {
		return nil, fmt.Errorf("%w: question %s: answer every question at once (missing %s)", bridgeapi.ErrInvalid, id, strings.Join(missing, ", "))
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
	if l == nil && (!q.Orphaned || defect("orphan-answer-refused")) {
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
	due := q.Orphaned || l.mcp == nil
	if defect("late-answer-not-stored-due") {
		due = !q.Orphaned && l.mcp == nil
	}
	if err := b.claim(ctx, q, bridgeapi.QuestionAnswered, merged, "", due); err != nil {
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
		reply := protocol.Reply{Answers: sent(q.Questions, merged)}
		if defect("other-as-annotation") {
			answers, notes := map[string]string{}, map[string]protocol.Annotation{}
			for _, qq := range q.Questions {
				answers[qq.Question] = reply.Answers[qq.Question]
				if a := answers[qq.Question]; !qq.MultiSelect && !protocol.IsLabel(qq, a) {
					answers[qq.Question], notes[qq.Question] = "Other", protocol.Annotation{Notes: a} // free text as the "Other" choice, with its text as notes
				}
			}
			reply = protocol.Reply{Answers: answers, Annotations: notes}
		}
		return l.respond(q, reply)
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
	if strings.TrimSpace(reason) == "" && !(defect("skip-blank-reason-kept") && reason != "") {
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
		b.crash(CrashSkipCommitted)
		reply := protocol.Reply{Skip: true, Message: reason, Interrupt: interrupt}
		if defect("skip-allow-empty") {
			reply = protocol.Reply{Allow: true}
		}
		if defect("skip-error-response") {
			reply = protocol.Reply{Error: reason}
		}
		respond := func() error { return l.respond(q, reply) }
		if defect("deny-reason-field") && l.mcp == nil {
			respond = func() error { // the reason under "reason", not "message"
				raw, _ := json.Marshal(map[string]any{"behavior": "deny", "reason": reason, "interrupt": interrupt})
				return l.s.RespondRaw(q.RequestID, protocol.SuccessResponse(q.RequestID, json.RawMessage(raw)))
			}
		}
		if err := respond(); err != nil {
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
	if l := b.liveSession(q.SessionID); l != nil && !(defect("mcp-timeout-call-hangs") && l.mcp != nil) {
		b.crash(CrashExpiryCommitted)
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
	if !defect("timeout-surface-silent") {
		b.publish(bridgeapi.Event{Type: bridgeapi.EventTimeout, SessionID: q.SessionID, QuestionID: id, Error: "User response timed out"})
	}
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
	if defect("cancel-first-pending") {
		if len(qs) > 0 {
			b.withdraw(qs[0], status, reason) // a session asks one question at a time
		}
		return
	}
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
	wid := q.ID
	if defect("withdrawn-event-request-id") {
		wid = q.RequestID
	}
	b.publish(bridgeapi.Event{Type: bridgeapi.EventWithdrawn, SessionID: q.SessionID, QuestionID: wid, Reason: reason})
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

func (b *Bridge) fillTimeout(q *bridgeapi.Question) {
	q.TimeoutSeconds = timeoutSeconds(q.Deadline.Sub(q.CreatedAt))
}

// timeoutSeconds is a timeout in whole seconds, rounded up: a surface told
// 0 would show no time at all.
func timeoutSeconds(d time.Duration) int { return int((d + time.Second - 1) / time.Second) }

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
	if defect("multi-json-text") {
		out := make(map[string]string, len(answers))
		for _, q := range qs {
			a, ok := answers[q.Question]
			if ok && q.MultiSelect {
				j, _ := json.Marshal(strings.Split(a, protocol.MultiSelectSeparator)) // the picked labels, as the surface sent them
				a = string(j)
			}
			if ok {
				out[q.Question] = a
			}
		}
		return out
	}
	return answers
}
