package fakeclaude

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/askctl/askctl/claudecli"
	"github.com/askctl/askctl/internal/clip"
	"github.com/askctl/askctl/protocol"
	"github.com/askctl/askctl/transcript"
)

// This file is the CLI's reaction to how a question ended: the tool_result
// the real CLI 2.1.330 writes for each answer, withdrawal and exit, and the
// check of the answer against the scenario's expectation.

func (f *fake) react(c toolCall, o outcome) {
	d := denial{ToolName: c.tool, ToolUseID: c.toolUseID, ToolInput: c.input}
	exp := c.step.Expected()
	wantAnswer := exp != nil && !exp.NoAnswer
	switch o.kind {
	case outStopped:
	case outExit:
		st := c.step
		f.note("exiting with status %d after %v without an answer (exit_after)", st.ExitCode, st.ExitAfter)
		f.exitWith = &st.ExitCode
		f.stopped = true
	case outCancelled, outAborted:
		// The control_cancel_request went out as it was withdrawn (askAll).
		if o.kind == outCancelled {
			f.note("withdrew request %s after %v without an answer (cancel_after)", o.requestID, c.step.CancelAfter)
		} else {
			f.note("withdrew request %s: another call of its model response aborted the turn", o.requestID)
		}
		f.interrupted(c.toolUseID)
		f.denials = append(f.denials, d)
	case outEOF:
		// The real CLI withdraws the request and ends the turn; the result
		// lists no denial.
		if wantAnswer || exp == nil {
			f.fail(ExitEarlyEOF, "eof", "stdin closed while %s request %s was pending", c.tool, o.requestID)
		}
		if !f.release.Has(claudecli.StdinCloseCancels) {
			// Before: the tool fails and the turn goes on.
			f.session.unanswered()
			text := protocol.PermissionStreamClosedText
			f.send(f.toolResultMessage(toolResult{toolUseID: c.toolUseID, content: text, isError: ptr(true), useResult: "Error: " + text,
				resultMeta: rejectMeta(c.toolUseID, "config", kv{"reason_type", "other"})}))
			f.denials = append(f.denials, d)
			f.rejectedLast = true
			return
		}
		if f.session != nil {
			f.session.shutdown = true // the CLI notes the rows of a withdrawal at shutdown
		}
		f.send(protocol.CancelRequest(o.requestID))
		f.interrupted(c.toolUseID)
	case outInterrupted:
		f.interrupted(c.toolUseID)
		f.denials = append(f.denials, d)
		if wantAnswer {
			f.fail(ExitExpectation, "expectation", "the SDK side interrupted the turn instead of answering")
		}
	case outAnswered:
		if exp != nil && exp.NoAnswer {
			f.fail(ExitExpectation, "expectation", "the scenario expects no answer, got %s", clip.String(string(o.line.Raw), 200))
		}
		f.answered(c, o, d)
	}
}

// expectation records how an answer or a result met its step's
// expectation, and fails the run when it did not; where says what it was.
func (f *fake) expectation(problems []string, ok, where string) {
	text := ok
	if len(problems) > 0 {
		text = strings.Join(problems, "; ")
	}
	f.record(transcript.Record{Event: transcript.EventExpect, Step: f.step, OK: transcript.Bool(len(problems) == 0), Text: text})
	if len(problems) > 0 {
		f.fail(ExitExpectation, "expectation", "%s: %s", where, text)
	}
}

// interrupted writes the tool_result of a request withdrawn or denied with
// interrupt, and marks the turn aborted.
func (f *fake) interrupted(toolUseID string) {
	f.send(f.toolResultMessage(toolResult{
		toolUseID: toolUseID, content: protocol.DenyInterruptText, isError: ptr(true),
		useResult:  protocol.DenyInterruptToolUseResult,
		resultMeta: []obj{{{"id", toolUseID}, {"non_execution_kind", "user-rejected"}}},
	}))
	f.aborted = true
}

