package harness

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/askctl/askctl/internal/agent"
	"github.com/askctl/askctl/internal/proc"
	"github.com/askctl/askctl/scenarios"
	"github.com/askctl/askctl/surface"
)

// Route MCP: the harness runs the agent itself, in print mode, with the
// profile's --mcp-config, so the agent calls the bridge's ask_user server,
// and the question shows on the bridge's surface in a session the bridge
// makes for it. The harness watches every session of the surface and takes
// as the alias's own the session whose question is the scenario's.

// StartMCP starts a route "mcp" session named alias: the agent (fakeclaude
// or the real CLI, through the claude shim) runs `-p PROMPT --output-format
// stream-json --verbose --mcp-config CONFIG --allowedTools TOOL`, and
// connection "main" watches every session of the surface for its question.
func (e *Env) StartMCP(ctx context.Context, alias string, sc *scenarios.Scenario, agentTimeout time.Duration) error {
	spec := e.bridge.profile.MCP
	if spec == nil {
		return fmt.Errorf("the profile says nothing of how the CLI reaches the bridge's MCP server (\"mcp\": {\"config\": …})")
	}
	if sc.Route != scenarios.RouteMCP {
		return fmt.Errorf("scenario %s is route %q, want \"mcp\"", sc.Name, sc.Route)
	}
	sc, err := sc.WithMCPServer(spec.Server, spec.Tool)
	if err != nil {
		return err
	}
	_, sl, forget, err := e.expectAgent(alias, sc, agentTimeout, true)
	if err != nil {
		return err
	}
	// Watch first, so the question is not missed.
	if err := e.open(ctx, alias, "main", true, -1); err != nil {
		forget()
		return err
	}
	cmd := exec.Command(e.bridge.vars["CLAUDE"], agent.PrintArgs(sc, string(spec.Config))...)
	cmd.Dir = filepath.Join(e.bridge.opts.Work, "state")
	cmd.Env = os.Environ()
	for k, v := range spec.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stdout = io.Discard // its lines reach the harness over the events connection
	logf, err := os.OpenFile(filepath.Join(e.bridge.opts.Work, "mcp-agents.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err == nil {
		cmd.Stderr = logf
		defer logf.Close()
	}
	proc.SetGroup(cmd)
	if err := cmd.Start(); err != nil {
		forget()
		return fmt.Errorf("starting the agent of session %s: %w", alias, err)
	}
	e.bridge.mu.Lock()
	e.bridge.all = append(e.bridge.all, cmd) // killed with the bridge's processes at Close
	e.bridge.mu.Unlock()
	go func() { _ = cmd.Wait() }()
	select {
	case <-sl.claimed:
	case <-time.After(e.bridge.opts.ClaimTimeout):
		forget()
		return &SetupError{Op: "starting session " + alias, Err: fmt.Errorf("its agent did not ask the harness what to play within %v", e.bridge.opts.ClaimTimeout)}
	case <-ctx.Done():
		forget()
		return ctx.Err()
	}
	return nil
}

// unfold gives the questions a rendering surface shows (surface.Spec.Renders)
// the texts of the scenario's questions they show, where the two differ in
// white space alone: the page cannot show more.
func (s *SessionState) unfold(ev *surface.Event) {
	if len(ev.Questions) == 0 || s.scenario == nil {
		return
	}
	qs := slices.Clone(ev.Questions)
	for i, q := range qs {
		for _, st := range s.scenario.Steps {
			for _, a := range st.Questions {
				if a.Question != q.Question && fold(a.Question) == fold(q.Question) {
					qs[i].Question = a.Question
				}
			}
		}
	}
	ev.Questions = qs
}

// fold is text with its runs of white space made one space, and none at
// its edges: as a page shows it.
func fold(text string) string { return strings.Join(strings.Fields(text), " ") }

// mcpAltered is the text of the session's mcp step that a surface event
// shows changed in its white space alone (trimmed, or spaces folded): the
// bridge altered the agent's question, and the harness, which knows the
// session by its question's text, cannot take it for the session's.
func (s *SessionState) mcpAltered(ev surface.Event) (asked string, ok bool) {
	if ev.Type != surface.EventQuestion || len(ev.Questions) == 0 || s.scenario == nil {
		return "", false
	}
	shown := ev.Questions[0].Question
	for _, st := range s.scenario.Steps {
		if st.Kind != scenarios.KindMCP || len(st.Questions) != 1 {
			continue
		}
		if q := st.Questions[0].Question; q != shown && fold(q) == fold(shown) {
			return q, true
		}
	}
	return "", false
}

// mcpQuestion reports whether a surface event shows the question of one of
// the session's mcp steps, which makes its session the alias's.
func (s *SessionState) mcpQuestion(ev surface.Event) bool {
	if ev.Type != surface.EventQuestion || len(ev.Questions) == 0 {
		return false
	}
	for _, st := range s.scenario.Steps {
		if st.Kind == scenarios.KindMCP && len(st.Questions) == 1 && st.Questions[0].Question == ev.Questions[0].Question {
			return true
		}
	}
	return false
}
