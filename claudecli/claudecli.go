// This file finds and installs the real CLI: the pinned release
// (protocol.CLIVersion), installed once per user into the user's cache by
// `askctl claude install`, as browser testing tools install their
// browsers, so that `askctl replay --agent real` and `askctl fidelity` work
// from any directory. The CLI ships on npm as a launcher package
// (@anthropic-ai/claude-code) whose postinstall script puts a native binary
// in place, taken from a package per platform
// (@anthropic-ai/claude-code-linux-x64, …). askctl installs only the
// platform package, with scripts off, and runs its binary directly.

package claudecli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// Pinned is the release askctl installs and compares against by default:
// the newest learned release (see Releases).
var Pinned = Newest()

// EnvClaude names the real CLI to use, like --claude.
const EnvClaude = "ASKCTL_CLAUDE"

// Platform is the npm platform suffix of this machine: linux-x64,
// linux-arm64-musl, darwin-arm64, win32-x64, …
func Platform() (string, error) {
	goos := map[string]string{"linux": "linux", "darwin": "darwin", "windows": "win32"}[runtime.GOOS]
	arch := map[string]string{"amd64": "x64", "arm64": "arm64"}[runtime.GOARCH]
	if goos == "" || arch == "" {
		return "", fmt.Errorf("claude %s is not published for %s/%s", Pinned, runtime.GOOS, runtime.GOARCH)
	}
	p := goos + "-" + arch
	if goos == "linux" && isMusl() {
		p += "-musl"
	}
	return p, nil
}

func isMusl() bool {
	m, _ := filepath.Glob("/lib/ld-musl-*.so.1")
	return len(m) > 0
}

// Package is the npm package holding the native binary for this platform.
func Package() (string, error) {
	p, err := Platform()
	if err != nil {
		return "", err
	}
	return "@anthropic-ai/claude-code-" + p, nil
}

// Dir is where Install puts the pinned CLI: the user's cache directory
// (XDG_CACHE_HOME, ~/.cache, ~/Library/Caches), under askctl.
func Dir() (string, error) { return DirOf(Pinned) }

// DirOf is where Install puts a release.
func DirOf(version string) (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory to install claude into: %w", err)
	}
	p, err := Platform()
	if err != nil {
		return "", err
	}
	return filepath.Join(cache, "askctl", "claude-code", version, p), nil
}

// binary is the native executable inside an npm prefix.
func binary(prefix string) (string, error) {
	pkg, err := Package()
	if err != nil {
		return "", err
	}
	name := "claude"
	if runtime.GOOS == "windows" {
		name = "claude.exe"
	}
	return filepath.Join(prefix, "node_modules", filepath.FromSlash(pkg), name), nil
}

// Installed returns the installed pinned CLI, if Install has run.
func Installed() (string, bool) { return InstalledOf(Pinned) }

// InstalledOf returns an installed release, if InstallOf has run for it.
func InstalledOf(version string) (string, bool) {
	dir, err := DirOf(version)
	if err != nil {
		return "", false
	}
	bin, err := binary(dir)
	if err != nil {
		return "", false
	}
	if fi, err := os.Stat(bin); err == nil && fi.Mode().IsRegular() {
		return bin, true
	}
	return "", false
}

// Install puts the pinned CLI into Dir with npm (the npm registry is the
// only place it is published), checks that it runs and is the pinned
// release, and returns its path. It does nothing when it is already there.
// Progress and npm's output go to log.
func Install(ctx context.Context, log io.Writer) (string, error) { return InstallOf(ctx, Pinned, log) }

