package replay

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/askctl/askctl/claudecli"
	"github.com/askctl/askctl/internal/agent"
	"github.com/askctl/askctl/internal/clip"
	"github.com/askctl/askctl/scenarios"
	"github.com/askctl/askctl/transcript"
	"github.com/tidwall/gjson"
)

// Report is how one scenario replayed.
type Report struct {
	Scenario string        `json:"scenario"`
	File     string        `json:"file"`
	Agent    string        `json:"agent"`
	Version  string        `json:"agent_version,omitempty"`
	Mode     string        `json:"mode"` // "steps", "recording", or "resumed"
	Match    bool          `json:"match"`
	Messages int           `json:"messages"` // messages the agent wrote
	Exit     int           `json:"exit"`
	Duration time.Duration `json:"duration_ns"`
	PeakRSS  int64         `json:"agent_peak_rss_bytes"`
	Diffs    []Diff        `json:"diffs,omitempty"`
	Error    string        `json:"error,omitempty"`
	// Err is why the session did not play through, when it did not: it
	// wraps claudecli.ErrStart, ErrPlan, ErrAgentTimeout or ErrSessionTimeout
	// (errors.Is), or an error from the agent's process. Error is its text.
	Err     error               `json:"-"`
	Records []transcript.Record `json:"-"`
	// Sessions are the session files the agent wrote, by path under the
	// config directory's projects/.
	Sessions map[string][]byte   `json:"-"`
	Notes    []transcript.Record `json:"-"` // the agent's own notes and failures
}

// Options tune Replay.
type Options struct {
	// Timeout bounds each wait of the agent on the SDK side, and, with a
	// grace period for the agent's own verdict, the whole session. Zero
	// means one minute; a sooner deadline on ctx shortens it.
	Timeout time.Duration
	Log     transcript.Sink
	// Args are the agent's flags; nil means claudecli.SDKArgs.
	Args []string
	// Dir is the agent's directory (and HOME, and config directory's
	// parent); a fresh one when empty. Two sessions in one Dir share their
	// session files, as a resumed session needs.
	Dir string
	// Resume, a session id, plays the scenario's resumed session: the agent
	// is started with --resume Resume (in Dir, where the first session
	// ran), and plays what follows the first session (Scenario.Resumed).
	Resume string
	// ReplayUserMessages adds --replay-user-messages to a resumed session:
	// the agent echoes each prompt and each control_response it receives.
	ReplayUserMessages bool
}

// Why a session did not play through; a Report's Err wraps one of them, or
// claudecli.ErrStart.
var (
	ErrPlan         = errors.New("the scenario cannot be played")
	ErrAgentTimeout = errors.New("the agent's wait for the SDK side passed its deadline")
)

// verdictGrace is how long the session outlives the agent's own wait
// deadline, so the agent's verdict ("no answer … within", exit 5) is what is
// reported rather than a kill.
const verdictGrace = 3 * time.Second

// waitTimeout is the agent's per-wait deadline: opts.Timeout, shortened to
// fit ctx's deadline with the grace period.
func waitTimeout(ctx context.Context, timeout time.Duration) time.Duration {
	if timeout <= 0 {
		timeout = time.Minute
	}
	if dl, ok := ctx.Deadline(); ok {
		if left := time.Until(dl) - verdictGrace; left < timeout {
			timeout = max(left, 100*time.Millisecond)
		}
	}
	return timeout
}

