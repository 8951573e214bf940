package harness

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/askctl/askctl/internal/events"
	"github.com/askctl/askctl/profile"
	"github.com/askctl/askctl/protocol"
	"github.com/askctl/askctl/scenarios"
	"github.com/askctl/askctl/surface"
	"github.com/askctl/askctl/transcript"
)

// TestInvariants: a session that keeps every rule breaks none, and each
// way of breaking one is named by the requirement that states it, and by
// no other.
func TestInvariants(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	const input = `{"questions":[{"question":"Which one?","header":"Pick","options":[{"label":"A","description":"a"},{"label":"B","description":"b"}],"multiSelect":true},{"question":"Why?","header":"Why","options":[{"label":"C","description":"c"},{"label":"D","description":"d"}],"multiSelect":false}]}`
	ask := func(id string, ms int) transcript.Record {
		return transcript.Record{T: at(ms), Dir: transcript.FromCLI, Msg: fmt.Appendf(nil, `{"type":"control_request","request_id":%q,"request":{"subtype":"can_use_tool","tool_name":"AskUserQuestion","tool_use_id":"tu_%s","input":%s}}`, id, id, input)}
	}
	respond := func(id string, ms int, result string) transcript.Record {
		return transcript.Record{T: at(ms), Dir: transcript.ToCLI, Msg: fmt.Appendf(nil, `{"type":"control_response","response":{"subtype":"success","request_id":%q,"response":%s}}`, id, result)}
	}
	allow := func(answers string) string {
		return fmt.Sprintf(`{"behavior":"allow","updatedInput":{"questions":%s,"answers":%s}}`, input[len(`{"questions":`):len(input)-1], answers)
	}
	good := allow(`{"Which one?":"B, A","Why?":"C"}`)
	cancel := func(id string, ms int) transcript.Record {
		return transcript.Record{T: at(ms), Dir: transcript.FromCLI, Msg: fmt.Appendf(nil, `{"type":"control_cancel_request","request_id":%q}`, id)}
	}
	// A resumed agent process, and the first prompt it is given.
	resume := func(ms int) transcript.Record {
		return transcript.Record{T: at(ms), Event: events.EventHello, Msg: []byte(`{"resume":"cli-1"}`)}
	}
	prompt := func(ms int, text string) transcript.Record {
		return transcript.Record{T: at(ms), Dir: transcript.ToCLI, Msg: fmt.Appendf(nil, `{"type":"user","message":{"role":"user","content":%q}}`, text)}
	}
	redelivered := `The user answered: "Which one?": "B, A"; "Why?": "C". Go on.`
	q := func(conn, typ, qid string, seq int64) surface.Event {
		return surface.Event{Conn: conn, Type: typ, QuestionID: qid, Seq: seq}
	}
	for _, c := range []struct {
		name    string
		records []transcript.Record
		surface []surface.Event
		other   []surface.Event // the surface events of a second session, s2 (id s_2)
		want    []string
		// noReconnect: the profile does not declare reconnect, which
		// UI-STATUS's rules need.
		noReconnect bool
	}{
		{name: "every rule kept",
			records: []transcript.Record{ask("r1", 0), respond("r1", 500, good), ask("r2", 600), respond("r2", 2300, `{"behavior":"deny","message":"The question timed out"}`)},
			surface: []surface.Event{q("main", surface.EventQuestion, "q_1", 1), q("main", surface.EventAnswered, "q_1", 2), q("main", surface.EventQuestion, "q_2", 3), q("c2", surface.EventQuestion, "q_2", 0), q("c2", surface.EventExpired, "q_2", 4)},
			other:   []surface.Event{q("main", surface.EventQuestion, "q_9", 5)}},
		{name: "a resume telling again an answer the agent had", records: []transcript.Record{ask("r1", 0), respond("r1", 100, good), resume(900), prompt(950, redelivered)},
			want: []string{"UI-PERSIST"}},
		{name: "a resume delivering the answer the agent lacked", records: []transcript.Record{ask("r1", 0), respond("r1", 100, good), ask("r2", 200), cancel("r2", 300), resume(900), prompt(950, redelivered)}},
		{name: "a resume whose later prompt recalls an answer", records: []transcript.Record{ask("r1", 0), respond("r1", 100, good), resume(900), prompt(950, "Go on."), prompt(990, redelivered)}},
		{name: "two responses", records: []transcript.Record{ask("r1", 0), respond("r1", 100, good), respond("r1", 200, good)}, want: []string{"SDK-LATE-ANSWER"}},
		{name: "allow after a withdrawal", records: []transcript.Record{ask("r1", 0), cancel("r1", 100), respond("r1", 200, good)}, want: []string{"SDK-CANCEL"}},
		{name: "a library's deny after a withdrawal", records: []transcript.Record{ask("r1", 0), cancel("r1", 100), respond("r1", 200, `{"behavior":"deny","message":"Permission request cancelled"}`)}},
		{name: "a partial set", records: []transcript.Record{ask("r1", 0), respond("r1", 100, allow(`{"Which one?":"A"}`))}, want: []string{"SDK-ANSWER-ALL"}},
		{name: "a blank answer", records: []transcript.Record{ask("r1", 0), respond("r1", 100, allow(`{"Which one?":"A","Why?":"  "}`))}, want: []string{"SDK-NO-EMPTY"}},
		{name: "labels as an array", records: []transcript.Record{ask("r1", 0), respond("r1", 100, allow(`{"Which one?":["A","B"],"Why?":"C"}`))}, want: []string{"SDK-ANSWER-MULTI"}},
		{name: "keyed by index", records: []transcript.Record{ask("r1", 0), respond("r1", 100, allow(`{"q_0":"A","Which one?":"A","Why?":"C"}`))}, want: []string{"SDK-ANSWER-SINGLE"}},
		{name: "answers that are no object", records: []transcript.Record{ask("r1", 0), respond("r1", 100, allow(`"B, A"`))}, want: []string{"SDK-ANSWER-SINGLE"}},
		{name: "a deny with junk beside its message", records: []transcript.Record{ask("r1", 0), respond("r1", 100, `{"behavior":"deny","message":"skipped","updatedInput":"junk"}`)}},
		{name: "questions changed", records: []transcript.Record{ask("r1", 0), respond("r1", 100, `{"behavior":"allow","updatedInput":{"questions":[],"answers":{"Which one?":"A","Why?":"C"}}}`)}, want: []string{"SDK-ANSWER-SINGLE"}},
		{name: "a deny without a message", records: []transcript.Record{ask("r1", 0), respond("r1", 100, `{"behavior":"deny","message":" "}`)}, want: []string{"SDK-SKIP-DENY"}},
		{name: "neither allow nor deny", records: []transcript.Record{ask("r1", 0), respond("r1", 100, `{"behavior":"ask"}`)}, want: []string{"SDK-ANSWER-SINGLE"}},
		{name: "a deadline moved later", records: []transcript.Record{ask("r1", 0), respond("r1", 3500, `{"behavior":"deny","message":"timed out"}`)}, want: []string{"SDK-TIMEOUT"}},
		{name: "a deadline run from before the ask", records: []transcript.Record{ask("r1", 0), respond("r1", 900, `{"behavior":"deny","message":"The user did not respond in time"}`)}, want: []string{"SDK-TIMEOUT"}},
		{name: "another session's question", records: []transcript.Record{ask("r1", 0)},
			surface: []surface.Event{q("main", surface.EventQuestion, "q_1", 1), q("main", surface.EventQuestion, "q_9", 2)}, other: []surface.Event{q("main", surface.EventQuestion, "q_9", 7)}, want: []string{"SDK-ISOLATION"}},
		{name: "another session's event", records: []transcript.Record{ask("r1", 0)},
			surface: []surface.Event{q("main", surface.EventQuestion, "q_1", 1), {Conn: "main", Type: surface.EventStatus, Session: "s_2"}}, want: []string{"SDK-ISOLATION"}},
		{name: "a status waiting on another session's question", records: []transcript.Record{ask("r1", 0)},
			surface: []surface.Event{q("main", surface.EventQuestion, "q_1", 1), {Conn: "main", Type: surface.EventStatus, Waiting: ptr(true), PendingID: "q_9"}},
			other:   []surface.Event{q("main", surface.EventQuestion, "q_9", 7)}, want: []string{"SDK-ISOLATION"}},
		{name: "a status that says nobody waits, while the question waits", records: []transcript.Record{ask("r1", 0)},
			surface: []surface.Event{q("main", surface.EventQuestion, "q_1", 1), {Conn: "main", Type: surface.EventStatus, Waiting: ptr(false)}}, want: []string{"UI-STATUS"}},
		{name: "a status that says nobody waits, where the profile declares no reconnect", records: []transcript.Record{ask("r1", 0)},
			surface: []surface.Event{q("main", surface.EventQuestion, "q_1", 1), {Conn: "main", Type: surface.EventStatus, Waiting: ptr(false)}}, noReconnect: true},
		{name: "a status that says nobody waits, heard last by a connection that closed", records: []transcript.Record{ask("r1", 0)},
			surface: []surface.Event{q("main", surface.EventQuestion, "q_1", 1), {Conn: "main", Type: surface.EventStatus, Waiting: ptr(false)}, {Conn: "main", Type: surface.EventClosed}}},
		{name: "a status that says nobody waits, on the connection shown the question", records: []transcript.Record{ask("r1", 0)},
			surface: []surface.Event{q("c2", surface.EventQuestion, "q_1", 1), {Conn: "main", Type: surface.EventStatus, Waiting: ptr(false)}, {Conn: "c2", Type: surface.EventStatus, Waiting: ptr(false)}}, want: []string{"UI-STATUS"}},
		{name: "nobody waits, told before the end but after the agent's response", records: []transcript.Record{ask("r1", 0), respond("r1", 100, good)},
			surface: []surface.Event{q("main", surface.EventQuestion, "q_1", 1), {Conn: "main", Type: surface.EventStatus, Waiting: ptr(false)}}},
		{name: "a stale status, then the right one", records: []transcript.Record{ask("r1", 0)},
			surface: []surface.Event{q("main", surface.EventQuestion, "q_1", 1), {Conn: "main", Type: surface.EventStatus, Waiting: ptr(false)}, {Conn: "main", Type: surface.EventStatus, Waiting: ptr(true), PendingID: "q_1"}}},
		{name: "nobody waits, the question told ended", records: []transcript.Record{ask("r1", 0)},
			surface: []surface.Event{q("main", surface.EventQuestion, "q_1", 1), q("main", surface.EventAnswered, "q_1", 2), {Conn: "main", Type: surface.EventStatus, Waiting: ptr(false)}}},
		{name: "nobody waits, then the question told ended", records: []transcript.Record{ask("r1", 0)},
			surface: []surface.Event{q("main", surface.EventQuestion, "q_1", 1), {Conn: "main", Type: surface.EventStatus, Waiting: ptr(false)}, q("main", surface.EventExpired, "q_1", 2)}},
		{name: "nobody waits, told before the question", records: []transcript.Record{ask("r1", 0)},
			surface: []surface.Event{{Conn: "main", Type: surface.EventStatus, Waiting: ptr(false)}, q("main", surface.EventQuestion, "q_1", 1)}},
		{name: "nobody waits, the agent withdrew", records: []transcript.Record{ask("r1", 0), cancel("r1", 100)},
			surface: []surface.Event{q("main", surface.EventQuestion, "q_1", 1), {Conn: "main", Type: surface.EventStatus, Waiting: ptr(false)}}},
		{name: "an event id twice", records: []transcript.Record{ask("r1", 0)},
			surface: []surface.Event{q("main", surface.EventQuestion, "q_1", 1), {Conn: "main", Type: surface.EventStatus, Seq: 1}}, want: []string{"UI-RECONNECT-REPLAY"}},
		{name: "a question shown twice", records: []transcript.Record{ask("r1", 0)},
			surface: []surface.Event{q("main", surface.EventQuestion, "q_1", 0), q("main", surface.EventQuestion, "q_1", 0)}, want: []string{"UI-RECONNECT-REPLAY"}},
		{name: "a question shown after it ended", records: []transcript.Record{ask("r1", 0), respond("r1", 100, good)},
			surface: []surface.Event{q("main", surface.EventQuestion, "q_1", 0), q("main", surface.EventAnswered, "q_1", 0), q("main", surface.EventQuestion, "q_1", 0)}, want: []string{"UI-RECONNECT-REPLAY"}},
		{name: "a question shown after it ended, to a connection that had not seen it", records: []transcript.Record{ask("r1", 0), respond("r1", 100, good)},
			surface: []surface.Event{q("c2", surface.EventAnswered, "q_1", 0), q("c2", surface.EventQuestion, "q_1", 0)}, want: []string{"UI-RECONNECT-REPLAY"}},
		{name: "an end told twice", records: []transcript.Record{ask("r1", 0), respond("r1", 100, good)},
			surface: []surface.Event{q("main", surface.EventQuestion, "q_1", 0), q("main", surface.EventAnswered, "q_1", 0), q("main", surface.EventAnswered, "q_1", 0)}, want: []string{"UI-RECONNECT-REPLAY"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newTestEnv()
			e.bridge.profile = &profile.Profile{Capabilities: profile.Capabilities{Timeout: surface.Duration(2 * time.Second)}}
			e.st.reconnects = !c.noReconnect
			s := newSessionState("s1", "a1", nil, false)
			s.id = "s_1"
			e.st.sessions["s1"], e.st.byAgent["a1"] = s, s
			for _, r := range c.records {
				r.Session = "a1"
				e.onRecord(r)
			}
			for _, ev := range c.surface {
				s.show(ev)
			}
			if c.other != nil {
				o := newSessionState("s2", "a2", nil, false)
				o.id = "s_2"
				e.st.sessions["s2"], e.st.byAgent["a2"] = o, o
				for _, ev := range c.other {
					o.show(ev)
				}
			}
			var got []string
			for _, v := range e.Invariants("s1") {
				if !slices.Contains(got, v.Requirement) {
					got = append(got, v.Requirement)
				}
				if !strings.HasPrefix(v.Text, "session s1: ") {
					t.Errorf("%q does not name its session", v.Text)
				}
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("broken rules %v, want %v: %v", got, c.want, e.Invariants("s1"))
			}
		})
	}
	// After a restart the timing rules do not apply: the agent died with
	// the bridge, and a late answer resumes it.
	e := newTestEnv()
	e.bridge.profile = &profile.Profile{Capabilities: profile.Capabilities{Timeout: surface.Duration(2 * time.Second)}}
	s := newSessionState("s1", "a1", nil, false)
	e.st.sessions["s1"], e.st.byAgent["a1"] = s, s
	e.st.restarts = []time.Time{at(1000)}
	for _, r := range []transcript.Record{ask("r1", 0), respond("r1", 5000, good)} {
		r.Session = "a1"
		e.onRecord(r)
	}
	if vs := e.Invariants(); len(vs) != 0 {
		t.Errorf("after a restart: %v", vs)
	}
}

