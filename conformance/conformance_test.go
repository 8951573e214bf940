package conformance_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/askctl/askctl/conformance"
	"github.com/askctl/askctl/harness"
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
