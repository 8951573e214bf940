// Package testenv is what askctl's tests share: turning the test binary into
// fakeclaude when an agent re-executes it, and finding the npm packages that
// make npm installs (the TypeScript Agent SDK, the real claude CLI).
//
// Tests that need the npm packages skip without them under a plain go test,
// and fail without them when ASKCTL_REQUIRE_NPM is set, as make test and CI
// set it: CI never skips them.
package testenv

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/askctl/askctl/claudecli"
	"github.com/askctl/askctl/claudecli/mcpclient"
	"github.com/askctl/askctl/fakeclaude"
	"github.com/askctl/askctl/internal/chromium"
)

// RunAsFakeclaude turns the test binary into fakeclaude when an agent started
// it so (agent.Fake with RunAs "fakeclaude"). Call it first in TestMain.
// Otherwise it points CLAUDE_CONFIG_DIR at a fresh directory, so the
// session files of the fakeclaudes the tests run stay out of the user's
// ~/.claude.
func RunAsFakeclaude() {
	if os.Getenv(fakeclaude.EnvRunAs) == fakeclaude.RoleFake {
		fakeclaude.MainWith(mcpclient.Dialer{})
	}
	IsolateConfig()
}

const isolatedPrefix = "askctl-test-claude-"

// IsolateConfig points CLAUDE_CONFIG_DIR at a fresh temporary directory,
// unless a test process above this one (this binary, re-executed as askctl
// or a bridge) already did: its agents share one.
func IsolateConfig() {
	if strings.HasPrefix(filepath.Base(os.Getenv(claudecli.EnvConfigDir)), isolatedPrefix) {
		return
	}
	d, err := os.MkdirTemp("", isolatedPrefix)
	if err != nil {
		fmt.Fprintf(os.Stderr, "testenv: a config directory for the tests' session files: %v\n", err)
		os.Exit(1)
	}
	os.Setenv(claudecli.EnvConfigDir, d)
	isolated = d
}

// isolated is the config directory this process made, if it made one.
var isolated string

// Main is a TestMain: fakeclaude when an agent started the test binary so,
// else the tests, with session files in a directory of their own, removed
// after.
func Main(m *testing.M) {
	RunAsFakeclaude()
	os.Exit(Run(m))
}

// Run runs m's tests and returns their exit code, after removing the config
// directory IsolateConfig made (a TestMain that ends in os.Exit would leave
// it behind in the temporary directory, one a test run). A session file
// that appeared meanwhile in the user's own ~/.claude fails the run.
func Run(m TestingM) int {
	before := userSessions()
	code := m.Run()
	Cleanup()
	// No test writes outside its temporary directories.
	for f := range userSessions() {
		if !before[f] {
			fmt.Fprintf(os.Stderr, "testenv: a test wrote %s, in the user's own ~/.claude: give it a CLAUDE_CONFIG_DIR or a Home of its own\n", f)
			code = 1
		}
	}
	return code
}

// Cleanup removes the config directory IsolateConfig made, if it made
// one: for a TestMain that may end before it runs its tests.
func Cleanup() {
	if isolated != "" {
		os.RemoveAll(isolated)
	}
}

// TestingM is what a TestMain runs: *testing.M, or one wrapped by Cleaned.
type TestingM interface{ Run() int }

// Cleaned wraps m so that running it is Run(m), for a TestMain that hands
// m to another (testscript.Main) to run and exit.
func Cleaned(m TestingM) TestingM { return cleaned{m} }

type cleaned struct{ m TestingM }

func (c cleaned) Run() int { return Run(c.m) }

// userSessions are the session files of the user's own ~/.claude kept for
// this package's directory, where an in-process fakeclaude with no config
// directory of its own would write (the user's other sessions are none of
// the tests' business).
func userSessions() map[string]bool {
	out := map[string]bool{}
	home, err := os.UserHomeDir()
	if err != nil {
		return out
	}
	files, _ := filepath.Glob(filepath.Join(claudecli.ProjectDir(filepath.Join(home, ".claude"), claudecli.RealCwd()), "*.jsonl"))
	for _, f := range files {
		out[f] = true
	}
	return out
}

