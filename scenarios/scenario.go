package scenarios

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/askctl/askctl/internal/clip"
	"github.com/askctl/askctl/protocol"
	"github.com/askctl/askctl/transcript"
	"github.com/rogpeppe/go-internal/txtar"
	"github.com/tidwall/gjson"
)

// Origins of a scenario.
const (
	Synthetic = "synthetic" // written by hand
	Recorded  = "recorded"  // captured from a real session by askctl record
)

// Routes.
const (
	RouteSDK = "sdk" // can_use_tool over the SDK control protocol
	RouteMCP = "mcp" // an MCP ask_user tool served by the bridge
)

// Section names of a scenario archive.
const (
	sectionHeader = "scenario.json"
	sectionSteps  = "steps.jsonl"
	sectionWire   = "wire.jsonl"
	sectionResume = "resume.jsonl"
)

// Scenario is one session, the single source of truth for what the agent
// (fakeclaude, or the real CLI behind the fake model API) does and what it
// expects back.
//
// On disk a scenario is a txtar archive:
//
//	Prose: what the session shows, and why (the archive comment).
//	-- scenario.json --
//	{"name":"ask-single","route":"sdk","cli_version":"2.1.330","origin":"synthetic"}
//	-- steps.jsonl --
//	{"prompt":"Ask me which database."}
//	{"ask":{"questions":[…]},"user":{"answers":{"Which database?":"Postgres"}}}
//	{"text":"Done."}
//	-- wire.jsonl --
//	(recorded scenarios only: every line both ways, as transcript records)
//
// Steps run in order, one a line; a "prompt" step starts a turn and each turn
// ends with a result. See the package documentation for every step field.
type Scenario struct {
	Name        string
	Description string // the archive comment
	Route       string
	CLIVersion  string
	Origin      string
	File        string // where it was loaded from ("builtin:ask-multi" for built-ins)
	Source      []byte // the archive as parsed

	Steps []Step
	// Resume is what the agent plays when it is started again with
	// --resume: a scenario that expects to be resumed (a bridge's late
	// answer) has them. askctl replay plays Steps only.
	Resume []Step
	Wire   []transcript.Record // recorded scenarios: the session as captured
}

// Kind is the kind of a step.
type Kind string

// Step kinds.
const (
	KindPrompt Kind = "prompt" // wait for the user's prompt; starts a turn
	KindText   Kind = "text"   // the assistant writes text
	KindAsk    Kind = "ask"    // the assistant calls AskUserQuestion
	KindTool   Kind = "tool"   // the assistant calls another tool that needs permission
	KindMCP    Kind = "mcp"    // the assistant calls an MCP server's tool (route "mcp": ask_user)
)

// Step is one line of steps.jsonl.
type Step struct {
	N    int  // 1-based position among the scenario's steps, set once by Parse
	Line int  // line in the scenario file
	Kind Kind //

	// Prompt is the user's message for a prompt step; the SDK side sends it
	// (askctl replay), and the agent does not insist on it (bridges send
	// their own).
	Prompt string
	// ExpectPrompt, on a prompt step, is a regular expression the prompt
	// the agent receives must match.
	ExpectPrompt *regexp.Regexp
	// RefusePrompt, on a prompt step, is a regular expression the prompt
	// must not match: what the agent must not be told (a timeout is no
	// refusal by the person).
	RefusePrompt *regexp.Regexp
	// Text is the assistant's text for a text step.
	Text string
	// Questions of an ask step.
	Questions []protocol.Question
	// Tool call of a tool step.
	Tool *ToolCall
	// MCP is the call of an mcp step. An ask_user call (an input with a
	// "question") also has Questions: the one question it asks.
	MCP *MCPCall

	// ID is the tool_use id; generated when empty.
	ID string
	// Expect says what the answer must be; derived from User when nil.
	Expect *Expect
	// User is the person's part, played by askctl replay.
	User *User
	// CancelAfter: the agent withdraws the pending request with
	// control_cancel_request after this long without an answer; on an mcp
	// step, it ends the tools/call then, as the CLI's MCP tool timeout
	// does (notifications/cancelled to the server, an is_error result).
	CancelAfter time.Duration
	// ExitAfter: the agent process exits with ExitCode after this long
	// without an answer.
	ExitAfter time.Duration
	ExitCode  int
	// Parallel: the call is in the same model response as the call before
	// it, and runs at once with it, as the CLI runs the tools it may run
	// concurrently (ConcurrentTools): both control_requests are pending at
	// once, and each is answered, cancelled or withdrawn on its own.
	Parallel bool
	// Delay, on a parallel call: the model writes its tool_use this long
	// after the call before it, so its request comes that much later (the
	// CLI starts each call as its block of the response is complete).
	Delay time.Duration
}

// ConcurrentTools are the tools the CLI runs at once when one model
// response calls several (isConcurrencySafe in CLI 2.1.330): a parallel
// step calls one of these, and so does the step it runs beside.
var ConcurrentTools = map[string]bool{"AskUserQuestion": true, "Read": true, "Glob": true, "Grep": true, "WebFetch": true, "WebSearch": true}

// ToolCall is a call of a tool other than AskUserQuestion.
type ToolCall struct {
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
	// Request holds extra can_use_tool fields (description,
	// permission_suggestions, blocked_path), as the real CLI sends for this
	// call. "${CWD}" in any string is replaced by the agent's directory.
	Request json.RawMessage `json:"request,omitempty"`
	// Output is what the tool returns when allowed (the tool_result text).
	Output string `json:"output,omitempty"`
	// Result is the structured tool_use_result when allowed.
	Result json.RawMessage `json:"result,omitempty"`
}

// MCPCall is a call of an MCP server's tool: the CLI names it
// mcp__<server>__<tool>, and calls it with tools/call when the model uses it.
type MCPCall struct {
	Server string `json:"server"`
	// Tool is the tool's name on its server; "ask_user" when empty.
	Tool  string          `json:"tool,omitempty"`
	Input json.RawMessage `json:"input"`
	// Result is what the server returned, {"content":[…],"isError":…}
	// (recordings): askctl replay's scripted server returns it as it is,
	// and the step needs no user part.
	Result json.RawMessage `json:"result,omitempty"`
}

