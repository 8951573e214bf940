package replay_test

import (
	"bufio"
	"context"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/askctl/askctl/agent"
	"github.com/askctl/askctl/fakeclaude"
	"github.com/askctl/askctl/scenarios"
)

func TestMain(m *testing.M) {
	if os.Getenv(agent.RunAsEnv) == "fakeclaude" {
		fakeclaude.Main()
	}
	os.Exit(m.Run())
}

// fake runs fakeclaude as this test binary, re-executed.
var fake = agent.Fake{RunAs: "fakeclaude"}

// realCLI returns the real claude agent, installed by make npm. Without it the
// test is skipped, unless ASKCTL_REQUIRE_NPM is set (make test, CI): then it
// fails.
func realCLI(t *testing.T) agent.Agent {
	t.Helper()
	path, err := agent.FindClaude(os.Getenv("ASKCTL_CLAUDE"), "../testdata/sdk")
	if err != nil {
		if os.Getenv("ASKCTL_REQUIRE_NPM") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	return agent.Real{Claude: path}
}

// mutant is an agent whose output is changed on the way: a stand-in for a
// fakeclaude that drifted from the real CLI.
type mutant struct {
	agent.Agent
	from, to string
}

func (m mutant) Start(ctx context.Context, sc *scenarios.Scenario, opts agent.Options) (*agent.Process, error) {
	p, err := m.Agent.Start(ctx, sc, opts)
	if err != nil {
		return nil, err
	}
	r, w := io.Pipe()
	src := p.Stdout
	go func() {
		br := bufio.NewReader(src)
		for {
			line, err := br.ReadString('\n')
			if line != "" {
				io.WriteString(w, strings.Replace(line, m.from, m.to, 1))
			}
			if err != nil {
				w.Close()
				return
			}
		}
	}()
	p.Stdout = r
	return p, nil
}