func ptr[T any](v T) *T { return &v }

// TestRequestsByTheirTexts: a question shown is the agent's request that
// asks its texts, whatever order the two calls of one model response
// showed in; a surface that shows other texts is matched by order.
func TestRequestsByTheirTexts(t *testing.T) {
	ask := func(id, text string) transcript.Record {
		return transcript.Record{Session: "a1", Dir: transcript.FromCLI, Msg: fmt.Appendf(nil, `{"type":"control_request","request_id":%q,"request":{"subtype":"can_use_tool","tool_name":"AskUserQuestion","tool_use_id":"tu_%s","input":{"questions":[{"question":%q,"header":"H","options":[{"label":"A","description":"a"},{"label":"B","description":"b"}],"multiSelect":false}]}}}`, id, id, text)}
	}
	shown := func(qid, text string) surface.Event {
		return surface.Event{Conn: "main", Type: surface.EventQuestion, QuestionID: qid, Questions: []protocol.Question{{Question: text}}}
	}
	for _, c := range []struct {
		name   string
		events []surface.Event
		want   map[string]string // question id → request id
	}{
		{"in order", []surface.Event{shown("q_1", "One?"), shown("q_2", "Two?")}, map[string]string{"q_1": "r1", "q_2": "r2"}},
		{"the second shown first", []surface.Event{shown("q_2", "Two?"), shown("q_1", "One?")}, map[string]string{"q_1": "r1", "q_2": "r2"}},
		{"texts changed: by order", []surface.Event{shown("q_x", "Two"), shown("q_y", "One")}, map[string]string{"q_x": "r1", "q_y": "r2"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newTestEnv()
			s := newSessionState("s1", "a1", nil, false)
			e.st.sessions["s1"], e.st.byAgent["a1"] = s, s
			e.onRecord(ask("r1", "One?"))
			e.onRecord(ask("r2", "Two?"))
			for _, ev := range c.events {
				s.show(ev)
			}
			for qid, want := range c.want {
				if req, ok := s.requestOf(qid); !ok || req.ID != want {
					t.Errorf("request of %s: %v %v, want %s", qid, req, ok, want)
				}
			}
		})
	}
}

