package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/askctl/askctl/claudecli"

	"github.com/askctl/askctl/bridge"
	"github.com/askctl/askctl/bridgeapi"
	"github.com/askctl/askctl/transcript"
	"github.com/tidwall/gjson"
)

// crashScenario asks one question and takes its answer live; resumed
// instead (its bridge died first), it checks that its first message
// carries the answer.
const crashScenario = `-- scenario.json --
{"name":"crash","route":"sdk","origin":"synthetic"}
-- steps.jsonl --
{"prompt":"Set up storage for the app."}
{"ask":{"questions":[{"question":"Which database should I use?","header":"Database","options":[{"label":"Postgres","description":"A server"},{"label":"SQLite","description":"One file"}],"multiSelect":false}]},"id":"toolu_01C","user":{"answers":{"Which database should I use?":"Postgres"}}}
{"text":"Using Postgres."}
-- resume.jsonl --
{"prompt":"You previously asked; the user answered.","expect_prompt":"Which database should I use\\?.*Postgres"}
{"text":"Continuing with Postgres."}
`

// deliveries counts how many times the answer Postgres is in the
// conversations of the bridge's sessions (their session files: what their
// agents took in, live or resumed).
func (s *served) deliveries() int {
	s.t.Helper()
	n := 0
	for _, ss := range s.sessions() {
		if ss.ClaudeSessionID != "" {
			n += inConversation(s.t, ss.ClaudeSessionID)
		}
	}
	return n
}

// killedAt starts the bridge again, if it runs, now with the test binary
// ending itself (kill -9) at point, and waits for it to have done so
// after do. With do nil the bridge may die before it is up (a point
// reached as it starts).
func (s *served) killedAt(point string, do func()) {
	s.t.Helper()
	if s.cmd.ProcessState == nil {
		s.cmd.Process.Kill()
		s.cmd.Wait()
	}
	s.env = []string{envTestCrashAt + "=" + point}
	s.noWait = do == nil
	s.start()
	if do == nil {
		do = func() {}
	}
	s.died(point, do)
}

// died waits for the running bridge to kill itself at point after do.
func (s *served) died(point string, do func()) {
	s.t.Helper()
	do()
	done := make(chan struct{})
	go func() { s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		s.t.Fatalf("the bridge did not reach %s; log:\n%s", point, s.log)
	}
	if ws := s.cmd.ProcessState.String(); !strings.Contains(ws, "killed") {
		s.t.Fatalf("the bridge ended %s, not killed at %s; log:\n%s", ws, point, s.log)
	}
}

