package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/askctl/askctl/surface"
	"github.com/tidwall/gjson"
)

const ciPolicy = `# answers ask-multi, skips deploys
{"name":"no-deploy","match":{"question":"(?i)deploy"},"skip":"CI never deploys"}
{"name":"format","match":{"header":"^Format$"},"answer":"Summary"}
{"name":"sections","match":{"header":"^Sections$"},"answer":["Intro","Outro"]}
{"name":"fallback","first":true,"after":"30s"}
`

func askctlIn(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), append([]string{"askctl"}, args...), func(string) string { return "" }, strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestPolicyCheck(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "ci.policy")
	bad := filepath.Join(dir, "bad.policy")
	os.WriteFile(good, []byte(ciPolicy), 0o600)
	os.WriteFile(bad, []byte("{\"name\":\"x\",\"answer\":\"A\"}\n{\"name\":\"y\",\"frist\":true}\n"), 0o600)

	code, out, errOut := askctlIn(t, "", "policy", "check", good)
	if code != 0 || !strings.Contains(out, good+": ok, 4 rules") || !strings.Contains(out, "fallback   first   30s") {
		t.Errorf("check a good policy: exit %d\n%s%s", code, out, errOut)
	}
	code, _, errOut = askctlIn(t, "", "policy", "check", good, bad)
	if code != exitUsage || !strings.Contains(errOut, bad+":2: frist: unknown field") {
		t.Errorf("check a bad policy: exit %d, %s", code, errOut)
	}
	if code, _, errOut := askctlIn(t, "", "policy", "check", filepath.Join(dir, "nope")); code != exitUsage || !strings.Contains(errOut, "no such file") {
		t.Errorf("a missing file: exit %d, %s", code, errOut)
	}
	shadowed := filepath.Join(dir, "shadowed.policy")
	os.WriteFile(shadowed, []byte("{\"name\":\"all\",\"skip\":\"not in CI\"}\n{\"name\":\"db\",\"match\":{\"header\":\"DB\"},\"answer\":\"SQLite\"}\n"), 0o600)
	if code, out, errOut := askctlIn(t, "", "policy", "check", shadowed); code != 0 || !strings.Contains(errOut, `warning: rule "db" (`+shadowed+`:2) is never reached: rule "all" (`+shadowed+`:1) before it matches every question`) || !strings.Contains(out, "ok, 2 rules") {
		t.Errorf("a shadowed rule: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut := askctlIn(t, "", "policy", "check"); code != exitUsage || !strings.Contains(errOut, "needs a FILE") {
		t.Errorf("no file: exit %d, %s", code, errOut)
	}

	multi := `{"questions":[{"question":"How should I format the output?","header":"Format","options":[{"label":"Summary"},{"label":"Detailed"}]},{"question":"Which sections?","header":"Sections","multiSelect":true,"options":[{"label":"Intro"},{"label":"Outro"}]}]}`
	code, out, errOut = askctlIn(t, multi, "policy", "check", good, "--try", "-")
	if code != 0 || !strings.Contains(out, `answered by rule "format" (`+good+`:3), rule "sections" (`+good+`:4), at once:`) || !strings.Contains(out, "Which sections? = Intro, Outro") {
		t.Errorf("--try: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut := askctlIn(t, "{\"questions\":\n  [1,]}", "policy", "check", good, "--try", "-"); code != exitUsage || !strings.Contains(errOut, "--try -: not JSON: line 2, column 6:") {
		t.Errorf("--try on what is not JSON: exit %d, %s", code, errOut)
	}
	deploy := `{"questions":[{"question":"Deploy now?","header":"Deploy","options":[{"label":"Yes"},{"label":"No"}]}]}`
	code, out, _ = askctlIn(t, deploy, "policy", "check", good, "--try", "-", "--json")
	if code != 0 || gjson.Get(out, "action").String() != "skip" || gjson.Get(out, "reason").String() != "CI never deploys" {
		t.Errorf("--try --json on a deploy: exit %d %s", code, out)
	}
	if code, _, errOut := askctlIn(t, "{}", "policy", "check", good, "--try", "-"); code != exitUsage || !strings.Contains(errOut, "questions") {
		t.Errorf("--try with no questions: exit %d, %s", code, errOut)
	}
}

// TestServePolicy: askctl serve --policy answers ask-multi with nobody
// there; the agent checks the answers; watch names the rule.
func TestServePolicy(t *testing.T) {
	file := filepath.Join(t.TempDir(), "ci.policy")
	os.WriteFile(file, []byte(ciPolicy), 0o600)
	s := serve(t, "--policy", file)
	s.must("session", "start", "--scenario", "ask-multi", "--prompt", "Ask me how to format.")
	if codes := s.exits(1); codes[0] != 0 {
		t.Fatalf("fakeclaude exited %v:\n%s", codes, s.log)
	}
	var sent []string
	for _, r := range s.responses() {
		sent = append(sent, r.Get("updatedInput.answers").Raw)
	}
	if len(sent) != 1 || sent[0] != `{"How should I format the output?":"Summary","Which sections?":"Intro, Outro"}` {
		t.Errorf("the agent received %v", sent)
	}
	// The bridge logs the decision once the answer went out: maybe just
	// after the agent exited.
	logged := `answered by the policy's rule "format" (` + file + `:3)`
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(s.log.String(), logged); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Errorf("the bridge's log does not name the rule:\n%s", s.log)
			break
		}
	}
	by := surface.Event{Type: surface.EventAnswered, QuestionID: "q_1", Answers: map[string]string{"Q": "A"}, By: `rule "format" (ci.policy:3)`}
	if got := describeEvent(by); !strings.Contains(got, `q_1 answered by the policy's rule "format" (ci.policy:3): "Q"="A"`) {
		t.Errorf("watch prints %q", got)
	}
	by.Type, by.Reason = surface.EventSkipped, "CI never deploys"
	if got := describeEvent(by); !strings.Contains(got, `q_1 skipped by the policy's rule "format" (ci.policy:3): CI never deploys`) {
		t.Errorf("watch prints %q", got)
	}

	bad := filepath.Join(t.TempDir(), "bad.policy")
	os.WriteFile(bad, []byte(`{"name":"x","after":"1s"}`), 0o600)
	if code, _, errOut := s.askctl("serve", "--claude", "fakeclaude", "--addr", "127.0.0.1:0", "--policy", bad); code != exitUsage || !strings.Contains(errOut, bad+":1: want exactly one action") {
		t.Errorf("serve with a bad policy: exit %d, %s", code, errOut)
	}
}
