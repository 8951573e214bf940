package fakeclaude

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/askctl/askctl/protocol"
	"github.com/askctl/askctl/scenarios"
	"github.com/askctl/askctl/transcript"
	"github.com/tidwall/gjson"
)

// Exit codes. A run ends with the code of its first failure; with none, 0, or
// 1 when the last turn ended with an error result (as the real CLI does).
const (
	ExitOK          = 0 // the scenario played through and every expectation held
	ExitErrorResult = 1 // the last turn ended with an error result (deny+interrupt, cancel), as the real CLI
	ExitUsage       = 2 // bad flags, or no usable scenario
	ExitProtocol    = 3 // the SDK side broke the protocol: a malformed line, a response to an unknown or already answered request, an invalid permission result or updatedInput
	ExitExpectation = 4 // an answer broke the scenario's expectations, or an unscripted message came
	ExitTimeout     = 5 // a wait passed its deadline (no prompt, no answer)
	ExitEarlyEOF    = 6 // stdin closed before the scenario was played through
	ExitTerminated  = 143
)

// DefaultTimeout bounds each wait for the SDK side when Options.Timeout is 0.
const DefaultTimeout = 5 * time.Minute

// Options configures a run. With only Scenario and Flags set it plays the
// scenario faithfully.
type Options struct {
	Scenario *scenarios.Scenario
	Flags    Flags
	// Timeout bounds every wait for the SDK side: for a prompt, and for each
	// answer. Zero means DefaultTimeout.
	Timeout time.Duration
	// Linger bounds the wait for stdin to close after the last turn; the real
	// CLI waits for EOF. Zero means Timeout. Passing it is not a failure.
	Linger time.Duration
	// Sink receives every record: what was sent and received, notes,
	// failures, and the exit. Nil records nothing.
	Sink transcript.Sink
	// Stderr receives failures, one line each. Nil discards them.
	Stderr io.Writer
	// Cwd and Home appear in system/init and in tool requests; default the
	// process's.
	Cwd, Home string
	// Now defaults to time.Now.
	Now func() time.Time
}

// Failure is one thing that went wrong.
type Failure struct {
	Code int    // the exit code it maps to
	Step int    // 1-based scenario step, 0 if none
	Text string //
}

func (f Failure) String() string {
	if f.Step > 0 {
		return fmt.Sprintf("step %d: %s", f.Step, f.Text)
	}
	return f.Text
}

// Outcome is how a run ended.
type Outcome struct {
	Code     int
	Failures []Failure
}

// Run plays opts.Scenario over stdin and stdout as the real CLI would, and
// returns when the session is over: stdin closed after the last turn, a fatal
// protocol error, a scenario-directed exit, a deadline, or ctx done.
func Run(ctx context.Context, opts Options, stdin io.Reader, stdout io.Writer) Outcome {
	f := newFake(opts, stdout)
	f.done = make(chan struct{})
	defer close(f.done)
	f.in = f.readLines(stdin)
	f.run(ctx)
	code := f.exitCode()
	f.record(transcript.Record{Event: transcript.EventExit, Code: transcript.Int(code)})
	return Outcome{Code: code, Failures: f.failures}
}

type fake struct {
	opts    Options
	flags   Flags
	sc      *scenarios.Scenario
	out     io.Writer
	in      <-chan inbound
	done    chan struct{} // closed when Run returns: the reader stops sending
	now     func() time.Time
	timeout time.Duration

	sessionID, cwd, home, model string
	pid                         int

	modelCalls  int // model responses in the session
	turnCalls   int // model responses in this turn
	inResponse  bool
	turnStart   time.Time
	lastText    string
	denials     []denial
	resultIndex int

	requests map[string]*request // requests fakeclaude sent, by request_id
	queued   []protocol.Line     // prompts that came mid-turn
	failures []Failure
	step     int  // 1-based index of the step being played
	aborted  bool // the last turn ended with an error result
	stopped  bool // stop playing: fatal error, exit, deadline
	exitWith *int // a scenario-directed exit
}

