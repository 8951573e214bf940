package claudecli

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// The launcher stub npm leaves when @anthropic-ai/claude-code's postinstall
// did not run, as it ships in the package.
const stub = `echo "Error: claude native binary not installed." >&2
echo "" >&2
exit 1
`

func writeExe(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestFind(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("shell scripts stand in for claude")
	}
	t.Setenv("XDG_CACHE_HOME", t.TempDir()) // nothing installed
	bin := t.TempDir()
	stubPath := writeExe(t, bin, "stub", stub)
	old := writeExe(t, bin, "claude", "#!/bin/sh\necho '1.0.0 (Claude Code)'\n")
	t.Setenv("PATH", bin)
	ctx := context.Background()

	var warn bytes.Buffer
	if got, err := Find(ctx, old, &warn); err != nil || got != old || warn.Len() != 0 {
		t.Errorf("Find(explicit) = %q, %v, warned %q; want it as given, silently", got, err, warn.String())
	}
	if _, err := Find(ctx, filepath.Join(bin, "nope"), &warn); err == nil || !strings.Contains(err.Error(), "--claude: stat") {
		t.Errorf("Find(missing) = %v", err)
	}
	if _, err := Find(ctx, stubPath, &warn); err == nil || !strings.Contains(err.Error(), "npm launcher stub") || !strings.Contains(err.Error(), "askctl claude install") {
		t.Errorf("Find(stub) = %v, want the stub named and the fix", err)
	}
	warn.Reset()
	if got, err := Find(ctx, "", &warn); err != nil || got != old {
		t.Errorf("Find() = %q, %v; want claude on PATH", got, err)
	}
	if !strings.Contains(warn.String(), "is 1.0.0, not the pinned "+Pinned) {
		t.Errorf("no warning about the version on PATH: %q", warn.String())
	}
	os.Rename(stubPath, old)
	if _, err := Find(ctx, "", &warn); err == nil || !strings.Contains(err.Error(), "npm launcher stub") {
		t.Errorf("Find() with the stub on PATH = %v, want it named", err)
	}
	os.Remove(old)
	if _, err := Find(ctx, "", &warn); !errors.Is(err, ErrNotFound) {
		t.Errorf("Find() with nothing = %v, want ErrNotFound", err)
	}
}

// TestFindPrefersTheInstalled: the pinned CLI in the cache comes before
// claude on PATH, so askctl works the same from any directory.
func TestFindPrefersTheInstalled(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("shell scripts stand in for claude")
	}
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	dir, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	installed, _ := binary(dir)
	os.MkdirAll(filepath.Dir(installed), 0o755)
	writeExe(t, filepath.Dir(installed), filepath.Base(installed), "#!/bin/sh\necho '"+Pinned+" (Claude Code)'\n")
	bin := t.TempDir()
	writeExe(t, bin, "claude", "#!/bin/sh\necho '1.0.0 (Claude Code)'\n")
	t.Setenv("PATH", bin)
	if got, err := Find(context.Background(), "", &bytes.Buffer{}); err != nil || got != installed {
		t.Errorf("Find() = %q, %v; want the installed %q", got, err, installed)
	}
	if !strings.HasPrefix(installed, filepath.Join(cache, "askctl", "claude-code", Pinned)) {
		t.Errorf("installed under %s, want the user's cache", installed)
	}
}

func TestPlatform(t *testing.T) {
	p, err := Platform()
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		if err == nil {
			t.Errorf("Platform() = %q on %s, want an error", p, runtime.GOARCH)
		}
		return
	}
	if err != nil || !strings.HasPrefix(p, map[string]string{"linux": "linux-", "darwin": "darwin-", "windows": "win32-"}[runtime.GOOS]) {
		t.Errorf("Platform() = %q, %v", p, err)
	}
}