// Name is the tool's name as the CLI gives it to the model.
func (c *MCPCall) Name() string { return "mcp__" + c.Server + "__" + c.ToolOrDefault() }

// SplitMCPName splits a tool name the CLI gives an MCP tool,
// mcp__<server>__<tool>; ok is false for any other name.
func SplitMCPName(name string) (server, tool string, ok bool) {
	rest, ok := strings.CutPrefix(name, "mcp__")
	if !ok {
		return "", "", false
	}
	server, tool, ok = strings.Cut(rest, "__")
	if !ok || server == "" || tool == "" {
		return "", "", false
	}
	return server, tool, true
}

// ToolOrDefault is Tool, or "ask_user".
func (c *MCPCall) ToolOrDefault() string {
	if c.Tool == "" {
		return "ask_user"
	}
	return c.Tool
}

// Expect is what the answer to an ask or tool step must be. On an mcp step
// it is what the tool returns: behavior "allow" is a result that is not an
// error, "deny" one with isError; each answer's labels must be named in the
// result's text; match paths are evaluated on the result
// ({"content":[…],"isError":…}).
type Expect struct {
	// Behavior is "allow" or "deny".
	Behavior string `json:"behavior,omitempty"`
	// Answers maps each question text to its exact answer string.
	Answers map[string]string `json:"answers,omitempty"`
	// Interrupt, when set, is the deny's interrupt flag.
	Interrupt *bool `json:"interrupt,omitempty"`
	// Match maps gjson paths, evaluated on the permission result
	// ({"behavior":…,"updatedInput":…}), to the JSON value each must have.
	Match map[string]json.RawMessage `json:"match,omitempty"`
	// NoAnswer says no answer must come (the request is cancelled, or the
	// agent exits first).
	NoAnswer bool `json:"no_answer,omitempty"`
}

// User is the person's part of an ask or tool step.
type User struct {
	// Answers maps question text to the chosen label, free text, or a list of
	// labels (multiSelect, joined with ", " as the bridge must).
	Answers map[string]Answer `json:"answers,omitempty"`
	// Annotations maps question text to notes or a selected preview.
	Annotations map[string]protocol.Annotation `json:"annotations,omitempty"`
	// Allow approves a tool step; on an ask step it is an allow with no
	// answers (what a buggy bridge sends, kept so recordings replay).
	Allow bool `json:"allow,omitempty"`
	// Skip declines, with this message as the deny reason.
	Skip *string `json:"skip,omitempty"`
	// Interrupt makes a skip also abort the turn.
	Interrupt bool `json:"interrupt,omitempty"`
	// Silent never answers: the agent withdraws the request (cancel_after),
	// exits (exit_after), or, with neither, the SDK side closes stdin.
	Silent bool `json:"silent,omitempty"`
	// After is how long the person takes before answering.
	After Duration `json:"after,omitempty"`
}

// Reply is the person's part as a [protocol.Reply]: the one mapping from a
// scenario's user part to what goes on the wire.
func (u *User) Reply() protocol.Reply {
	r := protocol.Reply{Annotations: u.Annotations, Allow: u.Allow, Interrupt: u.Interrupt}
	if u.Skip != nil {
		r.Skip, r.Message = true, *u.Skip
	}
	if len(u.Answers) > 0 {
		r.Answers = make(map[string]string, len(u.Answers))
		for q, a := range u.Answers {
			r.Answers[q] = a.String()
		}
	}
	return r
}

// UserOf is a reply read back from the wire as a scenario's user part
// (recordings). An error response becomes a skip that names the error.
func UserOf(r protocol.Reply, tool bool) *User {
	switch {
	case r.Error != "":
		msg := "error response: " + r.Error
		return &User{Skip: &msg}
	case r.Skip:
		msg := r.Message
		return &User{Skip: &msg, Interrupt: r.Interrupt}
	case tool || len(r.Answers) == 0:
		return &User{Allow: true}
	}
	u := &User{Answers: make(map[string]Answer, len(r.Answers)), Annotations: r.Annotations}
	for q, a := range r.Answers {
		u.Answers[q] = Answer{Labels: []string{a}}
	}
	return u
}

// Answer is one answer as the person gives it: a string, or a list of labels.
type Answer struct {
	Labels []string
	IsList bool
}

// String joins a list answer the way the CLI expects.
func (a Answer) String() string { return protocol.JoinLabels(a.Labels) }

// UnmarshalJSON accepts a string or an array of strings.
func (a *Answer) UnmarshalJSON(b []byte) error {
	labels, isList, err := protocol.DecodeLabels(b)
	if err != nil {
		return errors.New("want a string or an array of strings")
	}
	*a = Answer{Labels: labels, IsList: isList}
	return nil
}

// MarshalJSON writes a list answer as an array and a single one as a string.
func (a Answer) MarshalJSON() ([]byte, error) {
	if a.IsList {
		return json.Marshal(a.Labels)
	}
	return json.Marshal(a.String())
}

// Duration is a time.Duration written as "250ms" or "2s".
type Duration time.Duration

// UnmarshalJSON parses a Go duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return errors.New(`want a duration string such as "250ms"`)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("want a duration such as \"250ms\": %v", err)
	}
	if v < 0 {
		return errors.New("want a duration that is not negative")
	}
	*d = Duration(v)
	return nil
}

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// Expected returns the step's expectation: Expect if set, else what User
// implies, else nil (any valid answer is accepted).
func (s *Step) Expected() *Expect {
	if s.Expect != nil || s.User == nil {
		return s.Expect
	}
	if s.User.Silent && s.Kind == KindMCP {
		// Nobody answers: the server's timeout ends the call with an error.
		return &Expect{Behavior: protocol.BehaviorDeny}
	}
	if s.User.Silent {
		return &Expect{NoAnswer: true}
	}
	r := s.User.Reply()
	switch {
	case r.Skip && s.Kind == KindMCP:
		return &Expect{Behavior: protocol.BehaviorDeny}
	case r.Skip:
		return &Expect{Behavior: protocol.BehaviorDeny, Interrupt: &r.Interrupt}
	case (s.Kind == KindAsk || s.Kind == KindMCP) && len(r.Answers) > 0:
		return &Expect{Behavior: protocol.BehaviorAllow, Answers: r.Answers}
	case r.Allow || s.Kind == KindAsk:
		return &Expect{Behavior: protocol.BehaviorAllow}
	}
	return nil
}