type reqState int

const (
	pending reqState = iota
	answered
	cancelled
)

type request struct {
	id    string
	step  int
	state reqState
}

type inbound struct {
	line protocol.Line
	err  error // a *protocol.LineError, or a read error
	eof  bool
}

// readLines decodes stdin on its own goroutine, so that waits can select on
// lines, timers and ctx together. Each line is recorded as it arrives.
func (f *fake) readLines(r io.Reader) <-chan inbound {
	ch := make(chan inbound, 16)
	send := func(in inbound) bool {
		select {
		case ch <- in:
			return true
		case <-f.done:
			return false
		}
	}
	go func() {
		defer close(ch)
		dec := protocol.NewDecoder(r)
		for {
			l, err := dec.Next()
			switch {
			case err == nil:
				f.record(transcript.Record{Dir: transcript.ToCLI, Msg: l.Raw})
				if !send(inbound{line: l}) {
					return
				}
			case errors.Is(err, io.EOF):
				send(inbound{eof: true})
				return
			default:
				var le *protocol.LineError
				if errors.As(err, &le) && le.Raw != nil {
					f.record(transcript.Record{Event: transcript.EventNote, Kind: "raw", Text: string(le.Raw)})
				}
				if !send(inbound{err: err}) || !errors.As(err, &le) {
					return
				}
			}
		}
	}()
	return ch
}

func newFake(opts Options, out io.Writer) *fake {
	f := &fake{
		opts:     opts,
		flags:    opts.Flags,
		sc:       opts.Scenario,
		out:      out,
		now:      opts.Now,
		timeout:  opts.Timeout,
		cwd:      opts.Cwd,
		home:     opts.Home,
		model:    opts.Flags.Model,
		pid:      os.Getpid(),
		requests: map[string]*request{},
	}
	if f.now == nil {
		f.now = time.Now
	}
	if f.timeout <= 0 {
		f.timeout = DefaultTimeout
	}
	if f.cwd == "" {
		f.cwd, _ = os.Getwd()
	}
	if f.home == "" {
		f.home, _ = os.UserHomeDir()
	}
	if f.model == "" || f.model == "default" {
		f.model = "claude-sonnet-4-5"
	}
	if f.flags.PermissionMode == "" {
		f.flags.PermissionMode = "default"
	}
	f.sessionID = newUUID()
	return f
}

// askEnabled mirrors the CLI: in -p/stream-json mode AskUserQuestion exists
// only when a permission prompt surface is configured, and not disallowed.
func (f *fake) askEnabled() bool {
	t := f.flags.PermissionPromptTool
	return t != "" && t != "none" && f.flags.toolAllowed(protocol.ToolAskUserQuestion)
}

// record writes r to the sink. It is called from the reader goroutine too;
// sinks are safe for concurrent use.
func (f *fake) record(r transcript.Record) {
	if f.opts.Sink == nil {
		return
	}
	r.Session = f.sessionID
	if r.T.IsZero() {
		r.T = f.now()
	}
	_ = f.opts.Sink.Write(r)
}

func (f *fake) note(format string, args ...any) {
	f.record(transcript.Record{Event: transcript.EventNote, Step: f.step, Text: fmt.Sprintf(format, args...)})
}

// fail records a failure; the run goes on unless the caller stops it.
func (f *fake) fail(code int, kind, format string, args ...any) {
	fl := Failure{Code: code, Step: f.step, Text: fmt.Sprintf(format, args...)}
	f.failures = append(f.failures, fl)
	f.record(transcript.Record{Event: transcript.EventError, Kind: kind, Step: f.step, Text: fl.Text})
	if f.opts.Stderr != nil {
		fmt.Fprintf(f.opts.Stderr, "fakeclaude: %s: %s\n", kind, fl)
	}
}

func (f *fake) exitCode() int {
	if f.exitWith != nil {
		return *f.exitWith
	}
	if len(f.failures) > 0 {
		return f.failures[0].Code
	}
	if f.aborted {
		return ExitErrorResult
	}
	return ExitOK
}

