package fakeclaude

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/askctl/askctl/claudecli"
	"github.com/askctl/askctl/fakeclaude/fakeapi"
	"github.com/askctl/askctl/internal/clip"
	"github.com/askctl/askctl/internal/uuid"
	"github.com/askctl/askctl/protocol"
	"github.com/askctl/askctl/scenarios"
	"github.com/askctl/askctl/transcript"
	"github.com/tidwall/gjson"
)

// This file is the turn loop: it plays a scenario's steps in order, asks each
// question through the session's route (route.go), and lets the CLI's
// reaction (react.go) write what the real CLI writes.

// Exit codes. A run ends with the code of its first failure; with none, 0, or
// 1 when the last turn ended with an error result (as the real CLI does).
const (
	ExitOK          = 0 // the scenario played through and every expectation held
	ExitErrorResult = 1 // the last turn ended with an error result (deny+interrupt, cancel), as the real CLI
	ExitUsage       = 2 // bad flags, or no usable scenario
	ExitProtocol    = 3 // the SDK side broke the protocol: a malformed line, a response to an unknown or already answered request, an invalid permission result or updatedInput
	ExitExpectation = 4 // an answer broke the scenario's expectations, or an unscripted message came
	ExitTimeout     = 5 // a wait passed its deadline (no prompt, no answer, stdout not read)
	ExitEarlyEOF    = 6 // stdin closed, or the SDK side stopped reading stdout, before the scenario was played through
	ExitTerminated  = 143
)

// DefaultModel is the model claude 2.1.330 reports with no --model (or
// --model default) and an API key.
const DefaultModel = "claude-opus-5-5"

// DefaultTimeout bounds each wait for the SDK side when Options.Timeout is 0.
const DefaultTimeout = 5 * time.Minute