// ToolUseID is the step's tool_use id: ID, or one made from the step's
// number when ID is empty. fakeclaude and the fake model API make the same
// one.
func (s *Step) ToolUseID() string {
	if s.ID != "" {
		return s.ID
	}
	return fmt.Sprintf("toolu_askctl%02d", s.N)
}

// Input is the input of the step's tool_use: {"questions": …} for an ask
// step, the tool's input for a tool step.
func (s *Step) Input() json.RawMessage {
	switch s.Kind {
	case KindAsk:
		b, _ := json.Marshal(struct {
			Questions []protocol.Question `json:"questions"`
		}{s.Questions})
		return b
	case KindTool:
		return s.Tool.Input
	case KindMCP:
		return s.MCP.Input
	}
	return nil
}

// Describe is a one-line description of the step, for messages about it.
func (s *Step) Describe() string {
	switch s.Kind {
	case KindPrompt:
		return "prompt " + clip.Quote(s.Prompt, 40)
	case KindText:
		return "text " + clip.Quote(s.Text, 40)
	case KindAsk:
		qs := make([]string, len(s.Questions))
		for i, q := range s.Questions {
			qs[i] = clip.Quote(q.Question, 60)
		}
		return "ask " + strings.Join(qs, ", ")
	case KindTool:
		return "tool " + s.Tool.Name
	case KindMCP:
		if len(s.Questions) == 1 {
			return "mcp " + s.MCP.Name() + " " + clip.Quote(s.Questions[0].Question, 60)
		}
		return "mcp " + s.MCP.Name()
	}
	return string(s.Kind)
}

// Calls reports whether steps of this kind call a tool (and so take user,
// expect and id).
func (k Kind) Calls() bool { return k == KindAsk || k == KindTool || k == KindMCP }

// Turns splits the steps into turns, each beginning with its prompt step.
func (sc *Scenario) Turns() [][]Step { return TurnsOf(sc.Steps) }

// Response is the call at steps[i] and the parallel calls after it: the
// calls of one model response, which the CLI runs at once.
func Response(steps []Step, i int) []*Step {
	out := []*Step{&steps[i]}
	for j := i + 1; j < len(steps) && steps[j].Parallel; j++ {
		out = append(out, &steps[j])
	}
	return out
}

// TurnsOf splits steps into turns, each beginning with its prompt step.
func TurnsOf(steps []Step) [][]Step {
	var turns [][]Step
	for _, s := range steps {
		if s.Kind == KindPrompt || len(turns) == 0 {
			turns = append(turns, nil)
		}
		turns[len(turns)-1] = append(turns[len(turns)-1], s)
	}
	return turns
}

// Error is one problem in a scenario file.
type Error struct {
	File  string
	Line  int    // 0 when the problem is the file as a whole
	Field string // JSON path in the line, "" when none
	Msg   string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	if e.Field != "" {
		fmt.Fprintf(&b, ": %s", e.Field)
	}
	b.WriteString(": " + e.Msg)
	return b.String()
}

// ErrorList is every problem found in a scenario; it is the error Parse
// returns.
type ErrorList []*Error

func (l ErrorList) Error() string {
	msgs := make([]string, len(l))
	for i, e := range l {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "\n")
}

// header is scenario.json.
type header struct {
	Name       string `json:"name"`
	Route      string `json:"route"`
	CLIVersion string `json:"cli_version"`
	Origin     string `json:"origin"`
}

// StepLine is one line of steps.jsonl as written: the form Parse reads and a
// recording is written in.
type StepLine struct {
	Prompt       *string          `json:"prompt,omitempty"`
	Text         *string          `json:"text,omitempty"`
	Ask          *AskLine         `json:"ask,omitempty"`
	Tool         *ToolCall        `json:"tool,omitempty"`
	MCP          *MCPCall         `json:"mcp,omitempty"`
	ID           string           `json:"id,omitempty"`
	Expect       *Expect          `json:"expect,omitempty"`
	User         *User            `json:"user,omitempty"`
	CancelAfter  *Duration        `json:"cancel_after,omitempty"`
	ExitAfter    *Duration        `json:"exit_after,omitempty"`
	ExitCode     *int             `json:"exit_code,omitempty"`
	ExpectPrompt string           `json:"expect_prompt,omitempty"`
	RefusePrompt string           `json:"refuse_prompt,omitempty"`
	Parallel     bool             `json:"parallel,omitempty"`
	Delay        *Duration        `json:"delay,omitempty"`
	Comment      *json.RawMessage `json:"#,omitempty"` // free text for people
}

// AskLine is the ask member of a StepLine.
type AskLine struct {
	Questions []protocol.Question `json:"questions"`
}

// Parse reads a scenario archive. file names it in errors. Every problem found
// is reported, each with the file, line and field.
func Parse(file string, data []byte) (*Scenario, error) {
	p := parser{file: file, ids: map[string]int{}}
	sc := p.parse(data)
	if p.more > 0 {
		p.errs = append(p.errs, &Error{File: p.file, Msg: fmt.Sprintf("and %d more problems", p.more)})
	}
	if len(p.errs) > 0 {
		return nil, p.errs
	}
	return sc, nil
}

type parser struct {
	file      string
	errs      ErrorList
	more      int            // problems found past MaxErrors
	stepsSeen int            // steps parsed
	ids       map[string]int // tool_use id → line
	prev      *Step          // the step before, in this section
}

// MaxErrors bounds the problems Parse reports one by one; past it they are
// counted ("and N more problems"), so a huge file of bad lines costs no more
// than a small one to report.
const MaxErrors = 100

func (p *parser) errorf(line int, field, format string, args ...any) {
	if len(p.errs) >= MaxErrors {
		p.more++
		return
	}
	p.errs = append(p.errs, &Error{File: p.file, Line: line, Field: field, Msg: clip.String(fmt.Sprintf(format, args...), 300)})
}