// send writes one message to stdout and records it.
func (f *fake) send(m any) {
	b, err := json.Marshal(m)
	if err != nil {
		f.fail(ExitUsage, "internal", "encoding a message: %v", err)
		f.stopped = true
		return
	}
	f.record(transcript.Record{Dir: transcript.FromCLI, Msg: b})
	if _, err := f.out.Write(append(b, '\n')); err != nil {
		f.fail(ExitEarlyEOF, "stdout", "writing to stdout: %v", err)
		f.stopped = true
	}
}

func (f *fake) run(ctx context.Context) {
	if f.sc == nil {
		f.fail(ExitUsage, "usage", "no scenario")
		return
	}
	if err := f.flags.validate(); err != nil {
		f.fail(ExitUsage, "usage", "%v", err)
		return
	}
	if f.flags.InputFormat != "stream-json" {
		f.fail(ExitUsage, "usage", "fakeclaude speaks the SDK transport only: pass --input-format stream-json --output-format stream-json --verbose (got --input-format %q)", f.flags.InputFormat)
		return
	}
	for _, u := range f.flags.Unknown {
		f.note("ignored unknown argument %q", u)
	}
	if !f.askEnabled() && hasAsk(f.sc) {
		f.note("AskUserQuestion is not offered in this session (no --permission-prompt-tool): the scenario's questions will fail as they do with the real CLI")
	}
	f.note("playing scenario %s (%s) with %d steps", f.sc.Name, f.sc.File, len(f.sc.Steps))
	stepBase := 0
	for ti, turn := range f.sc.Turns() {
		f.step = stepBase + 1
		prompt, ok := f.waitPrompt(ctx, ti+1)
		if !ok {
			return
		}
		f.startTurn(prompt)
		f.aborted = false
		for i := 1; i < len(turn) && !f.stopped && !f.aborted; i++ {
			f.step = stepBase + i + 1
			f.play(ctx, &turn[i], i == len(turn)-1)
		}
		if f.stopped {
			return
		}
		if f.aborted {
			f.send(f.userText(protocol.InterruptedForToolUseText))
			if rest := stepBase + len(turn) - f.step; rest > 0 {
				f.fail(ExitExpectation, "expectation", "the turn was aborted with %d scripted step(s) left", rest)
			}
		}
		f.send(f.result(f.aborted))
		f.resultIndex++
		stepBase += len(turn)
	}
	f.step = 0
	f.waitEOF(ctx)
}

func hasAsk(sc *scenarios.Scenario) bool {
	for _, s := range sc.Steps {
		if s.Kind == scenarios.KindAsk {
			return true
		}
	}
	return false
}

func (f *fake) startTurn(prompt protocol.Line) {
	f.turnCalls, f.turnStart, f.denials, f.lastText, f.inResponse = 0, f.now(), nil, "", false
	f.record(transcript.Record{Event: transcript.EventStep, Step: f.step, Text: "turn started by the prompt on stdin line " + fmt.Sprint(prompt.N)})
	f.send(f.systemInit())
}

// beginResponse counts a model response; a text step followed by a tool call
// is one response, as the model would write them.
func (f *fake) beginResponse() {
	if !f.inResponse {
		f.modelCalls++
		f.turnCalls++
		f.inResponse = true
	}
}

func (f *fake) play(ctx context.Context, st *scenarios.Step, last bool) {
	f.record(transcript.Record{Event: transcript.EventStep, Step: f.step, Text: st.Describe()})
	switch st.Kind {
	case scenarios.KindPrompt:
		// Turns() starts a new turn at every prompt; never reached.
	case scenarios.KindText:
		f.beginResponse()
		f.send(f.assistant(textBlock(st.Text)))
		f.lastText = st.Text
		if last {
			f.inResponse = false
		}
	case scenarios.KindAsk:
		f.askStep(ctx, st)
	case scenarios.KindTool:
		f.toolStep(ctx, st)
	}
}

func (f *fake) toolUseID(st *scenarios.Step) string { return st.ToolUseID(f.step) }

