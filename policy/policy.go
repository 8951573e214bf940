// Package policy answers questions by rules, for runs of Claude Code that
// must never block on a person (CI): askctl serve --policy FILE applies a
// policy to every question the bridge holds, on both routes (the SDK's
// AskUserQuestion and the MCP ask_user tool), and askctl policy check FILE
// checks one.
//
// A policy file is JSON Lines: one rule a line, tried in order; blank lines
// and lines starting with # are comments.
//
//	# CI never deploys, picks SQLite, and otherwise takes the first option after 30 s.
//	{"name":"no-deploy","match":{"question":"(?i)deploy"},"skip":"CI never deploys"}
//	{"name":"db","match":{"header":"^Database$"},"answer":"SQLite"}
//	{"name":"sections","match":{"option":"Intro"},"answer":["Intro","Outro"]}
//	{"name":"review","match":{"session":"^s_review"},"person":true}
//	{"name":"fallback","first":true,"after":"30s"}
//
// A rule matches a question when every condition of its match holds:
//
//	question, header  regexps (RE2) on the question's text and header chip
//	option            one of the question's option labels equals it
//	multi_select      the question is (true) or is not (false) multiSelect
//	session           a regexp on the bridge's session id
//	input             {"<gjson path>": "<regexp>"}: each path of the raw tool
//	                  input (for the MCP route, {"questions":[…]}) exists and
//	                  its value matches
//
// and its action fits the question: answer's labels are all options of it
// (one label for a single-select question), first needs options. A rule's
// action is exactly one of
//
//	answer  a label, or several labels for a multiSelect question (in order)
//	text    free text (the person's "Other")
//	first   true: the first option
//	skip    a reason: the agent gets a deny with it
//	person  true: leave the question to a person
//
// and "after" (a Go duration) makes a rule wait that long for a person
// before it acts. The questions of one request are decided together: each
// takes the first rule that matches it; if any falls to a person (or to no
// rule), the policy leaves the whole request to a person; if any is to be
// skipped, the request is skipped; otherwise every question is answered at
// once — never a partial set — after the longest "after" of its rules.
//
// Deciding is bounded: a rule's regexp compiles to at most [MaxProgram]
// instructions (a longer one is refused when the file is read, naming the
// rule and the field: RE2's time is its size times the text's length), and
// [Policy.DecideContext] stops between rules when its context ends (the
// bridge gives each question a budget, and stops when a person settles it).
package policy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"time"

	"github.com/askctl/askctl/protocol"
	"github.com/tidwall/gjson"
)

// Policy is an ordered list of rules, read from File.
type Policy struct {
	File  string
	Rules []*Rule
}

// Rule is one line of a policy.
type Rule struct {
	Name string
	File string
	Line int

	Question, Header, Session *regexp.Regexp
	Option                    string
	MultiSelect               *bool
	Input                     []InputMatch

	Answer []string
	Text   *string
	First  bool
	Skip   *string
	Person bool
	After  time.Duration
}

// InputMatch is one gjson path of the raw input and the regexp its value
// must match.
type InputMatch struct {
	Path string
	Re   *regexp.Regexp
}

// String names the rule and where it is: rule "db" (ci.policy:3).
func (r *Rule) String() string {
	return fmt.Sprintf("rule %q (%s:%d)", r.Name, r.File, r.Line)
}

// Action is what a rule does, in one word: answer, text, first, skip or
// person.
func (r *Rule) Action() string {
	switch {
	case r.Answer != nil:
		return ActAnswer
	case r.Text != nil:
		return "text"
	case r.First:
		return "first"
	case r.Skip != nil:
		return ActSkip
	}
	return ActPerson
}

// Decision actions.
const (
	ActAnswer = "answer" // answer every question of the request
	ActSkip   = "skip"   // skip the request with Reason
	ActPerson = "person" // leave it to a person
)

// Request is what a policy decides on: one AskUserQuestion (or ask_user)
// request of a session.
type Request struct {
	Session   string
	Questions []protocol.Question
	// Input is the raw tool input; nil means {"questions": Questions}.
	Input json.RawMessage
}

// Decision is a policy's verdict on a request.
type Decision struct {
	Action string
	// Answers maps each question's text to its labels in order, or its
	// free text (Action answer).
	Answers map[string][]string
	Reason  string        // the deny message (skip), or why it is left to a person
	After   time.Duration // how long to wait for a person first
	// Rule is the rule that decided: for an answer, the one that waits the
	// longest (the first question's when none waits); Rules is each
	// question's, nil where none matched.
	Rule  *Rule
	Rules []*Rule
}