// Options configures a run. With only Scenario and Flags set it plays the
// scenario faithfully.
type Options struct {
	Scenario *scenarios.Scenario
	Flags    Flags
	// Timeout bounds every wait for the SDK side: for a prompt, for each
	// answer, and for each write to stdout to be read. Zero means
	// DefaultTimeout.
	Timeout time.Duration
	// Linger bounds the wait for stdin to close after the last turn; the real
	// CLI waits for EOF. Zero means Timeout. Passing it is not a failure.
	Linger time.Duration
	// OutputGone, when closed, says the SDK side stopped reading stdout
	// (its end of the pipe is closed): a pending wait ends with ExitEarlyEOF
	// instead of running into its deadline. Command watches stdout for it.
	OutputGone <-chan struct{}
	// Sink receives every record: what was sent and received, notes,
	// failures, and the exit, which is the last. Nil records nothing.
	Sink transcript.Sink
	// Stderr receives failures, one line each. Nil discards them.
	Stderr io.Writer
	// SessionID is the session id to announce; a new one when empty. With
	// --resume the resumed id is kept, as the real CLI does.
	SessionID string
	// Cwd and Home appear in system/init and in tool requests; default the
	// process's.
	Cwd, Home string
	// Now defaults to time.Now.
	Now func() time.Time
	// Getenv reads the CLI's own settings (CLAUDE_CONFIG_DIR, MCP_TIMEOUT,
	// MCP_TOOL_TIMEOUT); nil reads the process's environment.
	Getenv func(string) string
	// MCP is the MCP client for --mcp-config's servers; nil: the helper
	// program fakeclaude-mcp (mcplink.Helper), started only when a session
	// has servers. A program that links the MCP SDK anyway passes
	// mcpclient.Dialer{}.
	MCP claudecli.MCPDialer
	// Release is the CLI release to play; nil plays the newest learned.
	Release *claudecli.Release
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
//
// A write to a stdout nobody reads is abandoned at its deadline; the
// goroutine blocked in it stays until the writer unblocks (a process exits
// right after, so fakeclaude the command leaks nothing).
func Run(ctx context.Context, opts Options, stdin io.Reader, stdout io.Writer) Outcome {
	f := newFake(ctx, opts, stdout)
	defer close(f.done)
	if f.flags.PrintMode() {
		f.runPrint(stdin)
	} else {
		f.in = f.readLines(stdin)
		f.run()
	}
	f.closeMCP()
	f.session.close()
	code := f.exitCode()
	f.record(transcript.Record{Event: transcript.EventExit, Code: transcript.Int(code)})
	f.recMu.Lock()
	f.exited = true // nothing is recorded after the exit record
	f.recMu.Unlock()
	return Outcome{Code: code, Failures: f.failures}
}

type fake struct {
	ctx     context.Context
	opts    Options
	flags   Flags
	sc      *scenarios.Scenario
	route   route
	out     io.Writer
	outDead bool // a write failed or stalled: write nothing more
	in      <-chan inbound
	done    chan struct{} // closed when Run returns: the reader stops sending
	now     func() time.Time
	timeout time.Duration

	recMu  sync.Mutex
	exited bool

	sessionID, cwd, home, model string
	pid                         int

	modelCalls  int // model responses in the session
	turnCalls   int // model responses in this turn
	inResponse  bool
	turnStart   time.Time
	lastText    string
	denials     []denial
	resultIndex int

	getenv  func(string) string
	release *claudecli.Release // the release played
	// notesAtStart are notes from before the run could record them.
	notesAtStart []string
	mcp          *mcpClients // the --mcp-config servers; nil with none
	session      *sessionLog // the session file
	mcpNoted     bool

	queued   []protocol.Line // prompts that came mid-turn
	failures []Failure
	step     int  // the step being played (Step.N), 0 between turns
	aborted  bool // the last turn ended with an error result
	// rejectedLast: the last tool call failed and the turn goes on to the
	// model's reply (claudecli.StdinCloseCancels).
	rejectedLast bool
	stopped      bool // stop playing: fatal error, exit, deadline
	exitWith     *int // a scenario-directed exit
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

func newFake(ctx context.Context, opts Options, out io.Writer) *fake {
	f := &fake{
		ctx:     ctx,
		opts:    opts,
		flags:   opts.Flags,
		sc:      opts.Scenario,
		out:     out,
		done:    make(chan struct{}),
		now:     opts.Now,
		timeout: opts.Timeout,
		cwd:     opts.Cwd,
		home:    opts.Home,
		model:   opts.Flags.Model,
		pid:     os.Getpid(),
		getenv:  opts.Getenv,
	}
	if f.getenv == nil {
		f.getenv = os.Getenv
	}
	f.route = &sdkRoute{f: f, requests: map[string]*request{}}
	if f.release = opts.Release; f.release == nil {
		if r, err := claudecli.Load(""); err == nil {
			f.release = r
		} else {
			f.release = &claudecli.Release{Version: claudecli.Base}
		}
	}
	if f.now == nil {
		f.now = time.Now
	}
	if f.timeout <= 0 {
		f.timeout = DefaultTimeout
	}
	if f.cwd == "" {
		f.cwd = claudecli.RealCwd()
	}
	if f.home == "" {
		f.home, _ = os.UserHomeDir()
	}
	if f.model == "" || f.model == "default" {
		f.model = f.defaultModel()
	}
	if f.flags.PermissionMode == "" {
		f.flags.PermissionMode = "default"
	}
	f.settleSession()
	return f
}

// askEnabled mirrors the CLI: in -p/stream-json mode AskUserQuestion exists
// only when a permission prompt surface is configured, and not disallowed.
func (f *fake) askEnabled() bool {
	t := f.flags.PermissionPromptTool
	return t != "" && t != "none" && !f.flags.PrintMode() && f.flags.ToolAllowed(protocol.ToolAskUserQuestion)
}

// record writes r to the sink. It is called from the reader goroutine too;
// sinks are safe for concurrent use. After the exit record it writes nothing.
func (f *fake) record(r transcript.Record) {
	if f.opts.Sink == nil {
		return
	}
	f.recMu.Lock()
	defer f.recMu.Unlock()
	if f.exited {
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

// maxStderrLine bounds a failure line on stderr; the transcript keeps it
// whole (clipped only to stay valid).
const maxStderrLine = 400

// fail records a failure; the run goes on unless the caller stops it.
func (f *fake) fail(code int, kind, format string, args ...any) {
	fl := Failure{Code: code, Step: f.step, Text: fmt.Sprintf(format, args...)}
	f.failures = append(f.failures, fl)
	f.record(transcript.Record{Event: transcript.EventError, Kind: kind, Step: f.step, Text: fl.Text})
	if f.opts.Stderr != nil {
		fmt.Fprintf(f.opts.Stderr, "fakeclaude: %s: %s\n", kind, clip.String(fl.String(), maxStderrLine))
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

// send writes one message to stdout and records it. The write has the wait
// deadline: a SDK side that stops reading fails the run instead of blocking
// it, and a signal still ends it.
func (f *fake) send(m any) {
	if f.outDead {
		// Nobody reads stdout any more, but the session file is the CLI's
		// own: what it would have said is still written there (the
		// withdrawal's rows when stdin and stdout die with the SDK side).
		if b, err := f.encodeAs(m, false); err == nil {
			f.session.message(b)
		}
		return
	}
	b, err := f.encodeAs(m, false)
	if err != nil {
		f.fail(ExitUsage, "internal", "encoding a message: %v", err)
		f.stopped = true
		return
	}
	if f.flags.PrintMode() && f.flags.OutputFormat != "stream-json" {
		// --output-format text or json: only the result is printed.
		if gjson.GetBytes(b, "type").String() != protocol.TypeResult {
			f.record(transcript.Record{Event: transcript.EventNote, Kind: "unprinted", Msg: b, Text: "not printed with --output-format " + f.outputFormat()})
			return
		}
		if f.outputFormat() == "text" {
			text := gjson.GetBytes(b, "result").String()
			if len(gjson.GetBytes(b, "errors").Array()) > 0 && text == "" {
				text = "Error: " + gjson.GetBytes(b, "errors.0").String()
			}
			f.record(transcript.Record{Event: transcript.EventNote, Kind: "stdout", Msg: b, Text: text})
			b = []byte(text)
		} else {
			f.record(transcript.Record{Dir: transcript.FromCLI, Msg: b})
		}
	} else {
		f.record(transcript.Record{Dir: transcript.FromCLI, Msg: b})
	}
	f.session.message(b)
	done := make(chan error, 1)
	go func() {
		_, err := f.out.Write(append(b, '\n'))
		done <- err
	}()
	t := time.NewTimer(f.timeout)
	defer t.Stop()
	select {
	case err = <-done:
		if err != nil {
			f.outDead = true
			f.fail(ExitEarlyEOF, "stdout", "writing to stdout: %v (the SDK side stopped reading)", err)
			f.stopped = true
		}
	case <-t.C:
		f.outDead = true
		f.fail(ExitTimeout, "stdout", "the SDK side has not read stdout for %v", f.timeout)
		f.stopped = true
	case <-f.ctx.Done():
		f.outDead = true
		f.stop()
	}
}

func (f *fake) run() {
	switch {
	case f.sc == nil:
		f.fail(ExitUsage, "usage", "no scenario")
		return
	}
	if !f.start() {
		return
	}
	if f.flags.InputFormat != "stream-json" {
		f.fail(ExitUsage, "usage", "fakeclaude speaks the SDK transport (--input-format stream-json --output-format stream-json --verbose) or print mode (-p): got --input-format %q without -p", f.flags.InputFormat)
		return
	}
	steps := f.sc.Steps
	if f.flags.Resume != "" {
		if len(f.sc.Resume) == 0 {
			// The conversation goes on: the scenario's steps again, with
			// tool_use ids of their own.
			f.note("resuming session %s: the scenario has no resume.jsonl, so its steps.jsonl plays again as the conversation's next turn(s)", f.flags.Resume)
			if r, err := f.sc.Resumed(); err == nil {
				steps = r.Resume
			}
		} else {
			steps = f.sc.Resume
			f.note("resuming session %s: playing the scenario's resume.jsonl", f.flags.Resume)
		}
	}
	if !f.askEnabled() && hasAsk(steps) {
		f.note("AskUserQuestion is not offered in this session (no --permission-prompt-tool): the scenario's questions will fail as they do with the real CLI")
	}
	f.note("playing scenario %s (%s) with %d steps", f.sc.Name, f.sc.File, len(steps))
	for ti, turn := range scenarios.TurnsOf(steps) {
		f.step = turn[0].N
		prompt, ok := f.waitPrompt(ti + 1)
		if !ok {
			return
		}
		if !f.playTurn(turn, prompt) {
			return
		}
	}
	f.step = 0
	f.waitEOF()
}

// playTurn plays one turn from its prompt to its result; false when the run
// stops.
func (f *fake) playTurn(turn []scenarios.Step, prompt protocol.Line) bool {
	f.checkPrompt(&turn[0], prompt)
	f.startTurn(prompt)
	f.aborted, f.rejectedLast = false, false
	played := 1
	for i := 1; i < len(turn) && !f.stopped && !f.aborted; i++ {
		f.step = turn[i].N
		if group := scenarios.Response(turn, i); len(group) > 1 {
			// Calls of one model response that run at once.
			for k, st := range group {
				text := st.Describe()
				if k > 0 {
					text += " (in the same model response, at once)"
				}
				f.record(transcript.Record{Event: transcript.EventStep, Step: st.N, Text: text})
			}
			f.call(group...)
			played += len(group)
			i += len(group) - 1
			continue
		}
		f.play(&turn[i], i == len(turn)-1)
		played++
	}
	if f.stopped {
		return false
	}
	if f.rejectedLast && played == len(turn) {
		// The turn ended on a failed tool call: the model has the last
		// word, which the fake model API gives.
		f.beginResponse()
		f.send(f.assistant(textBlock(fakeapi.StopAfterRejection)))
		f.lastText, f.inResponse = fakeapi.StopAfterRejection, false
	}
	if f.aborted {
		f.send(f.userText(protocol.InterruptedForToolUseText))
		if rest := len(turn) - played; rest > 0 {
			f.fail(ExitExpectation, "expectation", "the turn was aborted with %d scripted step(s) left", rest)
		}
	}
	f.send(f.result(f.aborted))
	f.session.turnEnded()
	f.resultIndex++
	return true
}

// settleSession decides the session id before anything runs: --resume's
// (kept, as the CLI keeps it), --continue's (the directory's latest
// session), --session-id's, the harness's, or a new one; --fork-session
// gives a resumed conversation a new id. Only a UUID names a session file.
func (f *fake) settleSession() {
	fl := &f.flags
	if fl.Continue && fl.Resume == "" {
		// As the CLI: the latest session of the directory, or, with none,
		// a new one.
		if id := claudecli.LatestSession(f.configDir(), f.cwd); id != "" {
			fl.Resume = id
		} else {
			f.notesAtStart = append(f.notesAtStart, "--continue: no session in this directory yet; starting a new one, as the CLI does")
		}
	}
	f.sessionID = f.opts.SessionID
	if fl.SessionID != "" && uuid.Valid(fl.SessionID) {
		f.sessionID = fl.SessionID
	}
	if f.sessionID != "" && !uuid.Valid(f.sessionID) {
		f.notesAtStart = append(f.notesAtStart, fmt.Sprintf("session id %q is not a UUID: using a new one", f.sessionID))
		f.sessionID = ""
	}
	if fl.Resume != "" && uuid.Valid(fl.Resume) && !fl.ForkSession {
		f.sessionID = fl.Resume // the real CLI keeps the session id it resumes
	}
	if f.sessionID == "" {
		f.sessionID = uuid.New()
	}
}

// start checks the flags and the MCP configuration, notes what is ignored,
// and starts connecting to the MCP servers. It reports whether to go on.
func (f *fake) start() bool {
	if err := f.flags.Validate(); err != nil {
		f.fail(ExitUsage, "usage", "%v", err)
		return false
	}
	for _, u := range f.flags.Unknown {
		f.note("ignored unknown argument %q", u)
	}
	if len(f.flags.Ignored) > 0 {
		f.note("accepted, with no effect on a scenario: %s", strings.Join(f.flags.Ignored, " "))
	}
	if f.flags.Prompt != "" && !f.flags.PrintMode() {
		f.note("ignored prompt argument %s: stream-json sessions take their prompts on stdin", clip.Quote(f.flags.Prompt, 60))
	}
	for _, n := range f.notesAtStart {
		f.note("%s", n)
	}
	if !f.openSession() {
		return false
	}
	servers, err := claudecli.ParseMCPConfig(f.flags.MCPConfig)
	if err != nil {
		f.fail(ExitUsage, "usage", "%v", err)
		return false
	}
	if len(servers) > 0 {
		f.mcp = f.connectMCP(servers, f.getenv)
	}
	return true
}

func (f *fake) outputFormat() string {
	if f.flags.OutputFormat == "" {
		return "text"
	}
	return f.flags.OutputFormat
}

// maxPrintPrompt bounds a prompt read from stdin in print mode.
const maxPrintPrompt = 16 << 20

// runPrint plays a one-shot print session (claude -p): the prompt from the
// argument or, with none, from stdin; one turn; the output in the
// --output-format; then exit, as the real CLI does.
func (f *fake) runPrint(stdin io.Reader) {
	if f.sc == nil {
		f.fail(ExitUsage, "usage", "no scenario")
		return
	}
	if of := f.outputFormat(); of != "text" && of != "json" && of != "stream-json" {
		f.fail(ExitUsage, "usage", "Error: Invalid output format %q (text, json or stream-json)", of)
		return
	}
	if !f.start() {
		return
	}
	turns := scenarios.TurnsOf(f.sc.Steps)
	if f.flags.Resume != "" {
		f.fail(ExitUsage, "usage", "--resume %s: fakeclaude plays resumed sessions in stream-json mode only", f.flags.Resume)
		return
	}
	if len(turns) != 1 {
		f.fail(ExitUsage, "usage", "scenario %s has %d turns; print mode (-p) plays one", f.sc.Name, len(turns))
		return
	}
	prompt := f.flags.Prompt
	if prompt == "" {
		text, ok := f.readPrompt(stdin)
		if !ok {
			return
		}
		prompt = text
	}
	if strings.TrimSpace(prompt) == "" {
		f.fail(ExitErrorResult, "input", "Error: Input must be provided either through stdin or as a prompt argument when using --print")
		return
	}
	f.note("playing scenario %s (%s) in print mode, --output-format %s", f.sc.Name, f.sc.File, f.outputFormat())
	turn := turns[0]
	f.step = turn[0].N
	line, _ := protocol.DecodeLine(0, protocol.Prompt(prompt, f.sessionID))
	f.playTurn(turn, line)
	f.step = 0
}

// readPrompt reads print mode's prompt from stdin, to its end, by the wait
// deadline.
func (f *fake) readPrompt(stdin io.Reader) (string, bool) {
	type read struct {
		b   []byte
		err error
	}
	ch := make(chan read, 1)
	go func() {
		b, err := io.ReadAll(io.LimitReader(stdin, maxPrintPrompt+1))
		ch <- read{b, err}
	}()
	t := time.NewTimer(f.timeout)
	defer t.Stop()
	select {
	case r := <-ch:
		if r.err != nil {
			f.fail(ExitEarlyEOF, "stdin", "reading the prompt from stdin: %v", r.err)
			return "", false
		}
		if len(r.b) > maxPrintPrompt {
			f.fail(ExitUsage, "usage", "the prompt on stdin is over %d MiB", maxPrintPrompt>>20)
			return "", false
		}
		return strings.TrimRight(string(r.b), "\n"), true
	case <-t.C:
		f.fail(ExitTimeout, "timeout", "no prompt: stdin was not closed within %v (pass the prompt as an argument, or close stdin after writing it)", f.timeout)
		return "", false
	case <-f.ctx.Done():
		f.stop()
		return "", false
	}
}

// checkPrompt checks a prompt against its step's expect_prompt and
// refuse_prompt.
func (f *fake) checkPrompt(st *scenarios.Step, l protocol.Line) {
	if st.ExpectPrompt == nil && st.RefusePrompt == nil {
		return
	}
	var in protocol.UserInput
	_ = l.Decode(&in)
	text := protocol.PromptText(in.Message.Content)
	if st.ExpectPrompt != nil && !st.ExpectPrompt.MatchString(text) {
		f.fail(ExitExpectation, "expectation", "stdin line %d: the prompt %s does not match %q", l.N, clip.Quote(text, 300), st.ExpectPrompt)
	}
	if st.RefusePrompt != nil && st.RefusePrompt.MatchString(text) {
		f.fail(ExitExpectation, "expectation", "stdin line %d: the prompt %s says %q, which it must not", l.N, clip.Quote(text, 300), st.RefusePrompt.FindString(text))
	}
}

func hasAsk(steps []scenarios.Step) bool {
	for _, s := range steps {
		if s.Kind == scenarios.KindAsk {
			return true
		}
	}
	return false
}

func (f *fake) startTurn(prompt protocol.Line) {
	f.turnCalls, f.turnStart, f.denials, f.lastText, f.inResponse = 0, f.now(), nil, "", false
	if prompt.N > 0 {
		f.record(transcript.Record{Event: transcript.EventStep, Step: f.step, Text: "turn started by the prompt on stdin line " + fmt.Sprint(prompt.N)})
	} else {
		f.record(transcript.Record{Event: transcript.EventStep, Step: f.step, Text: "turn started by the print-mode prompt"})
	}
	f.awaitMCP()
	if f.stopped {
		return
	}
	f.send(f.systemInit())
	var in struct {
		Message struct {
			Content json.RawMessage `json:"content"`
		} `json:"message"`
	}
	_ = prompt.Decode(&in)
	text := protocol.PromptText(in.Message.Content)
	f.session.queued(text)
	f.session.promptRow(in.Message.Content, text)
	if f.flags.ReplayUserMessages {
		// The real CLI echoes the prompt right after system/init.
		var in struct {
			Message json.RawMessage `json:"message"`
		}
		_ = prompt.Decode(&in)
		f.send(obj{{"type", protocol.TypeUser}, {"message", in.Message}, {"session_id", f.sessionID}, {"parent_tool_use_id", nil},
			{"uuid", uuid.New()}, {"timestamp", f.timestamp()}, {"isReplay", true}})
	}
}

// echoResponse writes back a control_response as received, as the real CLI
// does with --replay-user-messages.
func (f *fake) echoResponse(l protocol.Line) {
	if f.flags.ReplayUserMessages {
		f.send(l.Raw)
	}
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

func (f *fake) play(st *scenarios.Step, last bool) {
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
	case scenarios.KindAsk, scenarios.KindTool:
		f.call(st)
	case scenarios.KindMCP:
		f.playMCP(st)
	}
}

// call plays tool calls: one, or the calls of one model response that run
// at once (parallel steps). Each is the assistant's tool_use and the
// question put to the SDK side through the route; each is then reacted to
// as it ends, as the CLI writes each tool_result.
func (f *fake) call(sts ...*scenarios.Step) {
	calls := make([]toolCall, len(sts))
	for i, st := range sts {
		calls[i] = toolCall{step: st, toolUseID: st.ToolUseID(), tool: protocol.ToolAskUserQuestion, input: st.Input()}
		if st.Kind == scenarios.KindTool {
			calls[i].tool = st.Tool.Name
		}
	}
	f.beginResponse()
	announced := 0
	f.route.askAll(calls, func(c toolCall) bool {
		f.step = c.step.N
		if d := c.step.Delay; d > 0 && announced > 0 {
			// The model writes this call later in its response.
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-f.ctx.Done():
				t.Stop()
				f.stop()
				return false
			}
		}
		f.send(f.assistant(toolUseBlock(c.toolUseID, c.tool, c.input)))
		if announced++; announced == len(calls) {
			f.inResponse = false
		}
		if f.stopped {
			return false
		}
		if c.tool == protocol.ToolAskUserQuestion && !f.askEnabled() {
			f.send(f.toolResultMessage(toolResult{toolUseID: c.toolUseID, content: protocol.AskUnavailableText, isError: ptr(true), useResult: protocol.AskUnavailableToolUseResult}))
			if e := c.step.Expected(); e != nil && !e.NoAnswer {
				f.fail(ExitExpectation, "expectation", "the scenario asks, but AskUserQuestion is not offered: start the agent with --permission-prompt-tool stdio (the SDKs pass it when canUseTool is set)")
			}
			return false
		}
		return true
	}, func(c toolCall, o outcome) {
		f.step = c.step.N
		f.react(c, o)
	})
	f.inResponse = false
}

// stop ends the run because ctx is done (a signal, or the caller).
func (f *fake) stop() {
	if f.exitWith != nil && *f.exitWith == ExitTerminated {
		return
	}
	f.note("stopped: %v", context.Cause(f.ctx))
	f.exitWith = ptr(ExitTerminated)
	f.stopped = true
}

// badLine handles a line that is not JSON: the real CLI prints an error and
// exits; so does fakeclaude.
func (f *fake) badLine(err error) {
	msg := err.Error()
	var le *protocol.LineError
	if errors.As(err, &le) && le.Raw != nil {
		msg += fmt.Sprintf(" (the line: %s)", clip.String(string(le.Raw), 200))
	}
	f.fail(ExitProtocol, "protocol", "stdin %s", msg)
	f.stopped = true
}

func ptr[T any](v T) *T { return &v }