func (p *parser) parse(data []byte) *Scenario {
	if len(bytes.TrimSpace(data)) == 0 {
		p.errorf(0, "", "empty scenario")
		return nil
	}
	ar := txtar.Parse(data)
	sc := &Scenario{Description: strings.TrimSpace(string(ar.Comment)), File: p.file, Source: data}
	// Line of each section's first content line.
	line := 1 + bytes.Count(ar.Comment, []byte("\n"))
	starts := make([]int, len(ar.Files))
	for i, f := range ar.Files {
		starts[i] = line + 1 // the "-- name --" marker is on line
		line = starts[i] + bytes.Count(f.Data, []byte("\n"))
	}
	// The header first, wherever it stands: checks of the steps depend on it
	// (recordings may keep long headers).
	order := make([]int, 0, len(ar.Files))
	for i, f := range ar.Files {
		if f.Name == sectionHeader && (len(order) == 0 || ar.Files[order[0]].Name != sectionHeader) {
			order = append([]int{i}, order...)
		} else {
			order = append(order, i)
		}
	}
	seen := map[string]bool{}
	var hdrSeen, stepsSeen bool
	for _, i := range order {
		f, start := ar.Files[i], starts[i]
		if seen[f.Name] {
			p.errorf(start-1, "", "section %q appears twice", f.Name)
			continue
		}
		seen[f.Name] = true
		switch f.Name {
		case sectionHeader:
			hdrSeen = true
			p.parseHeader(sc, start, f.Data)
		case sectionSteps:
			stepsSeen = true
			p.parseSteps(sc, start, f.Data, &sc.Steps)
		case sectionResume:
			p.parseSteps(sc, start, f.Data, &sc.Resume)
		case sectionWire:
			p.parseWire(sc, start, f.Data)
		default:
			p.errorf(start-1, "", "unknown section %q (want %s, %s, %s or %s)", f.Name, sectionHeader, sectionSteps, sectionResume, sectionWire)
		}
	}
	if !hdrSeen {
		p.errorf(0, "", "missing section %q", sectionHeader)
	}
	if !stepsSeen {
		p.errorf(0, "", "missing section %q", sectionSteps)
	}
	if sc.Name == "" {
		sc.Name = strings.TrimSuffix(filepath.Base(p.file), filepath.Ext(p.file))
	}
	p.validate(sc)
	return sc
}

func (p *parser) parseHeader(sc *Scenario, line int, data []byte) {
	var h header
	if err := strictUnmarshal(bytes.TrimSpace(data), &h); err != nil {
		field, msg := describeJSONError(err)
		p.errorf(line, field, "%s", msg)
		return
	}
	if k := duplicateKey(data); k != "" {
		p.errorf(line, k, "key appears twice")
	}
	sc.Name, sc.Route, sc.CLIVersion, sc.Origin = h.Name, h.Route, h.CLIVersion, h.Origin
	if sc.Route == "" {
		sc.Route = RouteSDK
	}
	if sc.Origin == "" {
		sc.Origin = Synthetic
	}
	if sc.Route != RouteSDK && sc.Route != RouteMCP {
		p.errorf(line, "route", "want %q or %q, got %q", RouteSDK, RouteMCP, sc.Route)
	}
	if sc.Origin != Synthetic && sc.Origin != Recorded {
		p.errorf(line, "origin", "want %q or %q, got %q", Synthetic, Recorded, sc.Origin)
	}
}

func (p *parser) parseSteps(sc *Scenario, start int, data []byte, dst *[]Step) {
	count := 0
	p.prev = nil
	for i, raw := range bytes.Split(data, []byte("\n")) {
		n := start + i
		raw = bytes.TrimSpace(raw)
		if len(raw) == 0 || raw[0] == '#' {
			continue // blank lines and # comments are for people
		}
		var sl StepLine
		if err := strictUnmarshal(raw, &sl); err != nil {
			field, msg := describeJSONError(err)
			p.errorf(n, field, "%s", msg)
			continue
		}
		if k := duplicateKey(raw); k != "" {
			p.errorf(n, k, "key appears twice")
		}
		if st, ok := p.step(n, sl); ok {
			p.stepsSeen++
			count++
			st.N = p.stepsSeen
			p.validateStep(sc, &st, count == 1)
			p.validateParallel(sc, &st)
			p.prev = &st
			// Past the error bound the scenario is rejected anyway: keep no
			// more steps, so a huge bad file costs little memory.
			if len(p.errs) < MaxErrors {
				*dst = append(*dst, st)
			}
		}
	}
}

