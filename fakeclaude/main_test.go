package fakeclaude_test

import (
	"testing"

	"github.com/askctl/askctl/fakeclaude"
	"github.com/askctl/askctl/internal/testenv"
)

// runAsEnv makes the test binary act as fakeclaude, so tests can spawn it as
// a real subprocess without building it first.
const runAsEnv = fakeclaude.EnvRunAs

func TestMain(m *testing.M) {
	testenv.Main(m)
}
