package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBench runs askctl bench against the embedded reference bridge, with
// this test binary as askctl and as fakeclaude: every session is answered
// right, the figures and the plot cover every question, and a scenario whose
// person answers wrongly makes it fail with the agent's own verdict.
func TestBench(t *testing.T) {
	t.Setenv(envTestAsAskctl, "1") // the bridge the profile starts is this binary
	dir := t.TempDir()
	bench := func(args ...string) (int, string, string) {
		return askctlIn(t, "", append([]string{"bench"}, args...)...)
	}
	plot := filepath.Join(dir, "latency.svg")
	code, out, errOut := bench("--sessions", "6", "--concurrency", "3", "--scenario", "ask-multi", "--json", "--plot", plot)
	var rep struct {
		Sessions  int            `json:"sessions"`
		Outcomes  map[string]int `json:"outcomes"`
		ToSurface Percentiles    `json:"question_to_surface"`
		ToAgent   Percentiles    `json:"answer_to_agent"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 {
		t.Fatalf("bench: exit %d, %v\n%s%s", code, err, out, errOut)
	}
	if rep.Sessions != 6 || rep.Outcomes["ok"] != 6 || rep.ToSurface.N != 6 || rep.ToAgent.N != 6 || rep.ToSurface.P50 <= 0 || rep.ToSurface.Max < rep.ToSurface.P99 {
		t.Errorf("bench report %+v", rep)
	}
	svg, err := os.ReadFile(plot)
	if err != nil || !bytes.HasPrefix(svg, []byte("<svg")) || bytes.Count(svg, []byte(`<circle cx=`)) != 12+2 {
		t.Errorf("the plot has %d points, want 12 and 2 in the legend (%v)", bytes.Count(svg, []byte(`<circle cx=`)), err)
	}
	if !strings.Contains(errOut, "100%: 6 sessions") {
		t.Errorf("no progress on stderr:\n%s", errOut)
	}

	wrong := filepath.Join(dir, "wrong.txtar")
	os.WriteFile(wrong, []byte(wrongScenario), 0o644)
	code, out, _ = bench("--sessions", "2", "--scenario", wrong)
	if code != exitMismatch || !strings.Contains(out, "0 ok, 0 errors, 2 wrong, 0 lost") || !strings.Contains(out, "b00001 wrong:") {
		t.Errorf("bench with wrong answers: exit %d\n%s", code, out)
	}

	for _, args := range [][]string{{"--sessions", "5", "--duration", "1s"}, {"--concurrency", "0"}, {"--scenario", "mcp-ask-single"}, {"--scenario", "cancel-pending"}} {
		if code, _, errOut := bench(args...); code != exitUsage {
			t.Errorf("bench %v: exit %d, %s", args, code, errOut)
		}
	}
}