// settled waits for the bridge's log to say what it did with a due reply:
// found it delivered, or resumed the session with it.
func (s *served) settled() {
	s.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for log := s.log.String(); !strings.Contains(log, "it was delivered") && !strings.Contains(log, "resumed with it"); log = s.log.String() {
		if time.Now().After(deadline) {
			s.t.Fatalf("the bridge never settled the due reply; log:\n%s", s.log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// sessions lists the bridge's sessions.
func (s *served) sessions() []bridgeapi.Session {
	s.t.Helper()
	var ls []bridgeapi.Session
	_ = json.Unmarshal([]byte(s.must("session", "ls", "--json")), &ls)
	return ls
}

// busy counts the sessions whose agent runs or starts.
func busy(ls []bridgeapi.Session) int {
	n := 0
	for _, ss := range ls {
		if ss.Status == bridgeapi.StatusRunning || ss.Status == bridgeapi.StatusStarting {
			n++
		}
	}
	return n
}

// quiet waits until no session's agent runs or starts: what every agent
// got is then in its transcript.
func (s *served) quiet() {
	s.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ls := s.sessions()
		if busy(ls) == 0 {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("sessions still run after 20s: %+v; log:\n%s", ls, s.log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestServeCrashKeepsEveryPromise kills the bridge (kill -9) at each point
// where a crash loses the most, and checks what it promised after a
// restart: an answer it accepted reaches the agent exactly once (live, or
// by a resumed session), and a session it accepted is started.
func TestServeCrashKeepsEveryPromise(t *testing.T) {
	file := filepath.Join(t.TempDir(), "crash.txtar")
	if err := os.WriteFile(file, []byte(crashScenario), 0o600); err != nil {
		t.Fatal(err)
	}
	answerKilledAt := func(t *testing.T, point string, orphanFirst, resumed bool) {
		s := serve(t)
		if !orphanFirst {
			s.cmd.Process.Kill() // the bridge that is killed at point runs the session
			s.cmd.Wait()
			s.env = []string{envTestCrashAt + "=" + point}
			s.start()
		}
		s.must("session", "start", "--scenario", file, "--prompt", "Set up storage for the app.")
		id := gjson.Get(s.must("pending", "--wait", "--timeout", "10s", "--json"), "0.question_id").String()
		if orphanFirst {
			// The bridge dies with the question pending (kill -9): the
			// answer comes to a later one, late.
			s.cmd.Process.Kill()
			s.cmd.Wait()
			s.exits(1)
		}
		if orphanFirst {
			s.killedAt(point, func() {
				if code, out, errOut := s.askctl("answer", "--id", id, "Postgres"); code == 0 {
					t.Errorf("the answer was acknowledged by a bridge killed before it could be: %s%s", out, errOut)
				}
			})
		} else {
			s.died(point, func() {
				if code, out, errOut := s.askctl("answer", "--id", id, "Postgres"); code == 0 {
					t.Errorf("the answer was acknowledged by a bridge killed before it could be: %s%s", out, errOut)
				}
			})
		}
		s.start()
		// The agents: the first, and the resumed one where the answer had
		// not reached the first.
		if resumed {
			if ls := s.sessionsEnded(1); ls[0].ExitCode == nil || *ls[0].ExitCode != 0 {
				t.Errorf("the resumed session ended %+v, want exit 0; log:\n%s", ls[0], s.log)
			}
		} else {
			s.exits(1)
			s.settled()
			s.quiet()
		}
		if got := s.deliveries(); got != 1 {
			t.Errorf("the answer reached an agent %d times, want once; log:\n%s", got, s.log)
		}
		if q := s.question(id); q.Status != bridgeapi.QuestionAnswered || q.Answers["Which database should I use?"] != "Postgres" {
			t.Errorf("after the restart the question is %+v", q)
		}
	}
	t.Run(bridge.CrashAnswerCommitted, func(t *testing.T) { answerKilledAt(t, bridge.CrashAnswerCommitted, false, true) })
	t.Run(bridge.CrashAnswerWritten, func(t *testing.T) { answerKilledAt(t, bridge.CrashAnswerWritten, false, false) })
	t.Run(bridge.CrashResumeCommitted, func(t *testing.T) { answerKilledAt(t, bridge.CrashResumeCommitted, true, true) })
	// The agent asks as its bridge dies, before the question is stored;
	// the next bridge dies too as it finds the question in the agent's
	// session file. The one after still finds it: the person answers, and
	// the session resumes with the answer.
	t.Run(bridge.CrashAskRead+"/"+bridge.CrashAskFound, func(t *testing.T) {
		s := serve(t)
		s.killedAt(bridge.CrashAskRead, func() {
			s.askctl("session", "start", "--scenario", file, "--prompt", "Set up storage for the app.")
		})
		s.exits(1)
		s.killedAt(bridge.CrashAskFound, nil)
		s.start()
		out := s.must("pending", "--wait", "--timeout", "20s", "--json")
		q := gjson.Get(out, "0")
		if !q.Get("orphaned").Bool() || q.Get("questions.0.question").String() != "Which database should I use?" {
			t.Fatalf("pending after two crashes: %s; log:\n%s", out, s.log)
		}
		s.must("answer", "--id", q.Get("question_id").String(), "Postgres")
		if ls := s.sessionsEnded(1); ls[0].ExitCode == nil || *ls[0].ExitCode != 0 {
			t.Errorf("the resumed session ended %+v, want exit 0; log:\n%s", ls[0], s.log)
		}
		if got := s.deliveries(); got != 1 {
			t.Errorf("the answer reached an agent %d times, want once; log:\n%s", got, s.log)
		}
	})
	t.Run(bridge.CrashAccepted, func(t *testing.T) {
		s := serve(t)
		s.killedAt(bridge.CrashAccepted, func() {
			if code, out, _ := s.askctl("session", "start", "--scenario", file, "--prompt", "Set up storage for the app."); code == 0 {
				t.Errorf("the start was acknowledged by a bridge killed before it could be: %s", out)
			}
		})
		s.start()
		id := gjson.Get(s.must("pending", "--wait", "--timeout", "20s", "--json"), "0.question_id").String()
		s.must("answer", "--id", id, "Postgres")
		ls := s.sessionsEnded(1)
		if len(ls) != 1 || ls[0].ExitCode == nil || *ls[0].ExitCode != 0 {
			t.Errorf("sessions %+v, want the accepted one, run to exit 0", ls)
		}
		if got := s.deliveries(); got != 1 {
			t.Errorf("the answer reached an agent %d times, want once", got)
		}
	})
}

// settledAll reports whether the bridge has settled every due reply it
// found when it started (its log says so for each).
func (s *served) settledAll() bool {
	log := s.log.String()
	var n int
	if i := strings.Index(log, " repl(ies) stored"); i >= 0 {
		j := strings.LastIndexByte(log[:i], ' ')
		n, _ = strconv.Atoi(log[j+1 : i])
	}
	return strings.Count(log, "it was delivered")+strings.Count(log, "resumed with it")+strings.Count(log, "resuming session")+strings.Count(log, "nothing to deliver to") >= n
}

// inConversation counts the times the answer Postgres is in CLI session
// id's conversation: the AskUserQuestion call's tool_result, or a resumed
// session's first message that carries it.
func inConversation(t testing.TB, id string) int {
	t.Helper()
	data, err := os.ReadFile(claudecli.SessionFile(os.Getenv(claudecli.EnvConfigDir), claudecli.RealCwd(), id))
	if err != nil {
		return 0
	}
	n := 0
	for _, line := range strings.Split(string(data), "\n") {
		row := gjson.Parse(line)
		if row.Get("type").String() != "user" {
			continue
		}
		c := row.Get("message.content")
		switch {
		case c.Type == gjson.String:
			if strings.Contains(c.String(), "previously asked") && strings.Contains(c.String(), "Postgres") {
				n++
			}
		default:
			// The answer's tool_result (not a rejection's: an agent whose
			// stdin closed records the question as declined).
			if r := c.Get(`#(tool_use_id=="toolu_01C")`); r.Exists() && !r.Get("is_error").Bool() && strings.Contains(r.Get("content").Raw, "Postgres") {
				n++
			}
		}
	}
	return n
}

// clipBytes is a transcript record's message or text, cut short.
func clipBytes(msg []byte, text string) string {
	if len(msg) == 0 {
		msg = []byte(text)
	}
	if len(msg) > 300 {
		msg = msg[:300]
	}
	return string(msg)
}

// TestServeKilledAtRandom kills the bridge (kill -9) at random moments
// while sessions start, ask, and are answered, again and again on one state
// directory; then a last bridge settles everything (the person answers
// what is left). No answer may reach an agent twice, every answer the
// bridge accepted must reach one, and no accepted session may be left
// unstarted, and an agent that asked (even as its bridge died) gets an
// answer. ASKCTL_KILLS sets the number of kills (default 12).
func TestServeKilledAtRandom(t *testing.T) {
	kills := 12
	if n, err := strconv.Atoi(os.Getenv("ASKCTL_KILLS")); err == nil && n > 0 {
		kills = n
	}
	file := filepath.Join(t.TempDir(), "crash.txtar")
	if err := os.WriteFile(file, []byte(crashScenario), 0o600); err != nil {
		t.Fatal(err)
	}
	// Orphaned questions wait for the person as long as the run lasts: a
	// question that expires before anyone answers it is told to no one (its
	// agent is gone), which is the timeout's rule, not a lost answer. A
	// thousand kills run for minutes.
	s := serve(t, "--timeout", "1h")
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	t.Logf("ASKCTL_KILLS=%d", kills)
	var mu sync.Mutex
	var acked []string // answers a bridge acknowledged
	for k := range kills {
		if k > 0 {
			s.start()
		}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for range 2 {
			wg.Add(1)
			go func() { // a client starting sessions
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					s.askctl("session", "start", "--scenario", file, "--prompt", "Set up storage for the app.")
				}
			}()
		}
		wg.Add(1)
		go func() { // a person answering whatever is pending
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				_, out, _ := s.askctl("pending", "--json")
				for _, q := range gjson.Parse(out).Array() {
					id := q.Get("question_id").String()
					if code, _, _ := s.askctl("answer", "--id", id, "Postgres"); code == 0 {
						mu.Lock()
						acked = append(acked, id)
						mu.Unlock()
					}
				}
			}
		}()
		time.Sleep(time.Duration(20+rng.IntN(200)) * time.Millisecond)
		fmt.Fprintf(s.history, "--- killing the bridge %s\n", time.Now().Format(time.StampMicro))
		s.cmd.Process.Kill()
		s.cmd.Wait()
		close(stop)
		wg.Wait()
	}
	// The last bridge: answer what is left until every session has ended.
	// Many kills leave thousands of questions orphaned, each answered by a
	// resumed session: the wait is for progress, not for a fixed time, and
	// a live agent's question (it gives up after 30 s) goes first.
	s.start()
	const stall = 60 * time.Second
	least, progressed := -1, time.Now()
	for {
		_, out, _ := s.askctl("pending", "--json")
		qs := gjson.Parse(out).Array()
		sort.SliceStable(qs, func(i, j int) bool { return !qs[i].Get("orphaned").Bool() && qs[j].Get("orphaned").Bool() })
		for _, q := range qs {
			s.askctl("answer", "--id", q.Get("question_id").String(), "Postgres")
		}
		n := busy(s.sessions())
		if n == 0 && len(qs) == 0 && s.settledAll() {
			break
		}
		if left := n + len(qs); least < 0 || left < least {
			least, progressed = left, time.Now()
		}
		if time.Since(progressed) > stall {
			t.Fatalf("after %d kills, no session ended and no question was settled for %v: %d busy, %d pending %s; log:\n%s", kills, stall, n, len(qs), out, s.log)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Each CLI session asks once. What counts is what its conversation
	// holds (its session file: what the agent, and any agent resumed from
	// it, took in): an agent that read a line and died before it acted on
	// it took nothing in, and the bridge rightly delivers again.
	asked := map[string]bool{} // CLI sessions whose agent wrote its question out
	for _, r := range s.transcripts() {
		if r.Dir == transcript.FromCLI && gjson.GetBytes(r.Msg, "request.subtype").String() == "can_use_tool" {
			asked[r.Session] = true
		}
	}
	got := map[string]int{}
	for _, ss := range s.sessions() {
		if ss.ClaudeSessionID != "" {
			got[ss.ClaudeSessionID] = inConversation(t, ss.ClaudeSessionID)
		}
	}
	ls := s.sessions()
	answered, unasked := 0, 0
	var failedIDs []string
	why := map[string]int{}
	for _, ss := range ls {
		switch n := got[ss.ClaudeSessionID]; {
		case n > 1:
			t.Errorf("session %s (%s) got the answer %d times", ss.ID, ss.ClaudeSessionID, n)
			failedIDs = append(failedIDs, ss.ID, ss.ClaudeSessionID)
		case n == 1:
			answered++
		case ss.Status == bridgeapi.StatusStarting:
			t.Errorf("session %s was accepted and never started", ss.ID)
		case asked[ss.ClaudeSessionID]:
			t.Errorf("session %s (%s): its agent asked, and no answer ever reached it (%s: %s)", ss.ID, ss.ClaudeSessionID, ss.Status, ss.Detail)
			failedIDs = append(failedIDs, ss.ID, ss.ClaudeSessionID)
		default:
			unasked++
			why[ss.Status+": "+ss.Detail]++
		}
	}
	claudeID := map[string]string{}
	for _, ss := range ls {
		claudeID[ss.ID] = ss.ClaudeSessionID
	}
	// Every answer the bridge stored reached its agent once, whether or
	// not its acknowledgement reached the person.
	var all []bridgeapi.Question
	req, _ := http.NewRequest("GET", s.endpoint()+"/api/questions?status=answered", nil)
	req.Header.Set("Authorization", "Bearer "+s.token())
	if resp, err := http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	} else {
		err = json.NewDecoder(resp.Body).Decode(&all)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range all {
		if n := got[claudeID[q.SessionID]]; n != 1 {
			t.Errorf("question %s of session %s (%s): answered in the database, and the answer reached an agent %d times", q.ID, q.SessionID, claudeID[q.SessionID], n)
			failedIDs = append(failedIDs, q.ID, q.SessionID, claudeID[q.SessionID])
		}
	}
	for _, id := range acked {
		if q := s.question(id); got[claudeID[q.SessionID]] != 1 {
			t.Errorf("question %s: the answer was acknowledged, and reached an agent %d times; now %s", id, got[claudeID[q.SessionID]], q.Status)
		}
	}
	if t.Failed() {
		// What every bridge said, and each agent of a failed session did.
		for _, id := range failedIDs {
			for _, line := range strings.Split(s.history.String(), "\n") {
				if strings.Contains(line, id) || strings.HasPrefix(line, "--- ") && false {
					t.Logf("  bridge: %s", line)
				}
			}
		}
		for _, r := range s.transcripts() {
			if slices.Contains(failedIDs, r.Session) {
				t.Logf("  agent %s %s: %s %s %s", r.Session[:8], r.T.Format(time.StampMicro), r.Dir, r.Event, clipBytes(r.Msg, r.Text))
			}
		}
		if f := os.Getenv("ASKCTL_KILLS_LOG"); f != "" {
			_ = os.WriteFile(f, []byte(s.history.String()), 0o600)
			t.Logf("every bridge's log: %s", f)
		}
	}
	t.Logf("%d kills: %d answers acknowledged; %d sessions, %d answered exactly once, %d ended without asking (their agent died with a bridge before it asked): %v", kills, len(acked), len(ls), answered, unasked, why)
	if answered == 0 {
		t.Errorf("no session was answered: the test exercised nothing; log:\n%s", s.log)
	}
}
