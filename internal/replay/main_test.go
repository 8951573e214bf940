package replay_test

import (
	"bufio"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/askctl/askctl/claudecli"
	"github.com/askctl/askctl/internal/agent"
	"github.com/askctl/askctl/internal/testenv"
	"github.com/askctl/askctl/scenarios"
)

func TestMain(m *testing.M) {
	testenv.Main(m)
}

// fake runs fakeclaude as this test binary, re-executed.
var fake = agent.Fake{RunAs: "fakeclaude"}

// realCLI is the real claude agent, installed by make npm.
func realCLI(t *testing.T) agent.Agent { return agent.Real{Claude: testenv.RealClaude(t)} }

// mutant is an agent whose output is changed on the way: a stand-in for a
// fakeclaude that drifted from the real CLI.
type mutant struct {
	agent.Agent
	from, to string
}

func (m mutant) Start(ctx context.Context, sc *scenarios.Scenario, opts agent.Options) (*claudecli.Process, error) {
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
