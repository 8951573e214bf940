package conformance_test

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/askctl/askctl/conformance"
	"github.com/askctl/askctl/harness"
	"github.com/askctl/askctl/internal/testenv"
)

// askctlBin is askctl built for this test run: the reference bridge the
// profiles start, and the fakeclaude the claude shim runs.
var askctlBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "askctl-conformance-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	askctlBin = filepath.Join(dir, "askctl")
	if out, err := exec.Command("go", "build", "-o", askctlBin, "../cmd/askctl").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building askctl: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// TestReferenceBridge: the reference bridge passes every case, over each
// kind of surface.
func TestReferenceBridge(t *testing.T) {
	for _, kind := range []string{"ws", "http", "control-ws", "exec"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			p, err := harness.LoadProfile(filepath.Join("profiles", "reference-"+kind+".json"))
			if err != nil {
				t.Fatal(err)
			}
			conformance.Run(t, conformance.Config{Profile: p, Askctl: askctlBin})
		})
	}
}

var profileFlag = flag.String("bridge", os.Getenv("ASKCTL_CONFORMANCE_BRIDGE"), "a bridge profile to check (TestBridge); default $ASKCTL_CONFORMANCE_BRIDGE")

// TestBridge checks the bridge of -bridge PROFILE (or
// $ASKCTL_CONFORMANCE_BRIDGE): go test ./conformance -run TestBridge -bridge mybridge.json.
// With neither it has nothing to check, and says so.
func TestBridge(t *testing.T) {
	if *profileFlag == "" {
		t.Skip("no profile: pass -bridge FILE or set ASKCTL_CONFORMANCE_BRIDGE to check a bridge of yours")
	}
	p, err := harness.LoadProfile(*profileFlag)
	if err != nil {
		t.Fatal(err)
	}
	conformance.Run(t, conformance.Config{Profile: p, Askctl: askctlBin})
}

// TestReferenceBridgeRealAgent: the reference bridge passes every case with
// the real claude CLI 2.1.330 as its agent, against askctl's fake model API.
func TestReferenceBridgeRealAgent(t *testing.T) {
	claude := testenv.RealClaude(t)
	p, err := harness.LoadProfile(filepath.Join("profiles", "reference-ws.json"))
	if err != nil {
		t.Fatal(err)
	}
	conformance.Run(t, conformance.Config{Profile: p, Askctl: askctlBin, RealClaude: claude})
}

var update = flag.Bool("update", false, "rewrite README.md's command reference")

// readmeMarker starts README.md's command reference, which runs to the end.
const readmeMarker = "<!-- commands: generated from conformance.Usage(); TestReadmeCommands checks it -->\n"

// TestReadmeCommands: README.md's command reference is the commands' usage
// (go test ./conformance -run TestReadmeCommands -update rewrites it).
func TestReadmeCommands(t *testing.T) {
	data, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	head, _, ok := strings.Cut(string(data), readmeMarker)
	if !ok {
		t.Fatal("README.md has no command reference marker")
	}
	want := head + readmeMarker + "```\n" + strings.Join(conformance.Usage(), "\n") + "\n```\n"
	if *update {
		if err := os.WriteFile("README.md", []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if string(data) != want {
		t.Errorf("README.md's command reference is stale: run go test ./conformance -run TestReadmeCommands -update")
	}
}
