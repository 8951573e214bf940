package learn

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/askctl/askctl/claudecli"
	"github.com/askctl/askctl/transcript"
)

func recs(lines ...string) []transcript.Record {
	var out []transcript.Record
	for _, l := range lines {
		out = append(out, transcript.Record{Dir: transcript.FromCLI, Msg: []byte(l)})
	}
	return out
}

// TestDerive: keys the release adds (a constant, a fresh uuid, a time in
// milliseconds) and drops are learned per kind; a key on some messages
// of a kind and not others is reported, not written.
func TestDerive(t *testing.T) {
	now := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	ms := func(d int64) string { return strconv.FormatInt(now.UnixMilli()+d, 10) }
	s1 := Session{Scenario: "a",
		Real: recs(`{"type":"system","subtype":"init","uuid":"x","sandbox":false,"at":`+ms(1)+`,"id":"0e3f1c52-8a1b-4c1d-9e2f-0123456789ab"}`,
			`{"type":"user","message":{"content":[{"type":"tool_result"}]},"meta":[{"id":"t","kind":"k"}],"sometimes":1}`),
		Fake: recs(`{"type":"system","subtype":"init","uuid":"x","served":true}`,
			`{"type":"user","message":{"content":[{"type":"tool_result"}]},"meta":[{"id":"t"}]}`)}
	s2 := Session{Scenario: "b",
		Real: recs(`{"type":"system","subtype":"init","uuid":"y","sandbox":false,"at":`+ms(500)+`,"id":"1e3f1c52-8a1b-4c1d-9e2f-0123456789ab"}`,
			`{"type":"user","message":{"content":[{"type":"tool_result"}]},"meta":[{"id":"t","kind":"k"}]}`),
		Fake: recs(`{"type":"system","subtype":"init","uuid":"y","served":true}`,
			`{"type":"user","message":{"content":[{"type":"tool_result"}]},"meta":[{"id":"t"}]}`)}
	// An empty array holds no element to hold the key: no evidence either way.
	s3 := Session{Scenario: "c",
		Real: recs(`{"type":"user","message":{"content":[{"type":"tool_result"}]},"meta":[]}`),
		Fake: recs(`{"type":"user","message":{"content":[{"type":"tool_result"}]},"meta":[]}`)}
	res := Derive("2.1.999", []Session{s1, s2, s3}, now)
	init := res.Release.For("system/init")
	if init == nil {
		t.Fatalf("nothing learned for system/init: %+v", res)
	}
	if len(init.Drop) != 1 || init.Drop[0] != "served" {
		t.Errorf("drop = %v, want [served]", init.Drop)
	}
	got := map[string]claudecli.Addition{}
	for _, a := range init.Add {
		got[a.Key] = a
	}
	if a := got["sandbox"]; string(a.Value) != "false" || a.After != "uuid" {
		t.Errorf("sandbox: %+v, want the constant false after uuid", a)
	}
	if a := got["at"]; a.Gen != claudecli.GenNowMillis {
		t.Errorf("at: %+v, want a fresh time in milliseconds", a)
	}
	if a := got["id"]; a.Gen != claudecli.GenUUID {
		t.Errorf("id: %+v, want a fresh uuid", a)
	}
	user := res.Release.For("user/tool_result")
	if user == nil || len(user.Add) != 1 || user.Add[0].Key != "meta[].kind" || string(user.Add[0].Value) != `"k"` || user.Add[0].After != "id" {
		t.Errorf("user/tool_result: %+v, want meta[].kind added after id", user)
	}
	if len(res.Unexpressed) != 1 || !strings.Contains(res.Unexpressed[0], "key sometimes is on 1 of 3") || !strings.Contains(res.Unexpressed[0], "a message 2") {
		t.Errorf("unexpressed = %q, want the key on one message of two named", res.Unexpressed)
	}
}

func TestSummaryAndNearest(t *testing.T) {
	a := &claudecli.Release{Version: "2.1.331", Messages: map[string]*claudecli.Patch{"system/init": {Add: []claudecli.Addition{{Key: "sandbox", Value: []byte("false")}}}}}
	b := &claudecli.Release{Version: "2.1.325", Messages: map[string]*claudecli.Patch{"system/init": {Drop: []string{"served"}}}}
	got := strings.Join(Summary(a, b), "\n")
	for _, s := range []string{"system/init sandbox: 2.1.331 writes (false); 2.1.325 as the base", "system/init served: 2.1.331 as the base; 2.1.325 does not write", "behaviour stdin-close-cancels"} {
		if !strings.Contains(got, s) {
			t.Errorf("summary lacks %q:\n%s", s, got)
		}
	}
	if n := Nearest("2.1.327", []string{"2.1.318", "2.1.326", "2.1.328", "2.1.330"}); n != "2.1.326" {
		t.Errorf("Nearest = %s, want the older of two as close", n)
	}
}