// One request is one question id on the surfaces: a request shown under a
// second id breaks UI-RECONNECT-REPLAY (UI-PERSIST across a restart); two
// requests asking the same, and texts a surface shows otherwise, do not.
func TestOneIDPerRequest(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ask := func(id, text string) transcript.Record {
		return transcript.Record{Session: "a1", Dir: transcript.FromCLI, Msg: fmt.Appendf(nil, `{"type":"control_request","request_id":%q,"request":{"subtype":"can_use_tool","tool_name":"AskUserQuestion","tool_use_id":"tu_%s","input":{"questions":[{"question":%q,"header":"H","options":[{"label":"A","description":"a"},{"label":"B","description":"b"}],"multiSelect":false}]}}}`, id, id, text)}
	}
	shown := func(qid, text string, s int) surface.Event {
		return surface.Event{T: t0.Add(time.Duration(s) * time.Second), Conn: "main", Type: surface.EventQuestion, QuestionID: qid, Questions: []protocol.Question{{Question: text}}}
	}
	on := func(conn string, ev surface.Event) surface.Event { ev.Conn = conn; return ev }
	for _, c := range []struct {
		name    string
		asks    []transcript.Record
		events  []surface.Event
		restart bool // the bridge restarted between second 1 and 2
		want    string
	}{
		{"one id each", []transcript.Record{ask("r1", "One?"), ask("r2", "Two?")}, []surface.Event{shown("q_1", "One?", 0), shown("q_2", "Two?", 2)}, false, ""},
		{"a request under a second id", []transcript.Record{ask("r1", "One?")}, []surface.Event{shown("q_1", "One?", 0), shown("q_2", "One?", 2)}, false, "UI-RECONNECT-REPLAY"},
		{"a second id after a restart", []transcript.Record{ask("r1", "One?")}, []surface.Event{shown("q_1", "One?", 0), shown("q_2", "One?", 2)}, true, "UI-PERSIST"},
		{"the same id again, on another connection", []transcript.Record{ask("r1", "One?")}, []surface.Event{shown("q_1", "One?", 0), on("c2", shown("q_1", "One?", 2))}, false, ""},
		{"two requests asking the same", []transcript.Record{ask("r1", "One?"), ask("r2", "One?")}, []surface.Event{shown("q_1", "One?", 0), shown("q_2", "One?", 2)}, false, ""},
		{"texts shown otherwise", []transcript.Record{ask("r1", "One?"), ask("r2", "Two?")}, []surface.Event{shown("q_x", "Two", 0), shown("q_y", "Two", 2)}, false, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newTestEnv()
			s := newSessionState("s1", "a1", nil, false)
			e.st.sessions["s1"], e.st.byAgent["a1"] = s, s
			for _, r := range c.asks {
				e.onRecord(r)
			}
			if c.restart {
				e.st.restarts = append(e.st.restarts, t0.Add(1500*time.Millisecond))
			}
			for _, ev := range c.events {
				s.show(ev)
			}
			var got []string
			for _, v := range e.Invariants() {
				got = append(got, v.Requirement)
			}
			met, _ := OneIDPerRequest().Check(&e.st)
			switch {
			case c.want == "" && (len(got) > 0 || met != Met):
				t.Errorf("violations %v, OneIDPerRequest %v; want none, met", got, met)
			case c.want != "" && (len(got) != 1 || got[0] != c.want || met == Met):
				t.Errorf("violations %v, OneIDPerRequest %v; want %s, unmet", got, met, c.want)
			}
		})
	}
}

