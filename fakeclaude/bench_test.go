package fakeclaude_test

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/askctl/askctl/internal/replay"
	"github.com/askctl/askctl/internal/testenv"
	"github.com/askctl/askctl/scenarios"
)

func askMultiPlan(b *testing.B) (*scenarios.Scenario, replay.Plan) {
	sc, err := scenarios.Builtin("ask-multi")
	if err != nil {
		b.Fatal(err)
	}
	plan, err := replay.PlanFor(sc, true)
	if err != nil {
		b.Fatal(err)
	}
	return sc, plan
}

// BenchmarkSessionInProcess: one whole ask-multi session (initialize, prompt,
// system/init, question, answer, tool_result, text, result, EOF) with
// fakeclaude running in this process over pipes.
func BenchmarkSessionInProcess(b *testing.B) {
	sc, plan := askMultiPlan(b)
	for b.Loop() {
		if _, out := play(b, sc, plan, sdkFlags); out.Code != 0 {
			b.Fatalf("exit %d: %v", out.Code, out.Failures)
		}
	}
}

// BenchmarkSessionSubprocess: the same session with fakeclaude spawned as a
// process, as a bridge spawns claude: spawn, init, question, answer, result,
// exit.
func BenchmarkSessionSubprocess(b *testing.B) {
	_, plan := askMultiPlan(b)
	bin := testenv.BuildFakeclaude(b)
	// With and without the session file, side by side.
	for _, file := range []string{"1", "0"} {
		name := map[string]string{"1": "session-file-off", "0": "session-file-on"}[file]
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				cmd := exec.Command(bin, sdkFlags...)
				cmd.Env = append(os.Environ(), "FAKECLAUDE_SCENARIO=ask-multi", "FAKECLAUDE_NO_SESSION_FILE="+file)
				stdin, _ := cmd.StdinPipe()
				stdout, _ := cmd.StdoutPipe()
				if err := cmd.Start(); err != nil {
					b.Fatal(err)
				}
				if _, err := replay.Play(context.Background(), plan, stdin, stdout, replay.PlayOptions{Timeout: 10 * time.Second}); err != nil {
					b.Fatal(err)
				}
				if err := cmd.Wait(); err != nil {
					b.Fatalf("fakeclaude: %v", err)
				}
			}
		})
	}
}

// BenchmarkSessionFile: one whole ask-multi session in process, with the
// session file written (on, the default) and not (--no-session-persistence),
// side by side: what keeping the file costs a session.
func BenchmarkSessionFile(b *testing.B) {
	sc, plan := askMultiPlan(b)
	for _, c := range []struct {
		name string
		args []string
	}{{"off", append(append([]string(nil), sdkFlags...), "--no-session-persistence")}, {"on", sdkFlags}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, out := play(b, sc, plan, c.args); out.Code != 0 {
					b.Fatalf("exit %d: %v", out.Code, out.Failures)
				}
			}
		})
	}
}