func (p *parser) step(n int, sl StepLine) (Step, bool) {
	st := Step{Line: n, ID: sl.ID, Expect: sl.Expect, User: sl.User}
	var kinds []string
	if sl.Prompt != nil {
		kinds = append(kinds, "prompt")
		st.Kind, st.Prompt = KindPrompt, *sl.Prompt
	}
	if sl.Text != nil {
		kinds = append(kinds, "text")
		st.Kind, st.Text = KindText, *sl.Text
	}
	if sl.Ask != nil {
		kinds = append(kinds, "ask")
		st.Kind, st.Questions = KindAsk, sl.Ask.Questions
	}
	if sl.Tool != nil {
		kinds = append(kinds, "tool")
		st.Kind, st.Tool = KindTool, sl.Tool
	}
	if sl.MCP != nil {
		kinds = append(kinds, "mcp")
		st.Kind, st.MCP = KindMCP, sl.MCP
	}
	switch len(kinds) {
	case 0:
		p.errorf(n, "", "a step needs one of prompt, text, ask, tool or mcp")
		return st, false
	case 1:
	default:
		p.errorf(n, "", "a step has one kind, got %s", strings.Join(kinds, " and "))
		return st, false
	}
	if sl.CancelAfter != nil {
		st.CancelAfter = time.Duration(*sl.CancelAfter)
	}
	if sl.ExitAfter != nil {
		st.ExitAfter = time.Duration(*sl.ExitAfter)
		st.ExitCode = 1
	}
	if sl.ExitCode != nil {
		st.ExitCode = *sl.ExitCode
	}
	st.Parallel = sl.Parallel
	if sl.Delay != nil {
		st.Delay = time.Duration(*sl.Delay)
		if !sl.Parallel {
			p.errorf(n, "delay", "delay goes with parallel: how long after the call before it the model writes this one")
		}
	}
	if !st.Kind.Calls() {
		for field, set := range map[string]bool{"id": sl.ID != "", "expect": sl.Expect != nil, "user": sl.User != nil, "cancel_after": sl.CancelAfter != nil, "exit_after": sl.ExitAfter != nil, "exit_code": sl.ExitCode != nil} {
			if set {
				p.errorf(n, field, "only ask, tool and mcp steps take %s", field)
			}
		}
	}
	if st.Kind == KindMCP && sl.CancelAfter != nil {
		switch {
		case st.CancelAfter < time.Second:
			p.errorf(n, "cancel_after", "an mcp step's cancel_after is the CLI's tool timeout, which is 1s at least, got %v", st.CancelAfter)
		case st.User == nil || !st.User.Silent:
			p.errorf(n, "cancel_after", `an mcp step's cancel_after is for a call nobody answers ("user": {"silent": true}): the CLI ends it then`)
		}
	}
	if st.Kind == KindMCP && sl.ExitAfter != nil {
		p.errorf(n, "exit_after", "an mcp step takes no exit_after: the MCP server decides when the call ends, or the CLI does (cancel_after)")
	}
	if sl.ExitCode != nil && sl.ExitAfter == nil {
		p.errorf(n, "exit_code", "exit_code goes with exit_after")
	}
	if sl.CancelAfter != nil && sl.ExitAfter != nil {
		p.errorf(n, "", "a step takes cancel_after or exit_after, not both")
	}
	st.ExpectPrompt = p.promptPattern(n, &st, "expect_prompt", sl.ExpectPrompt)
	st.RefusePrompt = p.promptPattern(n, &st, "refuse_prompt", sl.RefusePrompt)
	return st, true
}

// promptPattern is a prompt step's regular expression field (src, named
// field), nil when it is empty or wrong: only prompt steps take one.
func (p *parser) promptPattern(n int, st *Step, field, src string) *regexp.Regexp {
	if src == "" {
		return nil
	}
	if st.Kind != KindPrompt {
		p.errorf(n, field, "only prompt steps take %s", field)
		return nil
	}
	re, err := regexp.Compile(src)
	if err != nil {
		p.errorf(n, field, "not a regular expression: %v", err)
		return nil
	}
	return re
}

func (p *parser) parseWire(sc *Scenario, start int, data []byte) {
	for i, raw := range bytes.Split(data, []byte("\n")) {
		n := start + i
		if len(bytes.TrimSpace(raw)) == 0 {
			continue
		}
		var r transcript.Record
		if err := json.Unmarshal(raw, &r); err != nil {
			field, msg := describeJSONError(err)
			p.errorf(n, field, "%s", msg)
			continue
		}
		if r.IsWire() && r.Dir != transcript.ToCLI && r.Dir != transcript.FromCLI {
			p.errorf(n, "dir", "want %q or %q, got %q", transcript.ToCLI, transcript.FromCLI, r.Dir)
			continue
		}
		sc.Wire = append(sc.Wire, r)
	}
}

// validate checks the steps as a whole.
func (p *parser) validate(sc *Scenario) {
	if sc.Steps == nil && p.stepsSeen == 0 {
		if len(p.errs) == 0 {
			p.errorf(0, "", "no steps")
		}
		return
	}
	if sc.Route == RouteMCP {
		prompts := 0
		for _, st := range sc.Steps {
			switch st.Kind {
			case KindPrompt:
				if prompts++; prompts == 2 {
					p.errorf(st.Line, "prompt", `a route "mcp" scenario is one turn (the agent runs in print mode, claude -p): one prompt step`)
				}
			case KindAsk:
				p.errorf(st.Line, "ask", `route "mcp" runs in print mode, where AskUserQuestion is not offered: ask with an mcp step`)
			}
		}
		if len(sc.Resume) > 0 {
			p.errorf(0, "", `a route "mcp" scenario has no resume.jsonl`)
		}
	}
	// An mcp step's cancel_after stands for the CLI's tool timeout, one
	// for every call of a session (MCPToolTimeout): the same on each step
	// that has it.
	// It ends every call of the session with no result by then, so a call
	// nobody answers ends by it, and says so.
	if d := sc.MCPToolTimeout(); d > 0 {
		for _, st := range sc.Steps {
			switch {
			case st.Kind != KindMCP:
			case st.CancelAfter > 0 && st.CancelAfter != d:
				p.errorf(st.Line, "cancel_after", "an mcp step's cancel_after is the CLI's tool timeout, one for the session: %v here, %v on an mcp step before", st.CancelAfter, d)
			case st.CancelAfter == 0 && st.User != nil && st.User.Silent:
				p.errorf(st.Line, "cancel_after", "the CLI's tool timeout of this session (cancel_after %v on another mcp step) ends this call too: give it cancel_after %v", d, d)
			}
		}
	}
}

// MCPToolTimeout is the CLI's tool timeout its mcp steps' cancel_after
// stands for (the first; Parse has them all the same): fakeclaude ends
// those calls then, and the real CLI is run with it as MCP_TOOL_TIMEOUT,
// which ends every call of the session with no result by then (a
// scenario for both has each of its mcp calls end so, or answered
// sooner). Zero: none has it.
func (sc *Scenario) MCPToolTimeout() time.Duration {
	for _, st := range sc.Steps {
		if st.Kind == KindMCP && st.CancelAfter > 0 {
			return st.CancelAfter
		}
	}
	return 0
}

// validateStep checks one step's content, and what it shares with the steps
// before it (the first is a prompt; tool_use ids are unique).
func (p *parser) validateStep(sc *Scenario, st *Step, first bool) {
	if first && st.Kind != KindPrompt {
		p.errorf(st.Line, "", "the first step must be a prompt (a turn starts with the user's message), got %s", st.Kind)
	}
	if st.ID != "" {
		if prev, dup := p.ids[st.ID]; dup {
			p.errorf(st.Line, "id", "tool_use id %q is already used on line %d", st.ID, prev)
		} else {
			p.ids[st.ID] = st.Line
		}
	}
	switch st.Kind {
	case KindAsk:
		p.validateQuestions(sc, st)
	case KindTool:
		p.validateTool(st)
	case KindMCP:
		p.validateMCP(sc, st)
	}
	if st.User != nil {
		p.validateUser(st)
	}
	if e := st.Expect; e != nil {
		p.validateExpect(st, e)
	}
}

