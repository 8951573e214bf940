package fakeclaude_test

import (
	"os"
	"testing"

	"github.com/askctl/askctl/fakeclaude"
)

// runAsEnv makes the test binary act as fakeclaude, so tests can spawn it as
// a real subprocess without building it first.
const runAsEnv = "_ASKCTL_RUN_AS"

func TestMain(m *testing.M) {
	if os.Getenv(runAsEnv) == "fakeclaude" {
		fakeclaude.Main()
	}
	os.Exit(m.Run())
}
