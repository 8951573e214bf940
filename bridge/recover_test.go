//go:build !mutation

package bridge

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/askctl/askctl/bridgeapi"
	"github.com/askctl/askctl/claudecli"
)

// TestUnansweredReadsTheAgentsShutdown: a question the agent asked as its
// bridge died is found in its session file whether the agent wrote nothing
// more, or the tool result it writes when its stdin closes mid-question
// (withdrawn at shutdown, or failed in older releases); a real reply ends
// it.
func TestUnansweredReadsTheAgentsShutdown(t *testing.T) {
	const ask = `{"type":"assistant","message":{"content":[{"type":"tool_use","id":"toolu_1","name":"AskUserQuestion","input":{"questions":[{"question":"Which?","header":"H","options":[{"label":"A","description":""},{"label":"B","description":""}],"multiSelect":false}]}}]}}`
	result := func(extra string) string {
		return `{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"x","is_error":true}]}` + extra + `}`
	}
	for _, tc := range []struct {
		name, rows, want string
	}{
		{"nothing after the call", ask, "toolu_1"},
		{"a call dated", strings.Replace(ask, `{"type":"assistant",`, `{"type":"assistant","timestamp":"2026-11-27T20:40:01.123Z",`, 1), "toolu_1"},
		{"a call dated otherwise", strings.Replace(ask, `{"type":"assistant",`, `{"type":"assistant","timestamp":"yesterday",`, 1), "toolu_1"},
		{"withdrawn at shutdown", ask + "\n" + result(`,"interruptedByShutdown":true`), "toolu_1"},
		{"failed unanswered", ask + "\n" + result(`,"toolDenialUnanswered":true`), "toolu_1"},
		{"answered", ask + "\n" + `{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"A"}]}}`, ""},
		{"declined", ask + "\n" + result(""), ""},
		{"no call", result(""), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conf := t.TempDir()
			b := &Bridge{cfg: Config{Dir: t.TempDir(), Env: []string{claudecli.EnvConfigDir + "=" + conf}}}
			const id = "11111111-2222-3333-4444-555555555555"
			file := claudecli.SessionFile(conf, b.agentCwd(), id)
			if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file, []byte(tc.rows+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			got, _, at, err := b.unanswered(&bridgeapi.Session{ClaudeSessionID: id})
			if err != nil || got != tc.want {
				t.Errorf("unanswered = %q, %v; want %q", got, err, tc.want)
			}
			// The call's row dates the ask, where its timestamp is the CLI's.
			if wantAt := strings.Contains(tc.rows, `"timestamp":"2026`) && got != ""; wantAt != !at.IsZero() {
				t.Errorf("asked at %v; want it dated: %v", at, wantAt)
			}
		})
	}
}