// SDKDir is the repository's testdata/sdk, the pinned npm packages, or
// the directory ASKCTL_SDK_DIR names.
func SDKDir() string {
	if d := os.Getenv(EnvSDKDir); d != "" {
		return d
	}
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "testdata", "sdk")
}

// EnvSDKDir names another directory with the TypeScript Agent SDK and the
// drivers (scripts/sdk-releases.sh installs the SDK release published with
// each claude release there).
const EnvSDKDir = "ASKCTL_SDK_DIR"

// missing skips, or fails under ASKCTL_REQUIRE_NPM.
func missing(t testing.TB, err error) {
	t.Helper()
	if os.Getenv("ASKCTL_REQUIRE_NPM") != "" {
		t.Fatalf("%v (make test installs it)", err)
	}
	t.Skipf("%v; make test installs it", err)
}

// endToEnd fails a test that reaches what only the end-to-end tier uses
// (the real CLI, a browser) while make test runs the fast tier
// (ASKCTL_TIER=fast): the Makefile's E2E list must name it, so that make
// test stays fast and make e2e runs it.
func endToEnd(t testing.TB, what string) {
	t.Helper()
	if os.Getenv("ASKCTL_TIER") == "fast" {
		top, _, _ := strings.Cut(t.Name(), "/")
		t.Fatalf("%s needs %s: name it in the Makefile's E2E list (make e2e runs it; make test runs the fast tier)", top, what)
	}
}

// Chromium returns the Chromium the page's browser tests drive:
// ASKCTL_CHROMIUM, else chromium on PATH. Missing, the test is skipped, or
// fails under ASKCTL_REQUIRE_BROWSER (make test sets it, and installs
// Debian's chromium where it is missing: scripts/install-chromium.sh).
func Chromium(t testing.TB) string {
	t.Helper()
	endToEnd(t, "Chromium")
	if p, err := chromium.Find(""); err == nil {
		return p
	}
	if os.Getenv("ASKCTL_REQUIRE_BROWSER") != "" {
		t.Fatal("chromium not found (make test installs it: scripts/install-chromium.sh; or set ASKCTL_CHROMIUM)")
	}
	t.Skip("chromium not found; make test installs it (scripts/install-chromium.sh), or set ASKCTL_CHROMIUM")
	return ""
}

// RealClaude returns the real claude CLI as askctl finds it: ASKCTL_CLAUDE,
// the pinned CLI askctl claude install put in the cache, or claude on PATH.
func RealClaude(t testing.TB) string {
	t.Helper()
	endToEnd(t, "the real claude CLI")
	path, err := claudecli.Find(context.Background(), os.Getenv(claudecli.EnvClaude), io.Discard)
	if err != nil {
		missing(t, err)
	}
	return path
}

// RealClaudeOf returns the real CLI of one release, as askctl claude
// install VERSION put it in the cache (make real-cli installs the pinned
// release and the base, which the captures are of).
func RealClaudeOf(t testing.TB, version string) string {
	t.Helper()
	endToEnd(t, "the real claude CLI")
	path, ok := claudecli.InstalledOf(version)
	if !ok {
		missing(t, fmt.Errorf("claude %s is not installed (askctl claude install %s)", version, version))
	}
	return path
}

// RequireSDK checks that the TypeScript Agent SDK and node are there and
// returns the directory to run node in.
func RequireSDK(t testing.TB) string {
	t.Helper()
	dir := SDKDir()
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@anthropic-ai", "claude-agent-sdk")); err != nil {
		missing(t, err)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatalf("node not found: %v", err)
	}
	return dir
}

// BuildFakeclaude builds cmd/fakeclaude into a temporary directory and
// returns its path: fakeclaude as make build builds it. A test binary
// turned into fakeclaude (RunAsFakeclaude) links all the test links, and
// starts slower than fakeclaude does, which benchmarks of whole sessions
// must not measure.
func BuildFakeclaude(tb testing.TB) string {
	tb.Helper()
	bin := filepath.Join(tb.TempDir(), "fakeclaude")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/askctl/askctl/cmd/fakeclaude").CombinedOutput(); err != nil {
		tb.Fatalf("go build fakeclaude: %v\n%s", err, out)
	}
	return bin
}