func (f *fake) askStep(ctx context.Context, st *scenarios.Step) {
	id := f.toolUseID(st)
	input, _ := json.Marshal(obj{{"questions", st.Questions}})
	f.beginResponse()
	f.send(f.assistant(toolUseBlock(id, protocol.ToolAskUserQuestion, input)))
	f.inResponse = false
	if !f.askEnabled() {
		f.send(f.toolResultMessage(toolResult{toolUseID: id, content: protocol.AskUnavailableText, isError: ptr(true), useResult: protocol.AskUnavailableToolUseResult}))
		if e := st.Expected(); e != nil && !e.NoAnswer {
			f.fail(ExitExpectation, "expectation", "the scenario asks, but AskUserQuestion is not offered: start the agent with --permission-prompt-tool stdio (the SDKs pass it when canUseTool is set)")
		}
		return
	}
	req := obj{
		{"subtype", protocol.SubtypeCanUseTool},
		{"tool_name", protocol.ToolAskUserQuestion},
		{"display_name", protocol.ToolAskUserQuestion},
		{"input", json.RawMessage(input)},
		{"tool_use_id", id},
		{"requires_user_interaction", true},
	}
	f.roundTrip(ctx, st, id, protocol.ToolAskUserQuestion, input, req)
}

func (f *fake) toolStep(ctx context.Context, st *scenarios.Step) {
	id := f.toolUseID(st)
	t := st.Tool
	f.beginResponse()
	f.send(f.assistant(toolUseBlock(id, t.Name, t.Input)))
	f.inResponse = false
	req := obj{
		{"subtype", protocol.SubtypeCanUseTool},
		{"tool_name", t.Name},
		{"display_name", t.Name},
		{"input", t.Input},
	}
	if len(t.Request) > 0 {
		extra, err := orderedObject([]byte(strings.ReplaceAll(string(t.Request), "${CWD}", f.cwd)))
		if err != nil {
			f.fail(ExitUsage, "scenario", "tool.request: %v", err)
			f.stopped = true
			return
		}
		req = append(req, extra...)
	}
	req = append(req, kv{"tool_use_id", id})
	f.roundTrip(ctx, st, id, t.Name, t.Input, req)
}

// roundTrip sends a can_use_tool request and blocks for its answer, a cancel,
// an exit, or a deadline; then writes what the CLI would.
func (f *fake) roundTrip(ctx context.Context, st *scenarios.Step, toolUseID, tool string, input json.RawMessage, payload obj) {
	reqID := newUUID()
	f.requests[reqID] = &request{id: reqID, step: f.step}
	f.send(obj{{"type", protocol.TypeControlRequest}, {"request_id", reqID}, {"request", payload}})
	if f.stopped {
		return
	}
	exp := st.Expected()
	d := denial{ToolName: tool, ToolUseID: toolUseID, ToolInput: input}

	deadline := time.NewTimer(f.timeout)
	defer deadline.Stop()
	var cancelC, exitC <-chan time.Time
	if st.CancelAfter > 0 {
		t := time.NewTimer(st.CancelAfter)
		defer t.Stop()
		cancelC = t.C
	}
	if st.ExitAfter > 0 {
		t := time.NewTimer(st.ExitAfter)
		defer t.Stop()
		exitC = t.C
	}
	for {
		select {
		case <-ctx.Done():
			f.stop(ctx)
			return
		case <-deadline.C:
			f.fail(ExitTimeout, "timeout", "no answer to %s request %s within %v", tool, reqID, f.timeout)
			f.stopped = true
			return
		case <-cancelC:
			f.note("withdrawing request %s after %v without an answer (cancel_after)", reqID, st.CancelAfter)
			f.cancel(reqID, toolUseID)
			f.denials = append(f.denials, d)
			return
		case <-exitC:
			f.note("exiting with status %d after %v without an answer (exit_after)", st.ExitCode, st.ExitAfter)
			f.exitWith = &st.ExitCode
			f.stopped = true
			return
		case in := <-f.in:
			switch {
			case in.eof:
				// The real CLI withdraws the request and ends the turn.
				f.in = nil
				if exp == nil || !exp.NoAnswer {
					f.fail(ExitEarlyEOF, "eof", "stdin closed while %s request %s was pending", tool, reqID)
				}
				f.cancel(reqID, toolUseID)
				return
			case in.err != nil:
				f.badLine(in.err)
				return
			}
			l := in.line
			switch l.Type {
			case protocol.TypeControlResponse:
				cr, err := protocol.ParseControlResponse(l)
				if err != nil {
					f.fail(ExitProtocol, "protocol", "%v", err)
					continue
				}
				if cr.Response.RequestID != reqID {
					f.stray(cr)
					continue
				}
				f.requests[reqID].state = answered
				f.answer(st, exp, l, cr, toolUseID, tool, input, d)
				return
			case protocol.TypeControlRequest:
				if f.sdkRequest(l, reqID) {
					// An interrupt withdrew the pending request.
					f.cancelled(reqID, toolUseID)
					f.denials = append(f.denials, d)
					if exp != nil && !exp.NoAnswer {
						f.fail(ExitExpectation, "expectation", "the SDK side interrupted the turn instead of answering")
					}
					return
				}
			default:
				f.other(l)
			}
		}
	}
}