// Replay plays sc's SDK side against a fresh agent and checks what the agent
// wrote: against the recording for a recorded scenario, else against the
// steps.
func Replay(ctx context.Context, sc *scenarios.Scenario, ag agent.Agent, opts Options) Report {
	rep := Report{Scenario: sc.Name, File: sc.File, Agent: ag.Name(), Mode: "steps"}
	if len(sc.Wire) > 0 {
		rep.Mode = "recording"
	}
	start := time.Now()
	fail := func(err error) Report {
		rep.Err, rep.Error = err, err.Error()
		rep.Duration = time.Since(start)
		return rep
	}
	agentSc, checkSc := sc, sc
	args := opts.Args
	if opts.Resume != "" {
		r, err := sc.Resumed()
		if err != nil {
			return fail(fmt.Errorf("%w: %w", ErrPlan, err))
		}
		agentSc, checkSc = r, r.ResumePart()
		rep.Mode = "resumed"
		if args == nil {
			args = append(append([]string(nil), claudecli.SDKArgs...), "--resume", opts.Resume)
			if opts.ReplayUserMessages {
				args = append(args, "--replay-user-messages")
			}
		}
	}
	plan, err := PlanFor(checkSc, ag.CancelsItself())
	if err != nil {
		return fail(fmt.Errorf("%w: %w", ErrPlan, err))
	}
	wait := waitTimeout(ctx, opts.Timeout)
	if sc.Route == scenarios.RouteMCP {
		script, err := StartMCPScript(sc, opts.Log)
		if err != nil {
			return fail(fmt.Errorf("%w: %w", ErrPlan, err))
		}
		defer script.Close()
		if args == nil {
			args = agent.PrintArgs(sc, script.Config(sc))
		}
	}
	var (
		mu    sync.Mutex
		notes []transcript.Record
	)
	sink := transcript.Multi{opts.Log, transcript.Func(func(r transcript.Record) error {
		if !r.IsWire() {
			mu.Lock()
			notes = append(notes, r)
			mu.Unlock()
		}
		return nil
	})}
	p, err := ag.Start(ctx, agentSc, agent.Options{Log: sink, WaitTimeout: wait, Args: args, Dir: opts.Dir})
	if err != nil {
		return fail(fmt.Errorf("starting the %s agent: %w", ag.Name(), err))
	}
	rep.Version = p.Version
	play := func(ctx context.Context, stdin io.WriteCloser, stdout io.Reader, o PlayOptions) ([]transcript.Record, error) {
		return Play(ctx, plan, stdin, stdout, o)
	}
	if sc.Route == scenarios.RouteMCP {
		play = PlayPrint
	}
	kill := p.Kill
	if !ag.CancelsItself() {
		// A scenario's exit_after is played by killing the real CLI, which
		// saves its session file rows a little after it writes a message:
		// give it the time to save what it had done (as fakeclaude, which
		// exits by itself, has), so the comparison is of what it did, not
		// of when it was killed.
		kill = func() { settled(p, wait); p.Kill() }
	}
	recs, playErr := play(ctx, p.Stdin, p.Stdout, PlayOptions{Timeout: wait + verdictGrace, Kill: kill, Sink: opts.Log})
	if playErr != nil {
		p.Kill()
	}
	code, waitErr := p.Wait()
	rep.Exit, rep.Records, rep.PeakRSS, rep.Sessions = code, recs, p.PeakRSS(), p.Sessions
	if rep.Version == "" {
		rep.Version = cliVersion(recs)
	}
	mu.Lock()
	rep.Notes = append([]transcript.Record(nil), notes...)
	mu.Unlock()
	got := Shapes(recs, transcript.FromCLI)
	rep.Messages = len(got)
	if rep.Mode == "recording" {
		rep.Diffs = CheckWire(Shapes(sc.Wire, transcript.FromCLI), got)
	} else {
		rep.Diffs = CheckSteps(Expected(checkSc, cliVersion(recs)), got)
	}
	if rep.Messages == 0 && code != 0 {
		// It ended before it wrote anything: what it said is the cause,
		// not the messages it never wrote.
		if stderr := strings.TrimSpace(p.Stderr()); stderr != "" {
			rep.Diffs = append([]Diff{{Text: fmt.Sprintf("the %s agent exited %d before it wrote a message: %s", ag.Name(), code, clip.String(stderr, 500))}}, rep.Diffs...)
		}
	}
	var agentTimeout string
	for _, n := range rep.Notes {
		if n.Event == transcript.EventError {
			rep.Diffs = append(rep.Diffs, Diff{Step: n.Step, Text: fmt.Sprintf("%s agent reports %s: %s", ag.Name(), n.Kind, n.Text)})
			if n.Kind == "timeout" && agentTimeout == "" {
				agentTimeout = n.Text
			}
		}
	}
	switch {
	case agentTimeout != "":
		rep.Err = fmt.Errorf("%w: %s", ErrAgentTimeout, agentTimeout)
	case playErr != nil:
		rep.Err = fmt.Errorf("playing the session: %w", playErr)
	case waitErr != nil:
		rep.Err = fmt.Errorf("waiting for the agent: %w", waitErr)
	}
	if rep.Err != nil {
		rep.Error = rep.Err.Error()
		if stderr := strings.TrimSpace(p.Stderr()); stderr != "" && agentTimeout == "" {
			rep.Error += "; agent stderr: " + clip.String(stderr, 300)
		}
	}
	rep.Match = rep.Err == nil && len(rep.Diffs) == 0
	rep.Duration = time.Since(start)
	return rep
}

// settled waits, at most limit (and 5 s), until the agent's session file
// holds the rows the CLI saves after a tool call (the tools used, and the
// last prompt that leads to a row), or no longer changes for 300 ms.
func settled(p *claudecli.Process, limit time.Duration) {
	deadline := time.Now().Add(min(limit, 5*time.Second))
	var last string
	stable := time.Now()
	for time.Now().Before(deadline) {
		var all []byte
		for _, b := range p.SessionsNow() {
			all = append(all, b...)
		}
		if bytes.Contains(all, []byte(`"type":"tools-used"`)) && bytes.Contains(all, []byte(`"type":"last-prompt"`)) && !bytes.Contains(all, []byte(`"leafUuid":null`)) {
			return
		}
		if string(all) != last {
			last, stable = string(all), time.Now()
		} else if len(all) > 0 && time.Since(stable) > 300*time.Millisecond && bytes.Contains(all, []byte(`"type":"tools-used"`)) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// cliVersion is the claude_code_version the agent announced in its first
// system/init, or "".
func cliVersion(recs []transcript.Record) string {
	for _, r := range recs {
		if r.Dir == transcript.FromCLI && gjson.GetBytes(r.Msg, "subtype").String() == "init" {
			return gjson.GetBytes(r.Msg, "claude_code_version").String()
		}
	}
	return ""
}