// InstallOf is Install for any release npm has.
func InstallOf(ctx context.Context, version string, log io.Writer) (string, error) {
	if bin, ok := InstalledOf(version); ok {
		fmt.Fprintf(log, "claude %s is installed: %s\n", version, bin)
		return bin, nil
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return "", errors.New("npm not found: installing the pinned claude CLI needs Node.js and npm (Node 22 or later is what claude declares; the native binary does not run on node)")
	}
	pkg, err := Package()
	if err != nil {
		return "", err
	}
	dir, err := DirOf(version)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".install-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	// A package.json of our own keeps npm from looking upward for one.
	if err := os.WriteFile(filepath.Join(tmp, "package.json"), []byte(`{"name":"askctl-claude","private":true}`+"\n"), 0o644); err != nil {
		return "", err
	}
	fmt.Fprintf(log, "installing %s@%s into %s (about 370 MB) …\n", pkg, version, dir)
	cmd := exec.CommandContext(ctx, npm, "install", "--prefix", tmp, "--no-audit", "--no-fund", "--ignore-scripts", "--save-exact", pkg+"@"+version)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("npm install %s@%s: %w", pkg, version, err)
	}
	bin, err := binary(tmp)
	if err != nil {
		return "", err
	}
	if v, err := Version(ctx, bin); err != nil {
		return "", err
	} else if v != version {
		return "", fmt.Errorf("%s says it is claude %s, want %s", bin, v, version)
	}
	os.RemoveAll(dir)
	if err := os.Rename(tmp, dir); err != nil {
		return "", err
	}
	bin, _ = binary(dir)
	fmt.Fprintf(log, "installed claude %s: %s\n", version, bin)
	return bin, nil
}

// Version runs `claude --version` and returns the release it names.
func Version(ctx context.Context, path string) (string, error) {
	if IsStub(path) {
		return "", stubError(path)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("%s --version: %w", path, err)
	}
	v, _, _ := strings.Cut(strings.TrimSpace(string(out)), " ")
	return v, nil
}

// IsStub reports whether path is the npm launcher stub of
// @anthropic-ai/claude-code: a small script that only says the native binary
// is not installed (its postinstall did not run, as with --ignore-scripts).
func IsStub(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 512)
	n, _ := io.ReadFull(f, head)
	return bytes.Contains(head[:n], []byte("claude native binary not installed"))
}

func stubError(path string) error {
	return fmt.Errorf("%s is the npm launcher stub of @anthropic-ai/claude-code, not the CLI: its postinstall did not run (npm --ignore-scripts), so the native binary was never put in place; run `askctl claude install`, or pass --claude with the binary in node_modules/@anthropic-ai/claude-code-<platform>/claude", path)
}

// ErrNotFound is returned by Find when no real CLI is to be had.
var ErrNotFound = errors.New("the real claude CLI was not found: run `askctl claude install` (installs the pinned " + Pinned + " into your cache), or pass --claude PATH")

// Find returns the real CLI to use: explicit (a --claude flag or
// ASKCTL_CLAUDE) if set; else the pinned CLI Install put in the cache; else
// claude on PATH, with a warning on warn when it is not the pinned release.
// An npm launcher stub is recognized and named, never returned.
func Find(ctx context.Context, explicit string, warn io.Writer) (string, error) {
	if explicit != "" {
		fi, err := os.Stat(explicit)
		if err != nil {
			return "", fmt.Errorf("--claude: %w", err)
		}
		if fi.IsDir() {
			return "", fmt.Errorf("--claude: %s is a directory", explicit)
		}
		if IsStub(explicit) {
			return "", stubError(explicit)
		}
		return filepath.Abs(explicit)
	}
	if bin, ok := Installed(); ok {
		return bin, nil
	}
	path, err := exec.LookPath("claude")
	if err != nil {
		return "", ErrNotFound
	}
	if IsStub(path) {
		return "", stubError(path)
	}
	if v, err := Version(ctx, path); err != nil {
		fmt.Fprintf(warn, "askctl: warning: claude on PATH (%s) did not say its version (%v); askctl is pinned to %s: run `askctl claude install`\n", path, err, Pinned)
	} else if v != Pinned {
		fmt.Fprintf(warn, "askctl: warning: claude on PATH (%s) is %s, not the pinned %s: texts and fields may differ; run `askctl claude install`\n", path, v, Pinned)
	}
	return path, nil
}
