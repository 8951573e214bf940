package harness

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/askctl/askctl/fakeclaude"
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
