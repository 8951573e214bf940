package shape

import (
	"strings"
	"testing"
)

func TestOfIgnoresVolatileValues(t *testing.T) {
	a := Of("from_cli", []byte(`{"type":"user","uuid":"1","session_id":"s1","message":{"content":[{"type":"tool_result","content":"ok","tool_use_id":"t1"}]},"tool_use_result":{"answers":{"Q?":"A"}}}`))
	b := Of("from_cli", []byte(`{"type":"user","uuid":"2","session_id":"s2","message":{"content":[{"type":"tool_result","content":"ok","tool_use_id":"t9"}]},"tool_use_result":{"answers":{"Q?":"A"}}}`))
	if d := Compare([]Msg{a}, []Msg{b}); len(d) != 0 {
		t.Errorf("Compare = %v, want no difference", d)
	}
}

func TestCompareFindsKeysValuesAndOrder(t *testing.T) {
	want := []Msg{
		Of("from_cli", []byte(`{"type":"system","subtype":"init","tools":["AskUserQuestion"],"cwd":"/a"}`)),
		Of("from_cli", []byte(`{"type":"user","message":{"content":[{"type":"tool_result","content":"yes"}]}}`)),
		Of("from_cli", []byte(`{"type":"result","subtype":"success","is_error":false}`)),
	}
	got := []Msg{
		Of("from_cli", []byte(`{"type":"system","subtype":"init","tools":[]}`)),
		Of("from_cli", []byte(`{"type":"user","message":{"content":[{"type":"tool_result","content":"no"}]}}`)),
	}
	var all []string
	for _, d := range Compare(want, got) {
		all = append(all, d.String())
	}
	text := strings.Join(all, "\n")
	for _, w := range []string{
		"#1 from_cli system/init: missing keys cwd; tools has AskUserQuestion is \"false\", want \"true\"",
		"#2 from_cli user: content[0].content is \"no\", want \"yes\"",
		"#3: missing from_cli result/success",
	} {
		if !strings.Contains(text, w) {
			t.Errorf("diffs:\n%s\nwant %q", text, w)
		}
	}
}

// TestCompareReportsOneDroppedMessageOnce: the messages after a dropped one
// still pair up.
func TestCompareReportsOneDroppedMessageOnce(t *testing.T) {
	msg := func(typ, text string) Msg {
		return Of("from_cli", []byte(`{"type":"`+typ+`","message":{"content":[{"type":"text","text":"`+text+`"}]}}`))
	}
	want := []Msg{msg("assistant", "a"), msg("user", "b"), msg("assistant", "c"), msg("result", "")}
	got := []Msg{msg("assistant", "a"), msg("assistant", "c"), msg("result", "")}
	d := Compare(want, got)
	if len(d) != 1 || d[0].String() != "#2: missing from_cli user" {
		t.Errorf("Compare = %v, want the one missing user message", d)
	}
	d = Compare(got, want)
	if len(d) != 1 || d[0].String() != "#2: extra from_cli user" {
		t.Errorf("Compare reversed = %v, want the one extra user message", d)
	}
}

// TestDifferenceTextKeepsQuotes: naming the reference side "real" changes
// the report's own words, never a quoted value that holds "want".
func TestDifferenceTextKeepsQuotes(t *testing.T) {
	w := Of("from_cli", []byte(`{"type":"user","message":{"content":[{"type":"tool_result","content":"The user doesn't want to proceed"}]}}`))
	g := Of("from_cli", []byte(`{"type":"user","message":{"content":[{"type":"tool_result","content":"I want it"}]}}`))
	ds := Compare([]Msg{w}, []Msg{g})
	if len(ds) != 1 {
		t.Fatalf("got %d differences, want 1", len(ds))
	}
	got := ds[0].Text("real")
	for _, s := range []string{`"I want it"`, `real "The user doesn't want to proceed"`} {
		if !strings.Contains(got, s) {
			t.Errorf("Text(real) = %s\nwant it to hold %s", got, s)
		}
	}
	if strings.Contains(got, "doesn't real") || strings.Contains(got, "I real") {
		t.Errorf("Text(real) rewrote a quoted value: %s", got)
	}
}