// validateParallel checks a parallel step against the call before it: the
// CLI runs both at once only when both tools may run concurrently.
func (p *parser) validateParallel(sc *Scenario, st *Step) {
	if !st.Parallel {
		return
	}
	concurrent := func(s *Step) bool {
		return s.Kind == KindAsk || s.Kind == KindTool && s.Tool != nil && ConcurrentTools[s.Tool.Name]
	}
	switch {
	case sc.Route != RouteSDK || st.Kind != KindAsk && st.Kind != KindTool:
		p.errorf(st.Line, "parallel", "only ask and tool steps of a route sdk scenario run in parallel")
	case p.prev == nil || p.prev.Kind != KindAsk && p.prev.Kind != KindTool:
		p.errorf(st.Line, "parallel", "a parallel call runs beside the call before it, and the step before is no ask or tool step")
	case !concurrent(st) || !concurrent(p.prev):
		p.errorf(st.Line, "parallel", "the CLI runs only these tools at once: AskUserQuestion, %s", strings.Join(concurrentOthers(), ", "))
	}
}

func concurrentOthers() []string {
	var out []string
	for t := range ConcurrentTools {
		if t != "AskUserQuestion" {
			out = append(out, t)
		}
	}
	sort.Strings(out)
	return out
}

func (p *parser) validateQuestions(sc *Scenario, st *Step) {
	n := len(st.Questions)
	if n < 1 || n > 4 {
		p.errorf(st.Line, "ask.questions", "want 1 to 4 questions, got %d", n)
	}
	texts := map[string]bool{}
	for i, q := range st.Questions {
		at := fmt.Sprintf("ask.questions[%d]", i)
		if strings.TrimSpace(q.Question) == "" {
			p.errorf(st.Line, at+".question", "required")
		} else if texts[q.Question] {
			p.errorf(st.Line, at+".question", "question texts must be unique, %q repeats", q.Question)
		}
		texts[q.Question] = true
		if strings.TrimSpace(q.Header) == "" {
			p.errorf(st.Line, at+".header", "required")
		} else if l := utf8.RuneCountInString(q.Header); l > 12 && sc.Origin != Recorded {
			// The CLI only advises 12; recordings keep what a real model wrote.
			p.errorf(st.Line, at+".header", "at most 12 characters, got %d (%q)", l, q.Header)
		}
		if k := len(q.Options); k < 2 || k > 4 {
			p.errorf(st.Line, at+".options", "want 2 to 4 options, got %d", k)
		}
		labels := map[string]bool{}
		for j, o := range q.Options {
			oat := fmt.Sprintf("%s.options[%d]", at, j)
			if strings.TrimSpace(o.Label) == "" {
				p.errorf(st.Line, oat+".label", "required")
			} else if labels[o.Label] {
				p.errorf(st.Line, oat+".label", "labels must be unique within a question, %q repeats", o.Label)
			}
			labels[o.Label] = true
			if strings.TrimSpace(o.Description) == "" {
				p.errorf(st.Line, oat+".description", "required")
			}
		}
	}
}

func (p *parser) validateTool(st *Step) {
	t := st.Tool
	if t.Name == "" {
		p.errorf(st.Line, "tool.name", "required")
	}
	if t.Name == protocol.ToolAskUserQuestion {
		p.errorf(st.Line, "tool.name", "use an ask step for AskUserQuestion")
	}
	if len(t.Input) == 0 || !isObject(t.Input) {
		p.errorf(st.Line, "tool.input", "want an object")
	}
	if len(t.Request) > 0 && !isObject(t.Request) {
		p.errorf(st.Line, "tool.request", "want an object")
	}
}

func (p *parser) validateMCP(sc *Scenario, st *Step) {
	c := st.MCP
	if sc.Route != RouteMCP {
		p.errorf(st.Line, "mcp", `mcp steps belong to route "mcp" scenarios (set "route":"mcp" in scenario.json)`)
	}
	if !isMCPName(c.Server) {
		p.errorf(st.Line, "mcp.server", "want a server name of letters, digits and - (as in --mcp-config), got %q", c.Server)
	}
	if c.Tool != "" && !isMCPName(strings.ReplaceAll(c.Tool, "_", "-")) {
		p.errorf(st.Line, "mcp.tool", "want a tool name of letters, digits, - and _, got %q", c.Tool)
	}
	if len(c.Input) == 0 || !isObject(c.Input) {
		p.errorf(st.Line, "mcp.input", "want an object")
		return
	}
	var in struct {
		Question *string `json:"question"`
		Options  []struct {
			Label       string `json:"label"`
			Description string `json:"description"`
		} `json:"options"`
		MultiSelect bool `json:"multiSelect"`
	}
	if err := json.Unmarshal(c.Input, &in); err != nil {
		field, msg := describeJSONError(err)
		p.errorf(st.Line, "mcp.input."+field, "%s", msg)
		return
	}
	if len(c.Result) > 0 && (!isObject(c.Result) || !gjson.GetBytes(c.Result, "content").IsArray()) {
		p.errorf(st.Line, "mcp.result", `want {"content":[…],"isError":…}, the result of tools/call`)
	}
	if c.ToolOrDefault() == "ask_user" && (in.Question == nil || strings.TrimSpace(*in.Question) == "") {
		p.errorf(st.Line, "mcp.input.question", "required: ask_user asks one question")
		return
	}
	if in.Question != nil {
		q := protocol.Question{Question: *in.Question, MultiSelect: in.MultiSelect}
		for _, o := range in.Options {
			q.Options = append(q.Options, protocol.Option{Label: o.Label, Description: o.Description})
		}
		st.Questions = []protocol.Question{q}
	}
}

