package fakeclaude_test

import (
	"testing"

	"github.com/askctl/askctl/agent"
	"github.com/askctl/askctl/internal/testenv"
)

// runAsEnv makes the test binary act as fakeclaude, so tests can spawn it as
// a real subprocess without building it first.
const runAsEnv = agent.RunAsEnv

func TestMain(m *testing.M) {
	testenv.Main(m)
}