// cancel withdraws a pending request and aborts the turn as the CLI does.
func (f *fake) cancel(reqID, toolUseID string) {
	f.send(obj{{"type", protocol.TypeControlCancelRequest}, {"request_id", reqID}})
	f.cancelled(reqID, toolUseID)
}

func (f *fake) cancelled(reqID, toolUseID string) {
	f.requests[reqID].state = cancelled
	f.send(f.toolResultMessage(toolResult{
		toolUseID: toolUseID, content: protocol.DenyInterruptText, isError: ptr(true),
		useResult:  protocol.DenyInterruptToolUseResult,
		resultMeta: []obj{{{"id", toolUseID}, {"non_execution_kind", "user-rejected"}}},
	}))
	f.aborted = true
}

// answer writes the CLI's reaction to the response and checks it against the
// step's expectations.
func (f *fake) answer(st *scenarios.Step, exp *scenarios.Expect, l protocol.Line, cr *protocol.ControlResponse, toolUseID, tool string, input json.RawMessage, d denial) {
	if exp != nil && exp.NoAnswer {
		f.fail(ExitExpectation, "expectation", "the scenario expects no answer, got %s", clip(string(l.Raw), 200))
	}
	if cr.Response.Subtype == protocol.SubtypeError {
		text := protocol.ErrorResponseText(cr.Response.Error)
		f.send(f.toolResultMessage(toolResult{toolUseID: toolUseID, content: text, isError: ptr(true), useResult: "Error: " + text,
			resultMeta: rejectMeta(toolUseID, "config", kv{"reason_type", "other"})}))
		f.denials = append(f.denials, d)
		if exp != nil && !exp.NoAnswer {
			f.fail(ExitExpectation, "expectation", "got an error response (%q) instead of a permission result", cr.Response.Error)
		}
		return
	}
	pr, err := protocol.ParsePermissionResult(l.N, cr.Response.Response)
	if err != nil {
		text := protocol.InvalidPermissionResultText
		f.send(f.toolResultMessage(toolResult{toolUseID: toolUseID, content: text, isError: ptr(true), useResult: "Error: " + text,
			resultMeta: rejectMeta(toolUseID, "config", kv{"reason_type", "other"})}))
		f.denials = append(f.denials, d)
		f.fail(ExitProtocol, "protocol", "invalid permission result: %v", err)
		return
	}
	f.check(exp, l, cr, pr, tool, input)
	switch {
	case pr.Allow() && tool == protocol.ToolAskUserQuestion:
		eff := pr.EffectiveInput(input)
		in, err := protocol.ParseAskInput(eff)
		if err != nil {
			problem := err.Error()
			var se *protocol.SchemaError
			if errors.As(err, &se) {
				problem = se.Problem
			}
			f.send(f.toolResultMessage(toolResult{toolUseID: toolUseID, content: protocol.UpdatedInputInvalidText(tool, problem), isError: ptr(true),
				useResult:  protocol.UpdatedInputInvalidToolUseResult(tool),
				resultMeta: decisionMeta(toolUseID, "reject", "permission_updated_input_invalid")}))
			f.fail(ExitProtocol, "protocol", "line %d: updatedInput fails the AskUserQuestion schema: %s", l.N, problem)
			return
		}
		answers := in.Answers
		if answers == nil {
			answers = map[string]protocol.AnswerValue{}
		}
		useResult := obj{{"questions", in.Questions}, {"answers", answers}}
		if len(in.Annotations) > 0 {
			useResult = append(useResult, kv{"annotations", in.Annotations})
		}
		f.send(f.toolResultMessage(toolResult{toolUseID: toolUseID, content: protocol.AskResultText(in.Questions, in.Answers, in.Annotations),
			useResult: useResult, resultMeta: decisionMeta(toolUseID, "accept", "user_temporary")}))
	case pr.Allow():
		out := st.Tool.Output
		if out == "" && tool == "Bash" {
			out = protocol.BashNoOutputText
		}
		var useResult any = st.Tool.Output
		if len(st.Tool.Result) > 0 {
			useResult = st.Tool.Result
		}
		f.send(f.toolResultMessage(toolResult{toolUseID: toolUseID, content: out, isError: ptr(false), idFirst: true,
			useResult: useResult, resultMeta: decisionMeta(toolUseID, "accept", "user_temporary")}))
	case pr.Interrupts():
		f.cancelled(cr.Response.RequestID, toolUseID)
		f.denials = append(f.denials, d)
	default:
		msg := pr.DenyMessage()
		f.send(f.toolResultMessage(toolResult{toolUseID: toolUseID, content: msg, isError: ptr(true), useResult: "Error: " + msg,
			resultMeta: rejectMeta(toolUseID, "user_reject")}))
		f.denials = append(f.denials, d)
	}
}