// Named names every rule that decided, each once, in the order of the
// questions they decided ("rule \"db\" (ci.policy:3), rule \"two\"
// (ci.policy:7)"): what an answer to several questions says it was
// decided by. A skip names the rule that skipped. "" when no rule decided.
func (d Decision) Named() string {
	if d.Action != ActAnswer {
		// A skip (or a person's turn) is one rule's, for the whole request.
		if d.Rule == nil {
			return ""
		}
		return d.Rule.String()
	}
	var names []string
	seen := map[*Rule]bool{}
	for _, r := range d.Rules {
		if r != nil && !seen[r] {
			seen[r] = true
			names = append(names, r.String())
		}
	}
	if len(names) == 0 && d.Rule != nil {
		return d.Rule.String()
	}
	return strings.Join(names, ", ")
}

// decidesEvery reports whether r matches every question: it has no
// condition, and its action fits any question (free text, a skip, a
// person); first and answer need the question's options.
func (r *Rule) decidesEvery() bool {
	return r.Question == nil && r.Header == nil && r.Session == nil && r.Option == "" && r.MultiSelect == nil && len(r.Input) == 0 &&
		(r.Text != nil || r.Skip != nil || r.Person)
}

// Unreachable lists the rules no question can reach, each with why: a rule
// before it matches every question (each question takes the first rule
// that matches it).
func (p *Policy) Unreachable() []string {
	var out []string
	for i, r := range p.Rules {
		if !r.decidesEvery() {
			continue
		}
		for _, later := range p.Rules[i+1:] {
			out = append(out, fmt.Sprintf("%s is never reached: %s before it matches every question", later, r))
		}
		break
	}
	return out
}

// Decide decides a request by the first rule that matches each question.
func (p *Policy) Decide(r Request) Decision {
	d, _ := p.DecideContext(context.Background(), r)
	return d
}

// DecideContext is Decide within ctx: when ctx ends first (the question was
// settled, the time for deciding ran out, the program is stopping), the
// question is left to a person, and the error says why.
func (p *Policy) DecideContext(ctx context.Context, r Request) (Decision, error) {
	d, err := p.decide(ctx, r)
	if err != nil {
		return Decision{Action: ActPerson, Reason: "the policy did not decide in time (" + err.Error() + "): left to a person"}, err
	}
	return d, nil
}

func (p *Policy) decide(ctx context.Context, r Request) (Decision, error) {
	input := r.Input
	if len(input) == 0 {
		input, _ = json.Marshal(map[string]any{"questions": r.Questions})
	}
	d := Decision{Action: ActAnswer, Answers: map[string][]string{}, Rules: make([]*Rule, len(r.Questions))}
	var skip *Rule
	for i, q := range r.Questions {
		var rule *Rule
		for _, ru := range p.Rules {
			if err := ctx.Err(); err != nil {
				return Decision{}, err
			}
			if ru.matches(r.Session, q, input) {
				rule = ru
				break
			}
		}
		d.Rules[i] = rule
		switch {
		case rule == nil:
			return Decision{Action: ActPerson, Reason: fmt.Sprintf("no rule matches question %q", q.Question), Rules: d.Rules}, nil
		case rule.Person:
			return Decision{Action: ActPerson, Reason: fmt.Sprintf("%s leaves question %q to a person", rule, q.Question), Rule: rule, Rules: d.Rules}, nil
		case rule.Skip != nil:
			if skip == nil {
				skip = rule
			}
		default:
			d.Answers[q.Question] = rule.answer(q)
			if d.Rule == nil || rule.After > d.After {
				d.Rule, d.After = rule, rule.After
			}
		}
	}
	if skip != nil {
		return Decision{Action: ActSkip, Reason: *skip.Skip, After: skip.After, Rule: skip, Rules: d.Rules}, nil
	}
	return d, nil
}

