package fakeclaude_test

import (
	"context"
	"github.com/askctl/askctl/claudecli"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/askctl/askctl/claudecli/mcpclient"
	"github.com/askctl/askctl/fakeclaude"
	"github.com/askctl/askctl/internal/agent"
	"github.com/askctl/askctl/internal/replay"
	"github.com/askctl/askctl/internal/shape"
	"github.com/askctl/askctl/scenarios"
	"github.com/askctl/askctl/transcript"
)

const captures = "../testdata/captures/claude-code-2.1.330"

// sdkFlags are the flags the official TypeScript SDK passes (PROTOCOL.md §1).
var sdkFlags = []string{"--output-format=stream-json", "--verbose", "--input-format=stream-json", "--model=claude-sonnet-4-5", "--permission-prompt-tool=stdio"}

// play runs fakeclaude in-process on sc, drives it with plan as the SDK side,
// and returns every line both ways and the exit status.
func play(t testing.TB, sc *scenarios.Scenario, plan replay.Plan, args []string) ([]transcript.Record, fakeclaude.Outcome) {
	t.Helper()
	inW, outR, done := runOnPipes(t, sc, args, 5*time.Second)
	recs, err := replay.Play(context.Background(), plan, inW, outR, replay.PlayOptions{Timeout: 20 * time.Second, NoDelays: true})
	if err != nil {
		t.Fatalf("Play: %v", err)
	}
	return recs, <-done
}

// runOnPipes runs fakeclaude in-process on sc with args (a 10 s wait
// deadline, and linger), and returns its stdin, its stdout and its outcome
// to come.
func runOnPipes(t testing.TB, sc *scenarios.Scenario, args []string, linger time.Duration) (io.WriteCloser, io.Reader, <-chan fakeclaude.Outcome) {
	t.Helper()
	flags, err := fakeclaude.ParseArgs(args)
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan fakeclaude.Outcome, 1)
	go func() {
		o := fakeclaude.Run(context.Background(), fakeclaude.Options{Scenario: sc, Flags: flags, Timeout: 10 * time.Second, Linger: linger, MCP: mcpclient.Dialer{}, Release: baseRelease(t)}, inR, outW)
		outW.Close()
		inR.Close()
		done <- o
	}()
	return inW, outR, done
}

// playPrint runs fakeclaude in-process on a route "mcp" scenario in print
// mode, against the scripted MCP server askctl replay uses, and returns its
// output and exit status.
func playPrint(t testing.TB, sc *scenarios.Scenario) ([]transcript.Record, fakeclaude.Outcome) {
	t.Helper()
	script, err := replay.StartMCPScript(sc, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer script.Close()
	inW, outR, done := runOnPipes(t, sc, agent.PrintArgs(sc, script.Config(sc)), 0)
	recs, err := replay.PlayPrint(context.Background(), inW, outR, replay.PlayOptions{Timeout: 20 * time.Second})
	if err != nil {
		t.Fatalf("PlayPrint: %v", err)
	}
	return recs, <-done
}

// TestMatchesCaptures drives fakeclaude with the SDK side of each capture of
// the real CLI and checks that it answers with the same sequence of message
// types, the same keys on every message, and the same tool_result texts (ids,
// uuids, timestamps and costs aside).
func TestMatchesCaptures(t *testing.T) {
	tests := []struct {
		capture, scenario string
		wantCode          int
	}{
		{"sdk-ask-allow.jsonl", "ask-multi", fakeclaude.ExitOK},
		{"sdk-ask-deny.jsonl", "ask-skip", fakeclaude.ExitOK},
		{"sdk-ask-deny-interrupt.jsonl", "ask-skip-interrupt", fakeclaude.ExitErrorResult},
	}
	for _, tt := range tests {
		t.Run(tt.capture, func(t *testing.T) {
			captured, err := transcript.ReadFile(filepath.Join(captures, tt.capture))
			if err != nil {
				t.Fatal(err)
			}
			plan, err := replay.PlanFor(&scenarios.Scenario{Wire: captured}, true)
			if err != nil {
				t.Fatal(err)
			}
			sc, err := scenarios.Builtin(tt.scenario)
			if err != nil {
				t.Fatal(err)
			}
			got, out := play(t, sc, plan, sdkFlags)
			if out.Code != tt.wantCode {
				t.Errorf("exit status = %d, want %d (failures: %v)", out.Code, tt.wantCode, out.Failures)
			}
			for _, dir := range []string{transcript.FromCLI, transcript.ToCLI} {
				want, have := replay.Shapes(captured, dir), replay.Shapes(got, dir)
				if len(want) == 0 {
					t.Fatalf("capture has no %s lines", dir)
				}
				for _, d := range shape.Compare(want, have) {
					t.Errorf("%s: %s", dir, d)
				}
			}
		})
	}
}

// TestMatchesPrintCaptures plays the print-mode captures of the real CLI —
// an ask_user call through an MCP server, and a session with no permission
// surface — and compares fakeclaude's output with them, message by message.
func TestMatchesPrintCaptures(t *testing.T) {
	tests := []struct{ capture, steps string }{
		{"print-mcp-ask-user.jsonl", `{"prompt":"Ask me how to format."}
{"mcp":{"server":"askuser","input":{"question":"How should I format?","options":[{"label":"Summary"},{"label":"Detailed"}]}},"id":"toolu_02B","user":{"answers":{"How should I format?":"Summary"}}}
{"text":"Done."}
`},
		{"print-no-permission-surface.jsonl", `{"prompt":"Say done."}
{"text":"Done."}
`},
	}
	for _, tt := range tests {
		t.Run(tt.capture, func(t *testing.T) {
			captured, err := transcript.ReadFile(filepath.Join(captures, tt.capture))
			if err != nil {
				t.Fatal(err)
			}
			sc, err := scenarios.Parse(tt.capture, []byte("-- scenario.json --\n{\"name\":\"c\",\"route\":\"mcp\"}\n-- steps.jsonl --\n"+tt.steps))
			if err != nil {
				t.Fatal(err)
			}
			got, out := playPrint(t, sc)
			if out.Code != 0 {
				t.Errorf("exit status = %d (failures: %v)", out.Code, out.Failures)
			}
			want, have := replay.Shapes(captured, transcript.FromCLI), replay.Shapes(got, transcript.FromCLI)
			for _, d := range shape.Compare(want, have) {
				t.Errorf("%s", d)
			}
		})
	}
}

// baseRelease is the release the captures were made with, which the
// in-process tests play: claudecli.Base.
func baseRelease(t testing.TB) *claudecli.Release {
	t.Helper()
	r, err := claudecli.Load(claudecli.Base)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