// isMCPName reports whether name is a server name the CLI accepts in
// --mcp-config: [A-Za-z0-9-]+. (By hand, not a regexp: compiling one at
// init would cost every fakeclaude start.)
func isMCPName(name string) bool {
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
			return false
		}
	}
	return name != ""
}

func (p *parser) validateUser(st *Step) {
	u := st.User
	set := 0
	for _, b := range []bool{len(u.Answers) > 0, u.Allow, u.Skip != nil, u.Silent} {
		if b {
			set++
		}
	}
	if set != 1 {
		p.errorf(st.Line, "user", "want exactly one of answers, allow, skip or silent")
		return
	}
	if u.Interrupt && u.Skip == nil {
		p.errorf(st.Line, "user.interrupt", "interrupt goes with skip")
	}
	if st.Kind == KindTool && len(u.Answers) > 0 {
		p.errorf(st.Line, "user.answers", "a tool step is answered with allow or skip")
	}
	if st.Kind == KindMCP && (u.Allow || u.Interrupt) {
		p.errorf(st.Line, "user", "an mcp step is answered with answers, skip or silent (the server times out)")
	}
	for q := range u.Answers {
		if !hasQuestion(st.Questions, q) {
			p.errorf(st.Line, "user.answers", "no question %q in this step", q)
		}
	}
}

func (p *parser) validateExpect(st *Step, e *Expect) {
	if e.Behavior != "" && e.Behavior != protocol.BehaviorAllow && e.Behavior != protocol.BehaviorDeny {
		p.errorf(st.Line, "expect.behavior", "want %q or %q, got %q", protocol.BehaviorAllow, protocol.BehaviorDeny, e.Behavior)
	}
	for q := range e.Answers {
		if !hasQuestion(st.Questions, q) {
			p.errorf(st.Line, "expect.answers", "no question %q in this step", q)
		}
	}
	if st.User != nil {
		for _, c := range contradictions(st.Kind, e, st.User) {
			p.errorf(st.Line, c.field, "contradicts user: %s", c.msg)
		}
	}
	paths := make([]string, 0, len(e.Match))
	for path := range e.Match {
		paths = append(paths, path)
	}
	sort.Strings(paths)
	for _, path := range paths {
		if !json.Valid(e.Match[path]) {
			p.errorf(st.Line, "expect.match", "value of %q is not JSON", path)
		}
	}
	if st.Kind == KindMCP && (e.NoAnswer || e.Interrupt != nil) {
		p.errorf(st.Line, "expect", "an mcp step's call always returns: expect behavior, answers or match")
	}
	if e.NoAnswer && (e.Behavior != "" || len(e.Answers) > 0 || len(e.Match) > 0) {
		p.errorf(st.Line, "expect.no_answer", "no_answer cannot go with other expectations")
	}
}

type contradiction struct{ field, msg string }

// contradictions lists where an explicit expect says the opposite of what
// the step's own user part does: askctl replay would play the user part, and
// the expectation could never hold.
func contradictions(kind Kind, e *Expect, u *User) []contradiction {
	var out []contradiction
	r := u.Reply()
	switch {
	case u.Silent && kind == KindMCP && (e.Behavior == protocol.BehaviorAllow || len(e.Answers) > 0):
		out = append(out, contradiction{"expect", "the user is silent (the server times out with an error), and expect wants an answer"})
	case u.Silent && kind != KindMCP && !e.NoAnswer && (e.Behavior != "" || len(e.Answers) > 0):
		out = append(out, contradiction{"expect", "the user is silent, and expect wants an answer"})
	case e.NoAnswer && !u.Silent:
		out = append(out, contradiction{"expect.no_answer", "expect wants no answer, and the user answers"})
	}
	if r.Skip && e.Behavior == protocol.BehaviorAllow {
		out = append(out, contradiction{"expect.behavior", `the user skips (a deny), and expect wants "allow"`})
	}
	if (len(r.Answers) > 0 || r.Allow) && e.Behavior == protocol.BehaviorDeny {
		out = append(out, contradiction{"expect.behavior", `the user answers (an allow), and expect wants "deny"`})
	}
	if r.Skip && e.Interrupt != nil && *e.Interrupt != r.Interrupt {
		out = append(out, contradiction{"expect.interrupt", fmt.Sprintf("the user's skip has interrupt %v, and expect wants %v", r.Interrupt, *e.Interrupt)})
	}
	for _, q := range sortedKeys(e.Answers) {
		if a, ok := r.Answers[q]; ok && a != e.Answers[q] {
			out = append(out, contradiction{"expect.answers", fmt.Sprintf("the user answers %q with %q, and expect wants %q", q, a, e.Answers[q])})
		}
	}
	return out
}

// dataKeyed names the members whose objects are maps keyed by data.
var dataKeyed = map[string]bool{"answers": true, "annotations": true, "match": true, "input": true, "request": true, "result": true}

// duplicateKey returns the path of the first key that appears twice in one
// JSON object of data, or "". encoding/json keeps the last silently; in a
// hand-written scenario a repeated key is a mistake.
func duplicateKey(data []byte) string {
	dec := json.NewDecoder(bytes.NewReader(data))
	var walk func(path string) string
	walk = func(path string) string {
		t, err := dec.Token()
		if err != nil {
			return ""
		}
		switch t {
		case json.Delim('{'):
			// Objects that decode into structs match keys case-insensitively
			// (encoding/json folds case), so "prompt" and "Prompt" collide
			// there; maps keyed by data (answers, match, tool input) do not.
			fold := !dataKeyed[path[strings.LastIndex(path, ".")+1:]]
			seen := map[string]bool{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return ""
				}
				k, _ := kt.(string)
				at := k
				if path != "" {
					at = path + "." + k
				}
				key := k
				if fold {
					key = strings.ToLower(k)
				}
				if seen[key] {
					return at
				}
				seen[key] = true
				if d := walk(at); d != "" {
					return d
				}
			}
			dec.Token() // }
		case json.Delim('['):
			for i := 0; dec.More(); i++ {
				if d := walk(fmt.Sprintf("%s[%d]", path, i)); d != "" {
					return d
				}
			}
			dec.Token() // ]
		}
		return ""
	}
	return walk("")
}

