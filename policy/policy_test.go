package policy_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/askctl/askctl/policy"
	"github.com/askctl/askctl/protocol"
	"github.com/google/go-cmp/cmp"
)

const ci = `# the README's example
{"name":"no-deploy","match":{"question":"(?i)deploy"},"skip":"CI never deploys"}
{"name":"db","match":{"header":"^Database$"},"answer":"SQLite"}

{"name":"sections","match":{"option":"Intro"},"answer":["Outro","Intro"]}
{"name":"review","match":{"session":"^s_review"},"person":true}
{"name":"two","match":{"input":{"questions.#":"^2$"},"multi_select":false},"text":"Ship it\non Friday"}
{"name":"fallback","first":true,"after":"30s"}
`

func q(text, header string, multi bool, labels ...string) protocol.Question {
	out := protocol.Question{Question: text, Header: header, MultiSelect: multi}
	for _, l := range labels {
		out.Options = append(out.Options, protocol.Option{Label: l})
	}
	return out
}

var (
	db       = q("Which database should I use?", "Database", false, "Postgres", "SQLite")
	sections = q("Which sections?", "Sections", true, "Intro", "Body", "Outro")
	deploy   = q("Deploy to production now?", "Deploy", false, "Yes", "No")
	format   = q("How should I format the output?", "Format", false, "Summary", "Detailed")
	noLabels = q("Anything else?", "Notes", false)
)

