package harness

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/askctl/askctl/fakeclaude"
)

// TestShimPrefersFakeclaude: the claude shim runs the fakeclaude next to
// askctl (it starts faster) with no run-as role, and askctl as fakeclaude
// when there is none; either gets the shim's arguments as they were, and
// the harness's environment, whatever characters they hold.
func TestShimPrefersFakeclaude(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "it's here") // a quote and a space, for the shim's quoting
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// Each stand-in prints who it is, its environment and its arguments.
	stub := func(name string) string {
		p := filepath.Join(dir, name)
		script := "#!/bin/sh\necho I=" + name + "\nenv\nfor a in \"$@\"; do echo \"ARG=$a\"; done\n"
		if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	askctl := stub("askctl")
	shim := filepath.Join(dir, "claude")
	run := func() map[string][]string {
		t.Helper()
		if err := writeShim(shim, Options{Askctl: askctl}, "unix:/tmp/ev 'x'.sock", dir); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(shim, "-p", "it's a \"prompt\" with $HOME")
		cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("the shim: %v", err)
		}
		got := map[string][]string{}
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			k, v, _ := strings.Cut(l, "=")
			got[k] = append(got[k], v)
		}
		return got
	}
	got := run()
	if who := got["I"]; len(who) != 1 || who[0] != "askctl" {
		t.Errorf("no fakeclaude next to askctl: ran %q, want askctl", who)
	}
	if role := got[fakeclaude.EnvRunAs]; len(role) != 1 || role[0] != fakeclaude.RoleFake {
		t.Errorf("askctl as fakeclaude: %s=%q, want %q", fakeclaude.EnvRunAs, role, fakeclaude.RoleFake)
	}
	check := func(got map[string][]string) {
		t.Helper()
		if args := got["ARG"]; len(args) != 2 || args[0] != "-p" || args[1] != "it's a \"prompt\" with $HOME" {
			t.Errorf("arguments %q, want them as the bridge gave them", args)
		}
		if ev := got[fakeclaude.EnvEvents]; len(ev) != 1 || ev[0] != "unix:/tmp/ev 'x'.sock" {
			t.Errorf("%s=%q, want the harness's", fakeclaude.EnvEvents, ev)
		}
		if cd := got["CLAUDE_CONFIG_DIR"]; len(cd) != 1 || cd[0] != filepath.Join(dir, "claude-config") {
			t.Errorf("CLAUDE_CONFIG_DIR=%q, want the run's", cd)
		}
	}
	check(got)

	stub("fakeclaude")
	got = run()
	if who := got["I"]; len(who) != 1 || who[0] != "fakeclaude" {
		t.Errorf("fakeclaude next to askctl: ran %q, want fakeclaude", who)
	}
	if role, ok := got[fakeclaude.EnvRunAs]; ok {
		t.Errorf("fakeclaude itself: %s=%q, want none", fakeclaude.EnvRunAs, role)
	}
	check(got)
}