func hasQuestion(qs []protocol.Question, text string) bool {
	for _, q := range qs {
		if q.Question == text {
			return true
		}
	}
	return false
}

func isObject(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '{' && json.Valid(raw)
}

// strictUnmarshal decodes one JSON value, rejecting unknown fields and
// trailing data, so a typo in a scenario is an error and not a silent default.
func strictUnmarshal(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("more than one JSON value on the line")
	}
	return nil
}

// describeJSONError splits an encoding/json error into a field path and a
// message.
func describeJSONError(err error) (field, msg string) {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		return te.Field, fmt.Sprintf("want %s, got %s", protocol.KindName(te.Type.Kind()), te.Value)
	case errors.As(err, &se):
		return "", fmt.Sprintf("invalid JSON at byte %d: %v", se.Offset, se)
	}
	if f, ok := strings.CutPrefix(err.Error(), `json: unknown field "`); ok && strings.HasSuffix(f, `"`) {
		return strings.TrimSuffix(f, `"`), "unknown field"
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return "", "invalid JSON: unexpected end of line"
	}
	return "", err.Error()
}

// ParseFile reads and parses the named scenario file.
func ParseFile(path string) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// Resumed is sc with what a session started again with --resume plays as
// its resume.jsonl: sc's own, or, when it has none, its steps again (with
// their tool_use ids made new) — the conversation goes on. fakeclaude plays
// it; the real CLI's model API serves its Conversation.
func (sc *Scenario) Resumed() (*Scenario, error) {
	if len(sc.Wire) > 0 {
		return nil, errors.New("a recorded scenario replays its recording; it has no resumed form")
	}
	steps, resume := sc.section(sectionSteps), sc.section(sectionResume)
	part := resume
	if len(bytes.TrimSpace(part)) == 0 {
		// The steps again; explicit tool_use ids must stay unique.
		var err error
		part, err = mapSteps(steps, func(sl *StepLine) {
			if sl.ID != "" {
				sl.ID += "_resumed"
			}
		})
		if err != nil {
			return nil, err
		}
	}
	out, err := sc.withSections(map[string][]byte{sectionResume: part})
	if err != nil {
		return nil, err
	}
	out.File = strings.TrimPrefix(sc.File, "builtin:") + " (resumed)"
	return out, nil
}

// WithMCPServer is sc with every mcp step calling server's tool: how a
// scenario written for askctl's server is played against a bridge whose
// ask_user server has another name.
func (sc *Scenario) WithMCPServer(server, tool string) (*Scenario, error) {
	change := func(sl *StepLine) {
		if sl.MCP != nil {
			sl.MCP.Server = server
			if sl.MCP.Tool = tool; tool == "ask_user" {
				sl.MCP.Tool = ""
			}
		}
	}
	steps, err := mapSteps(sc.section(sectionSteps), change)
	if err != nil {
		return nil, err
	}
	return sc.withSections(map[string][]byte{sectionSteps: steps})
}

// MCPTools are the tool names sc's mcp steps call, in the order first
// called: mcp__<server>__<tool>.
func (sc *Scenario) MCPTools() []string {
	return sc.mcpDistinct(func(c *MCPCall) string { return c.Name() })
}

// MCPServers are the servers sc's mcp steps call, in the order first
// called.
func (sc *Scenario) MCPServers() []string {
	return sc.mcpDistinct(func(c *MCPCall) string { return c.Server })
}

func (sc *Scenario) mcpDistinct(key func(*MCPCall) string) []string {
	var out []string
	for _, st := range sc.Steps {
		if st.Kind == KindMCP && !slices.Contains(out, key(st.MCP)) {
			out = append(out, key(st.MCP))
		}
	}
	return out
}

// section is the content of a section of sc's archive.
func (sc *Scenario) section(name string) []byte {
	for _, f := range txtar.Parse(sc.Source).Files {
		if f.Name == name {
			return f.Data
		}
	}
	return nil
}

// withSections is sc's archive with the sections given replaced (or added),
// parsed again; a nil section is dropped.
func (sc *Scenario) withSections(set map[string][]byte) (*Scenario, error) {
	ar := txtar.Parse(sc.Source)
	var files []txtar.File
	done := map[string]bool{}
	for _, f := range ar.Files {
		if data, ok := set[f.Name]; ok {
			done[f.Name] = true
			if data == nil {
				continue
			}
			f.Data = data
		}
		files = append(files, f)
	}
	for _, name := range []string{sectionSteps, sectionResume} {
		if data := set[name]; data != nil && !done[name] {
			files = append(files, txtar.File{Name: name, Data: data})
		}
	}
	out, err := Parse(sc.File, txtar.Format(&txtar.Archive{Comment: ar.Comment, Files: files}))
	if err != nil {
		return nil, fmt.Errorf("scenario %s, changed: %w", sc.Name, err)
	}
	return out, nil
}

// mapSteps rewrites each step line of a steps section through change;
// comments and blank lines go.
func mapSteps(data []byte, change func(*StepLine)) ([]byte, error) {
	var b bytes.Buffer
	for _, raw := range bytes.Split(data, []byte("\n")) {
		raw = bytes.TrimSpace(raw)
		if len(raw) == 0 || raw[0] == '#' {
			continue
		}
		var sl StepLine
		if err := json.Unmarshal(raw, &sl); err != nil {
			return nil, err
		}
		change(&sl)
		line, err := json.Marshal(sl)
		if err != nil {
			return nil, err
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.Bytes(), nil
}

// Conversation is sc's whole conversation as one scenario, in memory: its
// steps, then its resume.jsonl. A resumed CLI sends the model the first
// session's turns and the new ones; the fake model API serves this.
func (sc *Scenario) Conversation() *Scenario {
	c := *sc
	c.Steps = append(append([]Step(nil), sc.Steps...), sc.Resume...)
	c.Resume = nil
	return &c
}

// ResumePart is the scenario the resumed agent plays, as a scenario of its
// own (its steps are sc's resume.jsonl): what a check of the resumed
// session expects.
func (sc *Scenario) ResumePart() *Scenario {
	c := *sc
	c.Steps, c.Resume = sc.Resume, nil
	return &c
}