func TestDecide(t *testing.T) {
	p, err := policy.Parse("ci.policy", []byte(ci))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		session string
		qs      []protocol.Question
		action  string
		answers map[string][]string
		rule    string
		after   time.Duration
		reason  string
	}{
		{"a header", "s_1", []protocol.Question{db}, policy.ActAnswer, map[string][]string{db.Question: {"SQLite"}}, "db", 0, ""},
		{"labels in order, by an option", "s_1", []protocol.Question{sections}, policy.ActAnswer, map[string][]string{sections.Question: {"Outro", "Intro"}}, "sections", 0, ""},
		{"two questions together, each by its own rule", "s_1", []protocol.Question{db, format}, policy.ActAnswer,
			map[string][]string{db.Question: {"SQLite"}, format.Question: {"Ship it\non Friday"}}, "db", 0, ""},
		{"the longest wait decides when", "s_1", []protocol.Question{sections, format, db}, policy.ActAnswer,
			map[string][]string{sections.Question: {"Outro", "Intro"}, format.Question: {"Summary"}, db.Question: {"SQLite"}}, "fallback", 30 * time.Second, ""},
		{"the fallback waits", "s_1", []protocol.Question{format}, policy.ActAnswer, map[string][]string{format.Question: {"Summary"}}, "fallback", 30 * time.Second, ""},
		{"a skip skips the whole request", "s_1", []protocol.Question{db, deploy}, policy.ActSkip, nil, "no-deploy", 0, "CI never deploys"},
		{"a person rule comes first for its session", "s_review1", []protocol.Question{format}, policy.ActPerson, nil, "review", 0, ""},
		{"a rule that does not fit goes on to the next", "s_1", []protocol.Question{noLabels}, policy.ActPerson, nil, "", 0, `no rule matches question "Anything else?"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := p.Decide(policy.Request{Session: tt.session, Questions: tt.qs})
			if d.Action != tt.action || d.After != tt.after || (tt.reason != "" && d.Reason != tt.reason) {
				t.Errorf("decision %s after %v (%q), want %s after %v (%q)", d.Action, d.After, d.Reason, tt.action, tt.after, tt.reason)
			}
			if tt.answers != nil {
				if diff := cmp.Diff(tt.answers, d.Answers); diff != "" {
					t.Errorf("answers (-want +got):\n%s", diff)
				}
			}
			if got := ""; d.Rule != nil || tt.rule != "" {
				if d.Rule != nil {
					got = d.Rule.Name
				}
				if got != tt.rule {
					t.Errorf("decided by %q, want %q", got, tt.rule)
				}
			}
		})
	}
}

// TestAnswerMustFit: a rule whose labels are not the question's options, or
// several labels for a single-select question, does not match it.
func TestAnswerMustFit(t *testing.T) {
	p, err := policy.Parse("p", []byte(`{"name":"many","answer":["Postgres","SQLite"]}
{"name":"other","answer":"MySQL"}
{"name":"pg","answer":"Postgres"}`))
	if err != nil {
		t.Fatal(err)
	}
	if d := p.Decide(policy.Request{Questions: []protocol.Question{db}}); d.Rule == nil || d.Rule.Name != "pg" {
		t.Errorf("decided by %v, want pg", d.Rule)
	}
}

func TestParseErrorsNameLineAndField(t *testing.T) {
	bad := `{"name":"a","answer":"x"}
{"name":"a","skip":"why"}
{"name":"b"}
{"name":"c","answer":"x","skip":"y"}
{"name":"d","match":{"question":"(unclosed"},"first":true}
{"name":"e","first":true,"after":"soon"}
{"name":"f","first":true,"colour":"red"}
{"name":"g","match":{"headr":"x"},"first":true}
{"name":"h","text":"   "}
{"name":"i","answer":[]}
{"name":"j","answer":["x","x"]}
{"name":"k","person":true,"after":"5s"}
not json
{"name":"l","first":"yes"}
{"name":"m","match":{"input":{"questions.0.header":"(("}},"first":true}
{"name":"n","skip":" "}
{"name":"o","match":{"multi_select":"yes"},"first":true}
`
	_, err := policy.Parse("bad.policy", []byte(bad))
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		`bad.policy:2: name: "a" names the rule of line 1 too`,
		"bad.policy:3: want exactly one action of answer, text, first, skip or person, got 0",
		"bad.policy:4: want exactly one action of answer, text, first, skip or person, got 2",
		"bad.policy:5: match.question: not a regexp",
		`bad.policy:6: after: want a duration such as 30s or 2m, got "soon"`,
		"bad.policy:7: colour: unknown field",
		"bad.policy:8: match.headr: unknown field",
		"bad.policy:9: text: blank",
		"bad.policy:10: answer: no labels",
		`bad.policy:11: answer: "x" twice`,
		"bad.policy:12: after: a person rule does not act",
		"bad.policy:13: not a JSON object",
		"bad.policy:14: first: want boolean, got string",
		"bad.policy:15: match.input.questions.0.header: not a regexp",
		"bad.policy:16: skip: blank",
		"bad.policy:17: match.multi_select: want boolean, got string",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q:\n%v", want, err)
		}
	}
	if _, err := policy.Parse("empty.policy", []byte("# nothing\n\n")); err == nil || !strings.Contains(err.Error(), "empty.policy:1: no rules") {
		t.Errorf("an empty policy: %v", err)
	}
}

// A regexp that compiles past MaxProgram is refused when the file is read,
// naming the line and the field; one just under it is taken. RE2 matches in
// linear time, but its size multiplies the text's length: 100 rules
// [\s\S]{1000}x held a bridge for 20 s on one 30 KB question.
func TestSlowRegexpsAreRefused(t *testing.T) {
	_, err := policy.Parse("slow.policy", []byte(`{"name":"ok","match":{"question":"[\\s\\S]{100}x"},"first":true}
{"name":"slow","match":{"question":"[\\s\\S]{1000}x"},"first":true}
{"name":"slow-input","match":{"input":{"questions.0.question":"(a|b){500}"}},"first":true}
`))
	var pe *policy.Error
	if !errors.As(err, &pe) || len(pe.Problems) != 2 {
		t.Fatalf("got %v, want two problems", err)
	}
	for i, want := range []struct {
		line  int
		field string
	}{{2, "match.question"}, {3, "match.input.questions.0.question"}} {
		if p := pe.Problems[i]; p.Line != want.line || p.Field != want.field || !strings.Contains(p.Msg, "too slow") {
			t.Errorf("problem %d: %+v, want line %d, field %s, too slow", i, p, want.line, want.field)
		}
	}
}

// stopAfter is a context whose Err is Canceled from its nth call on.
type stopAfter struct {
	context.Context
	n *int
}

func (c stopAfter) Err() error {
	if *c.n--; *c.n < 0 {
		return context.Canceled
	}
	return nil
}

// Deciding stops between rules when the context ends: the question is left
// to a person, with the error, even though a later rule matches it.
func TestDecideStopsWhenTheContextEnds(t *testing.T) {
	var b strings.Builder
	for i := range 50 {
		fmt.Fprintf(&b, `{"name":"r%d","match":{"question":"^nothing %d$"},"first":true}`+"\n", i, i)
	}
	b.WriteString(`{"name":"last","first":true}` + "\n")
	p, err := policy.Parse("many.policy", []byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if d, err := p.DecideContext(context.Background(), policy.Request{Questions: []protocol.Question{db}}); err != nil || d.Action != policy.ActAnswer || d.Rule.Name != "last" {
		t.Fatalf("with time: %+v, %v; want answered by rule last", d, err)
	}
	n := 10
	d, err := p.DecideContext(stopAfter{context.Background(), &n}, policy.Request{Questions: []protocol.Question{db}})
	if !errors.Is(err, context.Canceled) || d.Action != policy.ActPerson || !strings.Contains(d.Reason, "did not decide in time") {
		t.Errorf("stopped: %+v, %v; want left to a person, context.Canceled", d, err)
	}
	if n > 0 {
		t.Errorf("the context was asked %d times fewer than the rules before the stop: deciding does not look at it between rules", n)
	}
}

// A file over MaxFile is refused without being read whole: even one that
// never ends.
func TestLoadReadsThroughALimit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big.policy")
	line := `{"name":"r","first":true}` + "\n"
	if err := os.WriteFile(path, []byte(strings.Repeat(line, policy.MaxFile/len(line)+1)), 0o600); err != nil {
		t.Fatal(err)
	}
	paths := []string{path}
	if _, err := os.Stat("/dev/zero"); err == nil {
		paths = append(paths, "/dev/zero")
	}
	for _, p := range paths {
		if _, err := policy.Load(p); err == nil || !strings.Contains(err.Error(), "over") {
			t.Errorf("%s: %v, want refused as over %d bytes", p, err, policy.MaxFile)
		}
	}
}

// TestDecisionNamesEveryRule: a request decided by several rules names each
// of them once, in question order (what the answered event and the log
// say); one decided by one rule names it.
func TestDecisionNamesEveryRule(t *testing.T) {
	p, err := policy.Parse("ci.policy", []byte(ci))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		qs   []protocol.Question
		want string
	}{
		{[]protocol.Question{db, format}, `rule "db" (ci.policy:3), rule "two" (ci.policy:7)`},
		{[]protocol.Question{db}, `rule "db" (ci.policy:3)`},
		{[]protocol.Question{db, deploy}, `rule "no-deploy" (ci.policy:2)`},
		{[]protocol.Question{noLabels}, ``},
	} {
		if got := p.Decide(policy.Request{Session: "s_1", Questions: tt.qs}).Named(); got != tt.want {
			t.Errorf("%d questions: Named() = %q, want %q", len(tt.qs), got, tt.want)
		}
	}
}

// TestUnreachableRules: rules after one that matches every question are
// never reached, and are named with the rule that shadows them; a policy
// whose catch-all is last has none.
func TestUnreachableRules(t *testing.T) {
	p, err := policy.Parse("p.policy", []byte(`{"name":"db","match":{"header":"^Database$"},"answer":"SQLite"}
{"name":"all","text":"whatever"}
{"name":"deploy","match":{"question":"deploy"},"skip":"no"}
{"name":"rest","first":true}
`))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`rule "deploy" (p.policy:3) is never reached: rule "all" (p.policy:2) before it matches every question`,
		`rule "rest" (p.policy:4) is never reached: rule "all" (p.policy:2) before it matches every question`,
	}
	if diff := cmp.Diff(want, p.Unreachable()); diff != "" {
		t.Errorf("Unreachable (-want +got):\n%s", diff)
	}
	// ci's fallback (first: true) needs options, so it shadows nothing; it
	// is last anyway.
	ok, err := policy.Parse("ci.policy", []byte(ci))
	if err != nil {
		t.Fatal(err)
	}
	if u := ok.Unreachable(); len(u) != 0 {
		t.Errorf("the README's policy: %v", u)
	}
}