// TestExpiryOnTime: a connection is told a question expired within 1 s of
// its deadline, or of its own opening when it opened later, whatever
// restarts came between; what it hears after its stream was cut, or
// before its latest opening, is not judged.
func TestExpiryOnTime(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	ask := transcript.Record{T: at(0), Session: "a1", Dir: transcript.FromCLI, Msg: []byte(`{"type":"control_request","request_id":"r1","request":{"subtype":"can_use_tool","tool_name":"AskUserQuestion","tool_use_id":"tu_1","input":{"questions":[{"question":"One?","header":"H","options":[{"label":"A","description":"a"},{"label":"B","description":"b"}],"multiSelect":false}]}}}`)}
	for _, c := range []struct {
		name            string
		opened, expired int // ms after the ask
		cut             int // ms after the ask the stream was cut (0: never)
		back            int // ms after the ask it came back (0: never)
		restart         bool
		want            bool
	}{
		{name: "on time", opened: 100, expired: 2100},
		{name: "within the second", opened: 100, expired: 2900},
		{name: "late", opened: 100, expired: 3200, want: true},
		{name: "late after a restart", opened: 1500, expired: 3500, restart: true, want: true},
		{name: "a replay as the connection opens past the deadline", opened: 5000, expired: 5200, restart: true},
		{name: "a replay long after the connection opened past the deadline", opened: 5000, expired: 6500, want: true},
		{name: "heard after the stream was cut", opened: 100, cut: 1000, expired: 4000},
		{name: "late after the stream came back", opened: 100, cut: 500, back: 1500, expired: 3200, want: true},
		{name: "a replay as the stream comes back past the deadline", opened: 100, cut: 500, back: 4000, expired: 4100},
		{name: "heard before the latest opening", opened: 3000, expired: 2500},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newTestEnv()
			e.bridge.profile = &profile.Profile{Capabilities: profile.Capabilities{Timeout: surface.Duration(2 * time.Second)}}
			s := newSessionState("s1", "a1", nil, false)
			e.st.sessions["s1"], e.st.byAgent["a1"] = s, s
			e.onRecord(ask)
			if c.restart {
				e.st.restarts = []time.Time{at(1000)}
			}
			d := e.st.driver("s1")
			d.opened["main"] = at(c.opened)
			if c.cut > 0 {
				d.cut["main"] = at(c.cut)
			}
			if c.back > 0 {
				d.back["main"] = at(c.back)
			}
			s.show(surface.Event{T: at(min(c.opened, c.expired)), Conn: "main", Type: surface.EventQuestion, QuestionID: "q_1", Questions: []protocol.Question{{Question: "One?"}}})
			s.show(surface.Event{T: at(c.expired), Conn: "main", Type: surface.EventExpired, QuestionID: "q_1"})
			var got []string
			for _, v := range e.Invariants() {
				got = append(got, v.Requirement)
			}
			if want := []string(nil); c.want {
				want = []string{"SDK-TIMEOUT"}
				if !slices.Equal(got, want) {
					t.Errorf("violations %v, want %v", got, want)
				}
			} else if len(got) > 0 {
				t.Errorf("violations %v, want none: %v", got, e.Invariants())
			}
		})
	}
}

// TestMCPAltered: a question shown with the white space of the session's
// mcp question changed is told apart (the bridge altered it); the same
// text, or another question, is not.
func TestMCPAltered(t *testing.T) {
	s := newSessionState("s1", "a1", &scenarios.Scenario{Steps: []scenarios.Step{{Kind: scenarios.KindMCP, Questions: []protocol.Question{{Question: "Which one?  \n"}}}}}, true)
	for shown, want := range map[string]bool{"Which one?": true, "Which  one?  \n": true, "Which one?  \n": false, "Which two?": false} {
		ev := surface.Event{Type: surface.EventQuestion, Questions: []protocol.Question{{Question: shown}}}
		if _, got := s.mcpAltered(ev); got != want {
			t.Errorf("shown %q: altered %v, want %v", shown, got, want)
		}
	}
}
