package surface

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestExecSurfaceFailures: an exec surface that dies, writes garbage or
// never replies gives an error that says so (with its stderr), never a
// hang.
func TestExecSurfaceFailures(t *testing.T) {
	for _, tc := range []struct{ name, script, want string }{
		{"dies", `echo "no token file" >&2; exit 3`, "no token file"},
		// A report shows a reason's first line: the stderr is on it.
		{"dies saying why on stderr", `echo "starting" >&2; echo "" >&2; echo "cannot reach the bot API: 401" >&2; exit 1`, "its stderr ends: starting | cannot reach the bot API: 401"},
		{"garbage", `read line; echo 'not json'`, "exec surface stdout line 1"},
		{"error reply", `read line; echo '{"id":1,"error":"no such bridge","code":"unreachable"}'`, "rejected (unreachable): no such bridge"},
		{"no session", `read line; echo '{"id":1}'`, "names no session"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(Spec{Kind: "exec", Command: "sh", Args: []string{"-c", tc.script}})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			start := time.Now()
			_, err = s.Start(ctx, "hello")
			if err == nil || !strings.Contains(strings.SplitN(err.Error(), "\n", 2)[0], tc.want) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
			if time.Since(start) > 3*time.Second {
				t.Errorf("took %v", time.Since(start))
			}
		})
	}
}

// TestExecSurfaceLimits: the first reply (the adapter starting) and a
// session start wait limits.start; other operations, once the adapter is
// up, wait limits.op; each message names the limit that ran out.
func TestExecSurfaceLimits(t *testing.T) {
	// Replies to its first request (open) at once; never to the next ones.
	script := `read line; echo '{"id":1}'; while read line; do :; done`
	spec := Spec{Kind: "exec", Command: "sh", Args: []string{"-c", script},
		Limits: Limits{Start: Duration(600 * time.Millisecond), Op: Duration(200 * time.Millisecond)}}
	s, err := New(spec)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	c, err := s.Open(ctx, "s1", func(Event) {})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Pending(ctx); err == nil || !strings.Contains(err.Error(), "within 200ms (the profile's limits.op)") {
		t.Errorf("an operation: %v, want it bounded by limits.op", err)
	}
	if _, err := s.Start(ctx, "hello"); err == nil || !strings.Contains(err.Error(), "within 600ms (the profile's limits.start)") {
		t.Errorf("a session start: %v, want it bounded by limits.start", err)
	}
}

// TestExecSurfaceToldItsLimits: the adapter's environment has the slow
// factor and the limits it is held to, scaled.
func TestExecSurfaceToldItsLimits(t *testing.T) {
	script := `read line; echo "{\"id\":1,\"session\":\"$ASKCTL_SLOW $ASKCTL_LIMIT_OP $ASKCTL_LIMIT_START $ASKCTL_LIMIT_RECONNECT$ASKCTL_SHARED_LINK\"}"`
	s, err := New(Spec{Kind: "exec", Command: "sh", Args: []string{"-c", script}, Slow: 2, Limits: Limits{Op: Duration(3 * time.Second)}, SharedLink: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got, err := s.Start(ctx, "hello")
	if err != nil || got != "2 6s 30s 20s1" {
		t.Errorf("the adapter was told %q (%v), want the slow factor 2, op 6s, start 30s, reconnect 20s, a shared link (1)", got, err)
	}
}

// TestExecPermitProbe: an exec adapter with no permit operation says so
// when asked first (probe), and Permit is unsupported at once, before any
// wait for a prompt; an adapter that knows nothing of probes (its bridge
// refuses a permit with no prompt) is taken as having it.
func TestExecPermitProbe(t *testing.T) {
	for _, tc := range []struct {
		name, reply string
		unsupported bool
	}{
		{"lacks it", `{"id":2,"unsupported":true,"error":"this chat cannot answer permission prompts"}`, true},
		{"knows no probes", `{"id":2,"error":"no such prompt","code":"not_found"}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// It opens the connection, then answers the probe.
			script := `read line; echo '{"id":1}'; read line; case "$line" in *'"probe":true'*) echo '` + tc.reply + `';; esac; while read line; do :; done`
			s, err := New(Spec{Kind: "exec", Command: "sh", Args: []string{"-c", script}})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			c, err := s.Open(ctx, "s1", func(Event) {})
			if err != nil {
				t.Fatal(err)
			}
			err = c.(Prober).Probe(ctx, "permit")
			var un *Unsupported
			if got := errors.As(err, &un); got != tc.unsupported || ctx.Err() != nil {
				t.Errorf("probe = %v, want unsupported %v", err, tc.unsupported)
			}
		})
	}
}

// TestExecSurfaceLog: with Spec.Log, the adapter's requests, replies and
// stderr are kept in the file (askctl conformance --keep's surface.log).
func TestExecSurfaceLog(t *testing.T) {
	log := filepath.Join(t.TempDir(), "surface.log")
	script := `read line; echo "adapter up" >&2; echo '{"id":1,"session":"s_1"}'; while read line; do :; done`
	s, err := New(Spec{Kind: "exec", Command: "sh", Args: []string{"-c", script}, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := s.Start(ctx, "hello"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{` > {"id":1,`, `"prompt":"hello"`, ` < {"id":1,"session":"s_1"}`, ` stderr: adapter up`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("the log lacks %q:\n%s", want, data)
		}
	}
}
