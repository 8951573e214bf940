package fakeclaude_test

import (
	"context"
	"fmt"
	"github.com/askctl/askctl/claudecli"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/askctl/askctl/internal/agent"
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
// exit. Beside each session, in the same loop, the floor: a hello-world Go
// program spawned and waited for. It reports each one's CPU (user and
// system, the process's own rusage) and page faults, and the session's CPU
// as a multiple of the floor's (x-floor), pair by pair so that the machine's
// drift moves both.
func BenchmarkSessionSubprocess(b *testing.B) {
	_, plan := askMultiPlan(b)
	bin := testenv.BuildFakeclaude(b)
	hello := buildHello(b)
	// With and without the session file, side by side.
	for _, file := range []string{"1", "0"} {
		name := map[string]string{"1": "session-file-off", "0": "session-file-on"}[file]
		b.Run(name, func(b *testing.B) {
			var session, floor usage
			for b.Loop() {
				h := exec.Command(hello)
				if out, err := h.Output(); err != nil || string(out) != "hello\n" {
					b.Fatalf("hello: %q %v", out, err)
				}
				floor.add(h.ProcessState)
				session.add(playSpawned(b, bin, plan, "FAKECLAUDE_SCENARIO=ask-multi", "FAKECLAUDE_NO_SESSION_FILE="+file))
			}
			n := float64(b.N)
			b.ReportMetric(float64(session.cpu)/n/1e6, "cpu-ms/op")
			b.ReportMetric(float64(session.faults)/n, "faults/op")
			b.ReportMetric(float64(floor.cpu)/n/1e6, "floor-cpu-ms/op")
			b.ReportMetric(float64(session.cpu)/float64(floor.cpu), "x-floor")
		})
	}
}

// playSpawned spawns fakeclaude bin with the SDK's flags and env added,
// plays plan as the SDK side, and returns the exited process's state.
func playSpawned(b *testing.B, bin string, plan replay.Plan, env ...string) *os.ProcessState {
	b.Helper()
	cmd := exec.Command(bin, sdkFlags...)
	cmd.Env = append(os.Environ(), env...)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	if _, err := replay.Play(context.Background(), plan, stdin, stdout, replay.PlayOptions{Timeout: 10 * time.Second}); err != nil {
		b.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		b.Fatalf("fakeclaude (%v): %v", env, err)
	}
	return cmd.ProcessState
}

// usage sums processes' CPU time (user and system) and page faults.
type usage struct {
	cpu    time.Duration
	faults int64
}

func (u *usage) add(ps *os.ProcessState) {
	u.cpu += ps.UserTime() + ps.SystemTime()
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		u.faults += ru.Minflt + ru.Majflt
	}
}