func (r *Rule) matches(session string, q protocol.Question, input []byte) bool {
	if r.Question != nil && !r.Question.MatchString(q.Question) {
		return false
	}
	if r.Header != nil && !r.Header.MatchString(q.Header) {
		return false
	}
	if r.Session != nil && !r.Session.MatchString(session) {
		return false
	}
	if r.Option != "" && !protocol.IsLabel(q, r.Option) {
		return false
	}
	if r.MultiSelect != nil && *r.MultiSelect != q.MultiSelect {
		return false
	}
	for _, m := range r.Input {
		v := gjson.GetBytes(input, m.Path)
		if !v.Exists() || !m.Re.MatchString(v.String()) {
			return false
		}
	}
	// The action must fit the question.
	switch {
	case r.Answer != nil:
		if !q.MultiSelect && len(r.Answer) != 1 {
			return false
		}
		for _, l := range r.Answer {
			if !protocol.IsLabel(q, l) {
				return false
			}
		}
	case r.First:
		return len(q.Options) > 0
	}
	return true
}

func (r *Rule) answer(q protocol.Question) []string {
	switch {
	case r.Answer != nil:
		return append([]string(nil), r.Answer...)
	case r.Text != nil:
		return []string{*r.Text}
	}
	return []string{q.Options[0].Label}
}

// Load reads and checks a policy file.
func Load(path string) (*Policy, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFile+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFile {
		return nil, &Error{File: path, Problems: []Problem{{Line: 1, Msg: fmt.Sprintf("the file is over %d bytes, the limit", MaxFile)}}}
	}
	return Parse(path, data)
}

// MaxProgram bounds the size of a rule's regexp, compiled: RE2 matches in
// time proportional to it times the text's length, so a small program keeps
// every question's decision quick, whatever the text.
const MaxProgram = 300

// programSize is how many instructions regexp s compiles to (0 if it does
// not parse).
func programSize(s string) int {
	re, err := syntax.Parse(s, syntax.Perl)
	if err != nil {
		return 0
	}
	p, err := syntax.Compile(re.Simplify())
	if err != nil {
		return 0
	}
	return len(p.Inst)
}

// MaxFile bounds a policy file.
const MaxFile = 1 << 20

// Error is every problem of a policy file, each naming its line and field.
type Error struct {
	File     string
	Problems []Problem
}

// Problem is one problem, at a line, in a field ("" for the line itself).
type Problem struct {
	Line  int
	Field string
	Msg   string
}

func (e *Error) Error() string {
	var b strings.Builder
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteByte('\n')
		}
		if p.Field != "" {
			fmt.Fprintf(&b, "%s:%d: %s: %s", e.File, p.Line, p.Field, p.Msg)
		} else {
			fmt.Fprintf(&b, "%s:%d: %s", e.File, p.Line, p.Msg)
		}
	}
	return b.String()
}

// ruleJSON is a rule as written.
type ruleJSON struct {
	Name   string          `json:"name"`
	Match  json.RawMessage `json:"match"`
	Answer json.RawMessage `json:"answer"`
	Text   *string         `json:"text"`
	First  bool            `json:"first"`
	Skip   *string         `json:"skip"`
	Person bool            `json:"person"`
	After  string          `json:"after"`
}

type matchJSON struct {
	Question    string            `json:"question"`
	Header      string            `json:"header"`
	Option      string            `json:"option"`
	MultiSelect *bool             `json:"multi_select"`
	Session     string            `json:"session"`
	Input       map[string]string `json:"input"`
}

// matchFields are the fields of a rule's match.
const matchFields = "question, header, option, multi_select, session, input"

