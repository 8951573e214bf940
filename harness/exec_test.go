package harness

import (
	"context"
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
		{"garbage", `read line; echo 'not json'`, "exec surface stdout line 1"},
		{"error reply", `read line; echo '{"id":1,"error":"no such bridge","code":"unreachable"}'`, "rejected (unreachable): no such bridge"},
		{"no session", `read line; echo '{"id":1}'`, "names no session"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := NewSurface(SurfaceSpec{Kind: "exec", Command: "sh", Args: []string{"-c", tc.script}})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			start := time.Now()
			_, err = s.Start(ctx, "hello")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
			if time.Since(start) > 3*time.Second {
				t.Errorf("took %v", time.Since(start))
			}
		})
	}
}
