package harness

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/askctl/askctl/fakeclaude"
)

// TestShimPrefersFakeclaude: the claude shim runs the fakeclaude next to
// askctl (it starts faster) with no run-as role, and askctl as fakeclaude
// when there is none.
func TestShimPrefersFakeclaude(t *testing.T) {
	dir := t.TempDir()
	askctl := filepath.Join(dir, "askctl")
	for _, p := range []string{askctl} {
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	shim := filepath.Join(dir, "claude")
	read := func() string {
		t.Helper()
		if err := writeShim(shim, Options{Askctl: askctl}, "events.sock", dir); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(shim)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if s := read(); !strings.Contains(s, fakeclaude.EnvRunAs+"="+fakeclaude.RoleFake) || !strings.Contains(s, "'"+askctl+"' \"$@\"") {
		t.Errorf("no fakeclaude next to askctl: want askctl as fakeclaude, got\n%s", s)
	}
	fc := filepath.Join(dir, "fakeclaude")
	if err := os.WriteFile(fc, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if s := read(); strings.Contains(s, fakeclaude.EnvRunAs) || !strings.Contains(s, "'"+fc+"' \"$@\"") {
		t.Errorf("fakeclaude next to askctl: want it run, with no role, got\n%s", s)
	}
}
