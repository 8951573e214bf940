package harness

import (
	"fmt"
	"sync"
	"time"

	"github.com/askctl/askctl/internal/events"
	"github.com/askctl/askctl/internal/proc"
	"github.com/askctl/askctl/internal/uuid"
)

// director hands each fakeclaude the bridge spawns its scenario. A bridge
// spawns every agent with its own arguments and one environment, so the
// harness starts sessions one at a time: it tells the director what the next
// agent plays, asks the surface to start a session, and waits for an agent
// to claim it. An agent started again with --resume ID (a bridge resuming a
// session) plays the same scenario's resume steps, under the same alias.
type director struct {
	mu      sync.Mutex
	next    *slot
	byAgent map[string]*slot // agent session id → its slot
	refused []string         // hellos nobody expected, for the report
	procs   []agentProc      // every agent that said hello, to end at close
}

// slot is one session the harness started: what its agent plays.
type slot struct {
	alias    string
	name     string // scenario name
	scenario string // txtar
	agentID  string // the session id the agent announces
	timeout  time.Duration
	claimed  chan struct{}
	pids     []int
}

// agentProc is a process that said hello: an agent (fakeclaude, or the
// shim in front of the real CLI), as it started.
type agentProc struct {
	pid   int
	start uint64
}

func newDirector() *director { return &director{byAgent: map[string]*slot{}} }

// expect makes s the next agent's assignment. Only one at a time.
func (d *director) expect(s *slot) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.next != nil {
		return fmt.Errorf("session %s is still being started", d.next.alias)
	}
	s.agentID = uuid.New()
	s.claimed = make(chan struct{})
	d.next = s
	d.byAgent[s.agentID] = s
	return nil
}

// abandon withdraws s if nobody claimed it.
func (d *director) abandon(s *slot) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.next == s {
		d.next = nil
	}
}

func (d *director) assign(h events.Hello) (events.Assignment, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if start, ok := proc.Started(h.PID); ok {
		d.procs = append(d.procs, agentProc{h.PID, start})
	}
	if h.Resume != "" {
		if s, ok := d.byAgent[h.Resume]; ok {
			s.pids = append(s.pids, h.PID)
			return events.Assignment{Name: s.name, Scenario: s.scenario, Timeout: durString(s.timeout)}, nil
		}
	}
	s := d.next
	if s == nil {
		d.refused = append(d.refused, fmt.Sprintf("pid %d %v", h.PID, h.Args))
		return events.Assignment{}, fmt.Errorf("the harness is starting no session now (pid %d, args %v): a bridge that spawns agents of its own accord cannot be told which is which", h.PID, h.Args)
	}
	d.next = nil
	s.pids = append(s.pids, h.PID)
	close(s.claimed)
	return events.Assignment{Name: s.name, Scenario: s.scenario, SessionID: s.agentID, Timeout: durString(s.timeout)}, nil
}

func durString(d time.Duration) string {
	if d <= 0 {
		return ""
	}
	return d.String()
}

// killAgents ends every agent that said hello and still runs, with its
// process group: whatever the bridge did with its agents as it stopped
// (a bridge killed outright stops none), nothing the harness had it spawn
// outlives the case. The shim's real CLI dies with the shim.
func (d *director) killAgents() {
	d.mu.Lock()
	procs := d.procs
	d.mu.Unlock()
	for _, p := range procs {
		proc.KillAgent(p.pid, p.start)
	}
}
