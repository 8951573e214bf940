package harness

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/askctl/askctl/fakeclaude"
	"github.com/askctl/askctl/internal/events"
	"github.com/askctl/askctl/scenarios"
	"github.com/askctl/askctl/transcript"
)

// TestRealShimPassesNonSessionsThrough: an invocation of the CLI that
// starts no session (an install check, --help, doctor, mcp list) goes to
// the real CLI as it is: it asks the harness for nothing (here no harness
// listens) and takes no session's slot; a session still asks.
func TestRealShimPassesNonSessionsThrough(t *testing.T) {
	dir := t.TempDir()
	cli := filepath.Join(dir, "claude")
	if err := os.WriteFile(cli, []byte("#!/bin/sh\necho \"real claude: $*\"\nexit 7\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{fakeclaude.EnvEvents: "unix:" + filepath.Join(dir, "nobody-listens.sock"), EnvRealClaude: cli}
	getenv := func(k string) string { return env[k] }
	for _, args := range [][]string{{"--version"}, {"-v"}, {"--help"}, {"doctor"}, {"mcp", "list"}, {"update"}} {
		var out, errOut bytes.Buffer
		code := RealShim(args, getenv, strings.NewReader(""), &out, &errOut)
		if code != 7 || out.String() != "real claude: "+strings.Join(args, " ")+"\n" {
			t.Errorf("claude %s: exit %d, %q %q; want the real CLI's own (7)", strings.Join(args, " "), code, out.String(), errOut.String())
		}
	}
	// A session (print mode, even with a prompt that reads like a
	// subcommand) needs the harness, which is not there.
	var errOut bytes.Buffer
	if code := RealShim([]string{"-p", "doctor", "--output-format", "stream-json", "--verbose"}, getenv, strings.NewReader(""), &bytes.Buffer{}, &errOut); code != 2 {
		t.Errorf("a session with no harness: exit %d, %s", code, errOut.String())
	}
}

// TestRealShimOutlivesItsBridge: a bridge that dies (a crash row kills it)
// leaves its agent's CLI to end on its own, as the real CLI spawned by the
// bridge itself would: the shim does not die with the bridge (taking the
// CLI with it mid-write), the CLI reads the end of its stdin, withdraws what
// it asked and exits, and the shim reports that end as a note, not as the
// exit of the session's agent (the restarted bridge may run the session in
// another process by then). A bridge that closes the CLI's stdin and reads
// on sees its agent's exit.
func TestRealShimOutlivesItsBridge(t *testing.T) {
	dir := t.TempDir()
	cli := filepath.Join(dir, "claude")
	// A stand-in CLI: it reads its stdin to the end, then withdraws a
	// request and exits 3.
	script := "#!/bin/sh\ncat > /dev/null\necho '{\"type\":\"control_cancel_request\",\"request_id\":\"r1\"}'\nexit 3\n"
	if err := os.WriteFile(cli, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	sc, err := scenarios.Builtin("ask-single")
	if err != nil {
		t.Fatal(err)
	}
	for _, gone := range []bool{true, false} {
		hub, err := events.Listen("unix", filepath.Join(dir, fmt.Sprintf("ev-%v.sock", gone)))
		if err != nil {
			t.Fatal(err)
		}
		hub.SetDirector(func(events.Hello) (events.Assignment, error) {
			return events.Assignment{Name: sc.Name, Scenario: string(sc.Source), SessionID: "0c70b6d9-456e-4d96-8c4d-792edd62d583"}, nil
		})
		var mu sync.Mutex
		var got []transcript.Record
		hub.Subscribe("", transcript.Func(func(r transcript.Record) error {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, r)
			return nil
		}))
		env := map[string]string{fakeclaude.EnvEvents: hub.Addr(), EnvRealClaude: cli, EnvAgentHomes: filepath.Join(dir, "homes")}
		var out io.Writer = &bytes.Buffer{}
		if gone {
			out = brokenPipe{}
		}
		var errOut bytes.Buffer
		code := RealShim([]string{"--input-format", "stream-json", "--output-format", "stream-json", "--verbose"}, func(k string) string { return env[k] }, strings.NewReader(""), out, &errOut)
		if code != 3 {
			t.Errorf("bridge gone %v: the shim exited %d, want the CLI's 3 (%s)", gone, code, errOut.String())
		}
		if err := hub.Close(); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		var exits, notes int
		for _, r := range got {
			if r.Event == transcript.EventExit {
				exits++
			}
			if r.Event == transcript.EventNote && strings.Contains(r.Text, "after its bridge had gone") {
				notes++
			}
		}
		mu.Unlock()
		if gone && (exits != 0 || notes != 1) {
			t.Errorf("bridge gone: %d exit records and %d notes of the CLI's end, want 0 and 1", exits, notes)
		}
		if !gone && (exits != 1 || notes != 0) {
			t.Errorf("bridge reading on: %d exit records and %d notes of the CLI's end, want 1 and 0", exits, notes)
		}
	}
}

// brokenPipe is a bridge's stdout pipe after the bridge died.
type brokenPipe struct{}

func (brokenPipe) Write([]byte) (int, error) { return 0, syscall.EPIPE }

// TestLockHomeWaitsForTheCLIBefore: a resumed session's shim starts its
// CLI once the one before it in the session's HOME has ended, and waits no
// longer than it is told to.
func TestLockHomeWaitsForTheCLIBefore(t *testing.T) {
	home := t.TempDir()
	unlock, _, _ := lockHome(home, time.Second)
	released := make(chan time.Time, 1)
	time.AfterFunc(200*time.Millisecond, func() { released <- time.Now(); unlock() })
	unlock2, _, _ := lockHome(home, time.Minute)
	got := time.Now()
	if at := <-released; got.Before(at) {
		t.Errorf("the second lock was taken %v before the first was released", at.Sub(got))
	}
	// Held past the wait: it goes on without the lock, and says so.
	if _, waited, locked := lockHome(home, 100*time.Millisecond); locked || waited < 100*time.Millisecond {
		t.Errorf("a held lock was passed after %v (locked %v), want the whole wait and no lock", waited, locked)
	}
	unlock2()
	unlock3, waited, locked := lockHome(home, time.Minute)
	defer unlock3()
	if !locked || waited > 30*time.Second {
		t.Errorf("a released lock: locked %v after %v", locked, waited)
	}
}
