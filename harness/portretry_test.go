package harness

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/askctl/askctl/profile"
)

// TestHelperBridge is not a test: it is the bridge TestBridgeStartedAgainOnATakenPort
// starts (this test binary again), listening on $PORT until killed.
func TestHelperBridge(t *testing.T) {
	if os.Getenv("HARNESS_HELPER_BRIDGE") == "" {
		t.Skip("the helper bridge of TestBridgeStartedAgainOnATakenPort")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:"+os.Getenv("PORT"))
	if err != nil {
		os.Exit(3)
	}
	defer ln.Close()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		c.Close()
	}
}

// TestBridgeStartedAgainOnATakenPort: a bridge that exits at once saying
// its address is in use (another process bound the port picked for it
// first) is started again on another port; one that exits saying anything
// else is not.
func TestBridgeStartedAgainOnATakenPort(t *testing.T) {
	for _, c := range []struct {
		said  string
		start bool
	}{{"listen tcp 127.0.0.1:1: bind: address already in use", true}, {"no such table: questions", false}} {
		t.Run(c.said, func(t *testing.T) {
			work := t.TempDir()
			// Says c.said and exits the first time, then serves.
			script := `if [ ! -e "$WORK/once" ]; then : > "$WORK/once"; echo "$SAID" >&2; exit 3; fi; exec "$0" -test.run='^TestHelperBridge$'`
			raw, _ := json.Marshal(map[string]any{"name": "helper",
				"start":        map[string]any{"command": "sh", "args": []string{"-c", script, os.Args[0]}, "env": map[string]string{"HARNESS_HELPER_BRIDGE": "1", "PORT": "${PORT}", "WORK": work, "SAID": c.said}},
				"ready":        map[string]any{"tcp": "127.0.0.1:${PORT}"},
				"claude":       "env:NOTHING",
				"surface":      map[string]any{"kind": "http", "url": "http://127.0.0.1:${PORT}"},
				"capabilities": map[string]any{"sdk": true}})
			p, err := profile.Parse(filepath.Join(work, "helper.json"), raw)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			b, err := StartBridge(ctx, p, Options{Work: filepath.Join(work, "run")})
			if c.start {
				if err != nil {
					t.Fatalf("not started again on another port: %v", err)
				}
				b.Close()
				return
			}
			if err == nil {
				b.Close()
				t.Fatal("started again, though it did not say its port was taken")
			}
			if !strings.Contains(err.Error(), "exited") {
				t.Errorf("err = %v, want the bridge's exit", err)
			}
		})
	}
}