// check compares a permission result with the step's expectation and records
// each difference as a failure.
func (f *fake) check(exp *scenarios.Expect, l protocol.Line, cr *protocol.ControlResponse, pr *protocol.PermissionResult, tool string, input json.RawMessage) {
	if exp == nil {
		return
	}
	var problems []string
	if exp.Behavior != "" && pr.Behavior != exp.Behavior {
		problems = append(problems, fmt.Sprintf("behavior is %q, want %q", pr.Behavior, exp.Behavior))
	}
	if exp.Interrupt != nil && pr.Behavior == protocol.BehaviorDeny && pr.Interrupts() != *exp.Interrupt {
		problems = append(problems, fmt.Sprintf("interrupt is %v, want %v", pr.Interrupts(), *exp.Interrupt))
	}
	if pr.Behavior == protocol.BehaviorDeny && strings.TrimSpace(pr.DenyMessage()) == "" {
		problems = append(problems, "deny has an empty message")
	}
	if len(exp.Answers) > 0 && pr.Allow() {
		in, err := protocol.ParseAskInput(pr.EffectiveInput(input))
		if err == nil {
			qs := make([]string, 0, len(exp.Answers))
			for q := range exp.Answers {
				qs = append(qs, q)
			}
			sort.Strings(qs)
			for _, q := range qs {
				got, ok := in.Answers[q]
				switch {
				case !ok:
					keys := make([]string, 0, len(in.Answers))
					for k := range in.Answers {
						keys = append(keys, fmt.Sprintf("%q", k))
					}
					sort.Strings(keys)
					problems = append(problems, fmt.Sprintf("no answer keyed %q (answers are keyed by the full question text; got keys [%s])", q, strings.Join(keys, ", ")))
				case string(got) != exp.Answers[q]:
					problems = append(problems, fmt.Sprintf("answer to %q is %q, want %q", q, got, exp.Answers[q]))
				}
			}
			var asked protocol.AskInput
			if json.Unmarshal(input, &asked) == nil && !reflect.DeepEqual(asked.Questions, in.Questions) {
				problems = append(problems, "updatedInput.questions differ from the questions asked")
			}
		}
	}
	payload := cr.Response.Response
	paths := make([]string, 0, len(exp.Match))
	for p := range exp.Match {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		got := gjson.GetBytes(payload, p)
		if !got.Exists() {
			problems = append(problems, fmt.Sprintf("match %s: missing, want %s", p, exp.Match[p]))
			continue
		}
		if !jsonEqual([]byte(got.Raw), exp.Match[p]) {
			problems = append(problems, fmt.Sprintf("match %s: got %s, want %s", p, got.Raw, exp.Match[p]))
		}
	}
	ok := len(problems) == 0
	text := "answer as expected"
	if !ok {
		text = strings.Join(problems, "; ")
	}
	f.record(transcript.Record{Event: transcript.EventExpect, Step: f.step, OK: transcript.Bool(ok), Text: text})
	if !ok {
		f.fail(ExitExpectation, "expectation", "stdin line %d: %s", l.N, text)
	}
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// stray handles a control_response that is not for the request being waited on.
func (f *fake) stray(cr *protocol.ControlResponse) {
	id := cr.Response.RequestID
	r, ok := f.requests[id]
	switch {
	case !ok:
		f.fail(ExitProtocol, "protocol", "control_response for unknown request_id %q", id)
	case r.state == answered:
		f.fail(ExitProtocol, "protocol", "second control_response for request %s (step %d): the agent takes exactly one", id, r.step)
	case r.state == cancelled:
		var pr protocol.PermissionResult
		_ = json.Unmarshal(cr.Response.Response, &pr)
		if pr.Allow() {
			f.fail(ExitProtocol, "protocol", "an allow arrived for request %s (step %d) after it was cancelled: late answers must not reach the agent", id, r.step)
		} else {
			f.note("late response to cancelled request %s tolerated (the TypeScript SDK sends one)", id)
		}
		r.state = answered
	}
}

// sdkRequest answers a control_request from the SDK side. It reports whether
// it was an interrupt that withdrew pendingID.
func (f *fake) sdkRequest(l protocol.Line, pendingID string) bool {
	cr, sub, err := protocol.ParseControlRequest(l)
	if err != nil {
		f.fail(ExitProtocol, "protocol", "%v", err)
		return false
	}
	ok := func(payload any) {
		f.send(obj{{"type", protocol.TypeControlResponse}, {"response", obj{{"subtype", protocol.SubtypeSuccess}, {"request_id", cr.RequestID}, {"response", payload}}}})
	}
	switch sub {
	case protocol.SubtypeInitialize:
		f.send(obj{{"type", protocol.TypeControlResponse}, {"response", obj{
			{"subtype", protocol.SubtypeSuccess}, {"request_id", cr.RequestID}, {"response", f.initResponse()},
			{"pending_permission_requests", []any{}}, {"pending_user_dialog_requests", []any{}},
		}}})
		return false
	case protocol.SubtypeInterrupt:
		if pendingID != "" {
			f.send(obj{{"type", protocol.TypeControlCancelRequest}, {"request_id", pendingID}})
		}
		ok(obj{{"still_queued", []string{}}})
		return pendingID != ""
	case "set_permission_mode":
		var m struct {
			Mode string `json:"mode"`
		}
		_ = json.Unmarshal(cr.Request, &m)
		f.flags.PermissionMode = m.Mode
		ok(obj{{"mode", m.Mode}})
	case "set_model":
		ok(obj{})
	case "mcp_status":
		ok(obj{{"mcpServers", []any{}}})
	default:
		f.note("unsupported control request %q answered with an error", sub)
		f.send(obj{{"type", protocol.TypeControlResponse}, {"response", obj{{"subtype", protocol.SubtypeError}, {"request_id", cr.RequestID}, {"error", "Unsupported control request subtype: " + sub}}}})
	}
	return false
}

// other handles lines that are neither responses nor requests while a request
// is pending or a turn runs.
func (f *fake) other(l protocol.Line) {
	switch l.Type {
	case protocol.TypeKeepAlive:
	case protocol.TypeUser:
		f.note("prompt on stdin line %d queued for the next turn", l.N)
		f.queued = append(f.queued, l)
	case protocol.TypeControlCancelRequest:
		f.note("control_cancel_request from the SDK side ignored (fakeclaude sends no requests it could cancel)")
	default:
		f.note("ignored a %q line (stdin line %d)", l.Type, l.N)
	}
}

// badLine handles a line that is not JSON: the real CLI prints an error and
// exits; so does fakeclaude.
func (f *fake) badLine(err error) {
	msg := err.Error()
	var le *protocol.LineError
	if errors.As(err, &le) && le.Raw != nil {
		msg += fmt.Sprintf(" (the line: %s)", clip(string(le.Raw), 200))
	}
	f.fail(ExitProtocol, "protocol", "stdin %s", msg)
	f.stopped = true
}

func (f *fake) stop(ctx context.Context) {
	f.note("stopped: %v", context.Cause(ctx))
	f.exitWith = ptr(ExitTerminated)
	f.stopped = true
}

// waitPrompt waits for the user message that starts turn n.
func (f *fake) waitPrompt(ctx context.Context, n int) (protocol.Line, bool) {
	if len(f.queued) > 0 {
		l := f.queued[0]
		f.queued = f.queued[1:]
		return l, true
	}
	if f.in == nil {
		f.fail(ExitEarlyEOF, "eof", "stdin closed before the prompt of turn %d", n)
		return protocol.Line{}, false
	}
	deadline := time.NewTimer(f.timeout)
	defer deadline.Stop()
	for {
		select {
		case <-ctx.Done():
			f.stop(ctx)
			return protocol.Line{}, false
		case <-deadline.C:
			f.fail(ExitTimeout, "timeout", "no prompt for turn %d within %v", n, f.timeout)
			return protocol.Line{}, false
		case in := <-f.in:
			switch {
			case in.eof:
				f.in = nil
				f.fail(ExitEarlyEOF, "eof", "stdin closed before the prompt of turn %d", n)
				return protocol.Line{}, false
			case in.err != nil:
				f.badLine(in.err)
				return protocol.Line{}, false
			}
			if l := in.line; l.Type == protocol.TypeUser {
				return l, true
			} else {
				f.between(l)
			}
		}
	}
}

// between handles a line that is not a prompt while no request is pending.
func (f *fake) between(l protocol.Line) {
	switch l.Type {
	case protocol.TypeControlRequest:
		f.sdkRequest(l, "")
	case protocol.TypeControlResponse:
		if cr, err := protocol.ParseControlResponse(l); err != nil {
			f.fail(ExitProtocol, "protocol", "%v", err)
		} else {
			f.stray(cr)
		}
	default:
		f.other(l)
	}
}

// waitEOF waits, after the last turn, for stdin to close, as the real CLI does.
func (f *fake) waitEOF(ctx context.Context) {
	if f.in == nil {
		return // stdin is already closed
	}
	linger := f.opts.Linger
	if linger <= 0 {
		linger = f.timeout
	}
	deadline := time.NewTimer(linger)
	defer deadline.Stop()
	for {
		select {
		case <-ctx.Done():
			f.stop(ctx)
			return
		case <-deadline.C:
			f.note("stdin still open %v after the scenario ended; exiting", linger)
			return
		case in := <-f.in:
			switch {
			case in.eof:
				return
			case in.err != nil:
				f.badLine(in.err)
				return
			}
			if l := in.line; l.Type == protocol.TypeUser {
				f.fail(ExitExpectation, "expectation", "unscripted prompt on stdin line %d: the scenario has no more turns", l.N)
				f.startTurn(l)
				f.send(f.errorResult("fakeclaude: the scenario has no turn for this prompt"))
			} else {
				f.between(l)
			}
		}
	}
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

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func ptr[T any](v T) *T { return &v }
