package harness

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/askctl/askctl/surface"
)

// TestStartedProcessesDieWithTheHarness: a process the harness started (here
// an exec surface; bridges start the same way) is killed when the harness
// process dies, even by SIGKILL: a run ended by a deadline leaves nothing
// running, though each child has a process group of its own.
func TestStartedProcessesDieWithTheHarness(t *testing.T) {
	if pidFile := os.Getenv("ASKCTL_TEST_ORPHAN"); pidFile != "" {
		// The harness: start a surface that writes its pid, then wait to be killed.
		s, err := surface.New(surface.Spec{Kind: "exec", Command: "sh", Args: []string{"-c", "echo $$ > " + pidFile + "; exec sleep 60"}})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		time.Sleep(60 * time.Second)
		return
	}
	pidFile := filepath.Join(t.TempDir(), "pid")
	cmd := exec.Command(os.Args[0], "-test.run=^TestStartedProcessesDieWithTheHarness$")
	cmd.Env = append(os.Environ(), "ASKCTL_TEST_ORPHAN="+pidFile)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var pid int
	for pid == 0 {
		if ctx.Err() != nil {
			t.Fatal("the surface never wrote its pid")
		}
		b, _ := os.ReadFile(pidFile)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	for syscall.Kill(pid, 0) == nil {
		if ctx.Err() != nil {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("process %d, started by a harness that was killed, still runs", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