// answered writes the CLI's reaction to a control_response and checks it.
func (f *fake) answered(c toolCall, o outcome, d denial) {
	cr, l := o.response, o.line
	exp := c.step.Expected()
	if cr.Response.Subtype == protocol.SubtypeError {
		text := protocol.ErrorResponseText(cr.Response.Error)
		f.send(f.toolResultMessage(toolResult{toolUseID: c.toolUseID, content: text, isError: ptr(true), useResult: "Error: " + text,
			resultMeta: rejectMeta(c.toolUseID, "config", kv{"reason_type", "other"})}))
		f.denials = append(f.denials, d)
		if exp != nil && !exp.NoAnswer {
			f.fail(ExitExpectation, "expectation", "got an error response (%s) instead of a permission result", clip.Quote(cr.Response.Error, 200))
		}
		return
	}
	pr, err := protocol.ParsePermissionResult(l.N, cr.Response.Response)
	if err != nil {
		text := protocol.InvalidPermissionResultText
		f.send(f.toolResultMessage(toolResult{toolUseID: c.toolUseID, content: text, isError: ptr(true), useResult: "Error: " + text,
			resultMeta: rejectMeta(c.toolUseID, "config", kv{"reason_type", "other"})}))
		f.denials = append(f.denials, d)
		f.fail(ExitProtocol, "protocol", "invalid permission result: %v", err)
		return
	}
	if exp != nil && !exp.NoAnswer {
		f.expectation(exp.Check(c.input, pr, cr.Response.Response), "answer as expected", fmt.Sprintf("stdin line %d", l.N))
	}
	switch {
	case pr.Allow() && c.tool == protocol.ToolAskUserQuestion:
		f.askAllowed(c, l, pr)
	case pr.Allow():
		out := c.step.Tool.Output
		if out == "" && c.tool == "Bash" {
			out = protocol.BashNoOutputText
		}
		var useResult any = c.step.Tool.Output
		if len(c.step.Tool.Result) > 0 {
			useResult = c.step.Tool.Result
		}
		f.send(f.toolResultMessage(toolResult{toolUseID: c.toolUseID, content: out, isError: ptr(false), idFirst: true,
			useResult: useResult, resultMeta: decisionMeta(c.toolUseID, "accept", "user_temporary")}))
	case pr.Interrupts():
		f.interrupted(c.toolUseID)
		f.denials = append(f.denials, d)
	default:
		msg := pr.DenyMessage()
		f.send(f.toolResultMessage(toolResult{toolUseID: c.toolUseID, content: msg, isError: ptr(true), useResult: "Error: " + msg,
			resultMeta: rejectMeta(c.toolUseID, "user_reject")}))
		f.denials = append(f.denials, d)
	}
}

// askAllowed writes the tool_result of an allowed AskUserQuestion.
func (f *fake) askAllowed(c toolCall, l protocol.Line, pr *protocol.PermissionResult) {
	in, err := protocol.ParseAskInput(pr.EffectiveInput(c.input))
	if err != nil {
		problem := err.Error()
		var se *protocol.SchemaError
		if errors.As(err, &se) {
			problem = se.Problem
		}
		f.send(f.toolResultMessage(toolResult{toolUseID: c.toolUseID, content: protocol.UpdatedInputInvalidText(c.tool, problem), isError: ptr(true),
			useResult:  protocol.UpdatedInputInvalidToolUseResult(c.tool),
			resultMeta: decisionMeta(c.toolUseID, "reject", "permission_updated_input_invalid")}))
		f.fail(ExitProtocol, "protocol", "line %d: updatedInput fails the AskUserQuestion schema: %s", l.N, problem)
		return
	}
	// The real CLI ignores answers keyed by anything but a question's text;
	// fakeclaude plays on the same, and reports the bridge's defect.
	if extra := unasked(in); len(extra) > 0 {
		f.fail(ExitExpectation, "bridge", "stdin line %d: answers keyed by no question asked: %s (answers are keyed by the full question text; the CLI ignores these)", l.N, strings.Join(extra, ", "))
	}
	answers := in.Answers
	if answers == nil {
		answers = map[string]protocol.AnswerValue{}
	}
	useResult := obj{{"questions", in.Questions}, {"answers", answers}}
	if len(in.Annotations) > 0 {
		useResult = append(useResult, kv{"annotations", in.Annotations})
	}
	f.send(f.toolResultMessage(toolResult{toolUseID: c.toolUseID, content: protocol.AskResultText(in.Questions, in.Answers, in.Annotations),
		useResult: useResult, resultMeta: decisionMeta(c.toolUseID, "accept", "user_temporary")}))
}

// unasked quotes the answer keys that name no question.
func unasked(in *protocol.AskInput) []string {
	asked := make(map[string]bool, len(in.Questions))
	for _, q := range in.Questions {
		asked[q.Question] = true
	}
	var out []string
	for k := range in.Answers {
		if !asked[k] {
			out = append(out, clip.Quote(k, 80))
		}
	}
	if len(out) > 8 {
		out = append(out[:8], fmt.Sprintf("and %d more", len(out)-8))
	}
	return out
}

// errorResult ends an unscripted turn; error results carry errors[] because
// the SDKs throw without it.
func (f *fake) errorResult(msg string) obj {
	m := f.result(true)
	for i := range m {
		if m[i].k == "errors" {
			m[i].v = []string{msg}
		}
		if m[i].k == "terminal_reason" {
			m[i].v = "completed"
		}
	}
	return m
}

// orderedObject decodes a JSON object keeping its key order.
func orderedObject(raw []byte) (obj, error) {
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	t, err := dec.Token()
	if err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("want a JSON object")
	}
	var o obj
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		o = append(o, kv{k.(string), v})
	}
	return o, nil
}
