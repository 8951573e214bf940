//go:build !mutation

package bridge_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/askctl/askctl/bridge"
	"github.com/askctl/askctl/bridgeapi"
	"github.com/askctl/askctl/fakeclaude"
	"github.com/askctl/askctl/internal/testenv"
	"github.com/askctl/askctl/scenarios"
	"github.com/askctl/askctl/transcript"
	"github.com/tidwall/gjson"
)

func TestMain(m *testing.M) {
	stormDriver() // when the storm benchmark runs this binary to start sessions from outside
	testenv.Main(m)
}

// env is a bridge whose CLI is this test binary as fakeclaude, served on a
// loopback port, with a client.
type env struct {
	t      testing.TB
	b      *bridge.Bridge
	c      *bridgeapi.Client
	srv    *httptest.Server
	dir    string
	cfg    bridge.Config
	server *bridge.Server
}

func newEnv(t *testing.T, cfg bridge.Config) *env { return newEnvTB(t, cfg, true) }

// testConfig is cfg for a bridge in a fresh directory whose agents are
// this test binary as fakeclaude, playing the session's scenario.
func testConfig(t testing.TB, cfg bridge.Config, transcripts bool) bridge.Config {
	t.Helper()
	dir := t.TempDir()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.DB == "" {
		cfg.DB = filepath.Join(dir, "bridge.db")
	}
	cfg.Claude = exe
	cfg.Dir = dir
	fe := fakeclaude.Env{RunAs: fakeclaude.RoleFake, Timeout: 60 * time.Second, Linger: 2 * time.Second}
	if transcripts {
		fe.Transcript = filepath.Join(dir, "t-{pid}.jsonl")
	}
	cfg.Env = append(cfg.Env, fe.Environ()...)
	if cfg.SessionEnv == nil {
		cfg.SessionEnv = func(name, text string) ([]string, string, error) {
			if name == "" {
				return nil, "", nil
			}
			if _, err := scenarios.Builtin(name); err != nil {
				return nil, "", err
			}
			return fakeclaude.Env{Scenario: name}.Environ(), name, nil
		}
	}
	cfg.StopGrace = 2 * time.Second
	return cfg
}

// newEnvTB builds the env for a test or a benchmark; transcripts off spares
// a benchmark the files.
func newEnvTB(t testing.TB, cfg bridge.Config, transcripts bool) *env {
	t.Helper()
	cfg = testConfig(t, cfg, transcripts)
	b, err := bridge.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return withBridge(t, &env{dir: cfg.Dir, cfg: cfg}, b)
}

func (e *env) start(scenario, prompt string) *bridgeapi.Session {
	e.t.Helper()
	s, err := e.c.StartSession(context.Background(), bridgeapi.StartOptions{Prompt: prompt, Scenario: scenario})
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

// pending waits for n pending questions of session.
func (e *env) pending(session string, n int) []*bridgeapi.Question {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		qs, err := e.c.Pending(context.Background(), session)
		if err != nil {
			e.t.Fatal(err)
		}
		if len(qs) >= n {
			return qs
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("%d pending questions after 10s, want %d", len(qs), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// ended waits for a session's agent to exit and returns the session.
func (e *env) ended(id string) *bridgeapi.Session {
	e.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		s, err := e.b.Session(context.Background(), id)
		if err != nil {
			e.t.Fatal(err)
		}
		if s.Status == bridgeapi.StatusExited {
			return s
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("session %s still %s after 15s", id, s.Status)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// transcript is the fakeclaude transcript of the session's agent.
func (e *env) transcript(claudeSession string) []transcript.Record {
	e.t.Helper()
	files, _ := filepath.Glob(filepath.Join(e.dir, "t-*.jsonl"))
	var out []transcript.Record
	for _, f := range files {
		recs, err := transcript.ReadFile(f)
		if err != nil {
			e.t.Fatal(err)
		}
		for _, r := range recs {
			if r.Session == claudeSession || claudeSession == "" {
				out = append(out, r)
			}
		}
	}
	return out
}

// answersSent is what the agent received as updatedInput.answers, per
// control_response.
func answersSent(recs []transcript.Record) []string {
	var out []string
	for _, r := range recs {
		if r.Dir == transcript.ToCLI && gjson.GetBytes(r.Msg, "type").String() == "control_response" {
			out = append(out, gjson.GetBytes(r.Msg, "response.response").Raw)
		}
	}
	return out
}

func TestAnswerReachesTheAgent(t *testing.T) {
	e := newEnv(t, bridge.Config{})
	s := e.start("ask-multi", "Ask me how to format.")
	qs := e.pending(s.ID, 1)
	q := qs[0]
	if !strings.HasPrefix(q.ID, "q_") || len(q.Questions) != 2 || q.Questions[1].Question != "Which sections?" || !q.Questions[1].MultiSelect {
		t.Fatalf("pending question %+v", q)
	}
	res, err := e.c.Answer(context.Background(), q.ID, map[string]bridgeapi.Answer{
		"How should I format the output?": {"Summary"},
		"Which sections?":                 {"Intro", "Outro"},
	})
	if err != nil || res.Held {
		t.Fatalf("Answer = %+v, %v", res, err)
	}
	ended := e.ended(s.ID)
	if *ended.ExitCode != 0 {
		t.Errorf("fakeclaude exited %d: %s", *ended.ExitCode, ended.Detail)
	}
	sent := answersSent(e.transcript(ended.ClaudeSessionID))
	if len(sent) != 1 || gjson.Get(sent[0], "updatedInput.answers").Raw != `{"How should I format the output?":"Summary","Which sections?":"Intro, Outro"}` || gjson.Get(sent[0], "behavior").String() != "allow" {
		t.Errorf("the agent received %v", sent)
	}
	if _, err := e.c.Answer(context.Background(), q.ID, map[string]bridgeapi.Answer{"1": {"Detailed"}, "2": {"Body"}}); !errors.Is(err, bridgeapi.ErrResolved) {
		t.Errorf("a second answer: %v, want bridgeapi.ErrResolved", err)
	}
}

// TestMaxStarting: with MaxStarting 1, agents start one at a time: no two
// are between their spawn and their system/init together, however many
// sessions start at once. (Each agent here is a script that marks its start
// with a directory only one can hold, then becomes fakeclaude.)
func TestMaxStarting(t *testing.T) {
	dir := t.TempDir()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "claude")
	body := "#!/bin/sh\n" +
		"mkdir '" + dir + "/starting' 2>/dev/null || echo overlap >> '" + dir + "/overlaps'\n" +
		"sleep 0.1\n" +
		"rmdir '" + dir + "/starting' 2>/dev/null\n" +
		"exec '" + exe + "' \"$@\"\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t, bridge.Config{MaxStarting: 1}, false)
	cfg.Claude = script
	b, err := bridge.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := b.StartSession(bg, bridgeapi.StartOptions{Prompt: "Set up storage.", Scenario: "ask-single"}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if out, err := os.ReadFile(filepath.Join(dir, "overlaps")); err == nil {
		t.Errorf("agents started together with MaxStarting 1: %q", out)
	}
}

// withBridge is e served by bridge b (a bridge started again on e's
// database).
func withBridge(tb testing.TB, e *env, b *bridge.Bridge) *env {
	n := &env{t: tb, b: b, dir: e.dir, cfg: e.cfg}
	n.server = &bridge.Server{B: b, Token: "test-token"}
	n.srv = httptest.NewServer(n.server.Handler())
	n.c = &bridgeapi.Client{URL: n.srv.URL, Token: "test-token"}
	tb.Cleanup(func() {
		n.srv.Close()
		b.Close()
	})
	return n
}