// buildHello builds the floor: the smallest Go program that starts, writes
// a line and exits.
func buildHello(b *testing.B) string {
	b.Helper()
	dir := b.TempDir()
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte("package main\n\nimport \"os\"\n\nfunc main() { os.Stdout.WriteString(\"hello\\n\") }\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	bin := filepath.Join(dir, "hello")
	cmd := exec.Command("go", "build", "-o", bin, src)
	cmd.Env = append(os.Environ(), "GO111MODULE=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("go build hello: %v\n%s", err, out)
	}
	return bin
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

// BenchmarkSessionVsRealCLI: the ask-multi session, played the same way
// against fakeclaude and against the real claude CLI (on askctl's fake model
// API), one after the other in each iteration, through the same launcher a
// bridge's test uses. It reports each one's wall time per session and how
// many times faster fakeclaude's is (x-faster), pair by pair. It needs the
// real CLI (make e2e's tier: ASKCTL_CLAUDE, or askctl claude install).
func BenchmarkSessionVsRealCLI(b *testing.B) {
	sc, plan := askMultiPlan(b)
	realCLI := agent.Real{Claude: testenv.RealClaude(b)}
	fake := agent.Fake{Exe: testenv.BuildFakeclaude(b)}
	session := func(ag agent.Agent) time.Duration {
		start := time.Now()
		p, err := ag.Start(context.Background(), sc, agent.Options{Dir: b.TempDir()})
		if err != nil {
			b.Fatalf("%s: %v", ag.Name(), err)
		}
		if _, err := replay.Play(context.Background(), plan, p.Stdin, p.Stdout, replay.PlayOptions{Timeout: 60 * time.Second}); err != nil {
			p.Kill()
			b.Fatalf("%s: %v\n%s", ag.Name(), err, p.Stderr())
		}
		if code, err := p.Wait(); code != 0 || err != nil {
			b.Fatalf("%s: exit %d %v\n%s", ag.Name(), code, err, p.Stderr())
		}
		return time.Since(start)
	}
	var f, r time.Duration
	for b.Loop() {
		f += session(fake)
		r += session(realCLI)
	}
	b.ReportMetric(float64(f)/float64(b.N)/1e6, "fake-ms/op")
	b.ReportMetric(float64(r)/float64(b.N)/1e6, "real-ms/op")
	b.ReportMetric(float64(r)/float64(f), "x-faster")
}

// BenchmarkAgentsPerSecond: how many whole sessions fakeclaude alone plays
// per second on this machine, spawned ASKCTL_BENCH_CONCURRENCY (default 16)
// at a time as a bridge spawns them, driven over pipes with no bridge in
// between; and, in the same run, how many hello-world Go programs are
// spawned and waited for per second the same way: the floor of any
// bridge's sessions/s here. Run it with -benchtime=1x; ASKCTL_BENCH_SESSIONS
// (default 400) sessions each.
func BenchmarkAgentsPerSecond(b *testing.B) {
	_, plan := askMultiPlan(b)
	bin := testenv.BuildFakeclaude(b)
	hello := buildHello(b)
	n := envInt(b, "ASKCTL_BENCH_SESSIONS", 400)
	conc := envInt(b, "ASKCTL_BENCH_CONCURRENCY", 16)
	run := func(one func() error) (perSec float64, cpuMs float64) {
		var ru0, ru1 syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru0)
		start := time.Now()
		sem := make(chan struct{}, conc)
		errs := make(chan error, n)
		for range n {
			sem <- struct{}{}
			go func() {
				defer func() { <-sem }()
				errs <- one()
			}()
		}
		for range n {
			if err := <-errs; err != nil {
				b.Fatal(err)
			}
		}
		elapsed := time.Since(start)
		_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru1)
		cpu := time.Duration(ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano())
		return float64(n) / elapsed.Seconds(), float64(cpu) / float64(n) / 1e6
	}
	for b.Loop() {
		floor, floorCPU := run(func() error {
			out, err := exec.Command(hello).Output()
			if err == nil && string(out) != "hello\n" {
				err = fmt.Errorf("hello: %q", out)
			}
			return err
		})
		agents, agentCPU := run(func() error {
			cmd := exec.Command(bin, sdkFlags...)
			cmd.Env = append(os.Environ(), "FAKECLAUDE_SCENARIO=ask-multi")
			stdin, _ := cmd.StdinPipe()
			stdout, _ := cmd.StdoutPipe()
			if err := cmd.Start(); err != nil {
				return err
			}
			if _, err := replay.Play(context.Background(), plan, stdin, stdout, replay.PlayOptions{Timeout: time.Minute}); err != nil {
				cmd.Process.Kill()
				cmd.Wait()
				return err
			}
			return cmd.Wait()
		})
		b.ReportMetric(floor, "floor-spawns/s")
		b.ReportMetric(floorCPU, "floor-cpu-ms/spawn")
		b.ReportMetric(agents, "agent-sessions/s")
		b.ReportMetric(agentCPU, "agent-cpu-ms/session")
	}
}

func envInt(b *testing.B, name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// BenchmarkSessionByRelease: the session's CPU when fakeclaude plays the
// base release (no patch), the newest and the oldest learned (each
// message passes through its release's patch), side by side in one loop.
// With the session file on, where the patches of its rows apply too.
func BenchmarkSessionByRelease(b *testing.B) {
	_, plan := askMultiPlan(b)
	bin := testenv.BuildFakeclaude(b)
	releases := []string{claudecli.Base, claudecli.Newest(), claudecli.Oldest()}
	cpu := make([]usage, len(releases))
	for b.Loop() {
		for i, v := range releases {
			cpu[i].add(playSpawned(b, bin, plan, "FAKECLAUDE_SCENARIO=ask-multi", "CLAUDE_CONFIG_DIR="+b.TempDir(), claudecli.EnvCLIVersion+"="+v))
		}
	}
	n := float64(b.N)
	b.ReportMetric(float64(cpu[0].cpu)/n/1e6, "base-cpu-ms/op")
	b.ReportMetric(float64(cpu[1].cpu)/n/1e6, "newest-cpu-ms/op")
	b.ReportMetric(float64(cpu[2].cpu)/n/1e6, "oldest-cpu-ms/op")
	b.ReportMetric(float64(cpu[1].cpu)/float64(cpu[0].cpu), "newest/base")
}