// decodeProblem reports why an object (a rule, or the field prefix names)
// did not decode: a field of the wrong type, an unknown field (known says
// which there are), or no object at all.
func decodeProblem(err error, prefix, known string, bad func(field, format string, a ...any)) {
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &te):
		bad(prefix+te.Field, "want %s, got %s", protocol.KindName(te.Type.Kind()), te.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		bad(prefix+strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`), "unknown field (%s)", known)
	default:
		bad(strings.TrimSuffix(prefix, "."), "not a JSON object: %v", err)
	}
}

// Parse reads a policy; name is the file it came from, for errors. Every
// problem is reported, each with its line and field.
func Parse(name string, data []byte) (*Policy, error) {
	p := &Policy{File: name}
	e := &Error{File: name}
	if len(data) > MaxFile {
		e.Problems = append(e.Problems, Problem{Line: 1, Msg: fmt.Sprintf("the file is %d bytes, over the limit of %d", len(data), MaxFile)})
		return nil, e
	}
	names := map[string]int{}
	for i, line := range bytes.Split(data, []byte("\n")) {
		n := i + 1
		line = bytes.TrimSpace(line)
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		bad := func(field, format string, a ...any) {
			e.Problems = append(e.Problems, Problem{Line: n, Field: field, Msg: fmt.Sprintf(format, a...)})
		}
		var rj ruleJSON
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&rj); err != nil {
			decodeProblem(err, "", "a rule has name, match, answer, text, first, skip, person, after; match has "+matchFields, bad)
			continue
		}
		if dec.More() {
			bad("", "more than one JSON value on the line (one rule a line)")
			continue
		}
		r := &Rule{Name: rj.Name, File: name, Line: n, Text: rj.Text, First: rj.First, Skip: rj.Skip, Person: rj.Person}
		if r.Name == "" {
			r.Name = fmt.Sprintf("line %d", n)
		} else if prev, dup := names[r.Name]; dup {
			bad("name", "%q names the rule of line %d too", r.Name, prev)
		}
		names[r.Name] = n
		if len(rj.Answer) > 0 {
			var one string
			var many []string
			switch {
			case json.Unmarshal(rj.Answer, &one) == nil:
				r.Answer = []string{one}
			case json.Unmarshal(rj.Answer, &many) == nil:
				r.Answer = many
			default:
				bad("answer", "want a label or an array of labels, got %s", rj.Answer)
			}
			if r.Answer != nil && len(r.Answer) == 0 {
				bad("answer", "no labels")
			}
			seen := map[string]bool{}
			for _, l := range r.Answer {
				if strings.TrimSpace(l) == "" {
					bad("answer", "a blank label")
				}
				if seen[l] {
					bad("answer", "%q twice", l)
				}
				seen[l] = true
			}
		}
		if r.Text != nil && strings.TrimSpace(*r.Text) == "" {
			bad("text", "blank: an answer is never empty")
		}
		if r.Skip != nil && strings.TrimSpace(*r.Skip) == "" {
			bad("skip", "blank: the reason is what the agent is told")
		}
		actions := 0
		for _, set := range []bool{len(rj.Answer) > 0, r.Text != nil, r.First, r.Skip != nil, r.Person} {
			if set {
				actions++
			}
		}
		if actions != 1 {
			bad("", "want exactly one action of answer, text, first, skip or person, got %d", actions)
		}
		if rj.After != "" {
			d, err := time.ParseDuration(rj.After)
			switch {
			case err != nil:
				bad("after", "want a duration such as 30s or 2m, got %q", rj.After)
			case d <= 0:
				bad("after", "want a positive duration, got %q", rj.After)
			case r.Person:
				bad("after", "a person rule does not act, so it waits for nothing")
			}
			r.After = d
		}
		var m *matchJSON
		if len(rj.Match) > 0 && string(rj.Match) != "null" {
			m = &matchJSON{}
			md := json.NewDecoder(bytes.NewReader(rj.Match))
			md.DisallowUnknownFields()
			if err := md.Decode(m); err != nil {
				decodeProblem(err, "match.", "match has "+matchFields, bad)
				m = nil
			}
		}
		if m != nil {
			re := func(field, s string) *regexp.Regexp {
				if s == "" {
					return nil
				}
				x, err := regexp.Compile(s)
				if err != nil {
					bad(field, "not a regexp: %v", err)
					return nil
				}
				if n := programSize(s); n > MaxProgram {
					bad(field, "too slow: it compiles to %d instructions, over the %d a rule's regexp may take (matching costs its size times the text's length, on every question; a bounded repeat like {1000} is written out that many times)", n, MaxProgram)
					return nil
				}
				return x
			}
			r.Question = re("match.question", m.Question)
			r.Header = re("match.header", m.Header)
			r.Session = re("match.session", m.Session)
			r.Option = m.Option
			r.MultiSelect = m.MultiSelect
			for _, path := range slices.Sorted(maps.Keys(m.Input)) {
				if path == "" {
					bad("match.input", "an empty path")
					continue
				}
				if x := re("match.input."+path, m.Input[path]); x != nil {
					r.Input = append(r.Input, InputMatch{Path: path, Re: x})
				}
			}
		}
		p.Rules = append(p.Rules, r)
	}
	if len(e.Problems) > 0 {
		return nil, e
	}
	if len(p.Rules) == 0 {
		return nil, &Error{File: name, Problems: []Problem{{Line: 1, Msg: "no rules (one JSON object a line)"}}}
	}
	return p, nil
}
