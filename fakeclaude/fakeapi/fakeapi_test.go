package fakeapi

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/askctl/askctl/scenarios"
	"github.com/tidwall/gjson"
)

func server(t *testing.T, name string) (*Server, *httptest.Server) {
	t.Helper()
	sc, err := scenarios.Builtin(name)
	if err != nil {
		t.Fatal(err)
	}
	s := New(sc, nil)
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return s, ts
}

func post(t *testing.T, url, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

const reminder = `{"type":"text","text":"<system-reminder> env </system-reminder>"}`

func TestPlacesResponsesByConversation(t *testing.T) {
	_, ts := server(t, "ask-sequential")
	url := ts.URL + "/v1/messages?beta=true"
	first := `{"role":"user","content":[` + reminder + `,{"type":"text","text":"Set up storage for the app."}]}`
	tests := []struct{ name, msgs, want string }{
		{"turn start", first, "toolu_01Q1"},
		{"after first answer", first + `,{"role":"assistant","content":[{"type":"tool_use","id":"toolu_01Q1","name":"AskUserQuestion","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_01Q1","content":"x"}]}`, "toolu_01Q2"},
		{"after second", first + `,{"role":"assistant","content":[{"type":"tool_use","id":"toolu_01Q1"}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_01Q1"}]},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_01Q2"}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_01Q2"}]}`, "SQLite with WAL it is."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := post(t, url, `{"model":"m","messages":[`+tt.msgs+`]}`)
			if code != 200 || !strings.Contains(body, tt.want) {
				t.Errorf("status %d body %s, want 200 with %s", code, body, tt.want)
			}
		})
	}
}

func TestStreamsServerSentEvents(t *testing.T) {
	_, ts := server(t, "ask-single")
	code, body := post(t, ts.URL+"/v1/messages", `{"model":"claude-x","stream":true,"messages":[{"role":"user","content":"go"}]}`)
	if code != 200 {
		t.Fatalf("status %d", code)
	}
	var events []string
	var partial string
	for _, l := range strings.Split(body, "\n") {
		if e, ok := strings.CutPrefix(l, "event: "); ok {
			events = append(events, e)
		}
		if d, ok := strings.CutPrefix(l, "data: "); ok && gjson.Get(d, "delta.type").String() == "input_json_delta" {
			partial = gjson.Get(d, "delta.partial_json").String()
		}
	}
	want := "message_start content_block_start content_block_delta content_block_stop message_delta message_stop"
	if got := strings.Join(events, " "); got != want {
		t.Errorf("events %q, want %q", got, want)
	}
	if gjson.Get(partial, "questions.0.question").String() != "Which database should I use?" {
		t.Errorf("tool input %s", partial)
	}
}

func TestErrorsExplain(t *testing.T) {
	s, ts := server(t, "ask-skip-interrupt")
	tests := []struct {
		name, path, body string
		code             int
		want             string
	}{
		{"unknown path", "/v1/complete", `{}`, 404, "serves POST /v1/messages and /v1/messages/count_tokens, not POST /v1/complete"},
		{"not json", "/v1/messages", `nope`, 400, "the request body is not JSON"},
		{"no prompt", "/v1/messages", `{"messages":[{"role":"user","content":[` + reminder + `]}]}`, 400, "the conversation has no user prompt"},
		{"turn ended with a tool call", "/v1/messages", `{"messages":[{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_01A"}]}]}`, 400, "turn 1 has 1 model responses, and the conversation asks for response 2"},
		{"too many turns", "/v1/messages", `{"messages":[{"role":"user","content":"go"},{"role":"user","content":"again"}]}`, 400, "the conversation is in turn 2, and the scenario has 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := post(t, ts.URL+tt.path, tt.body)
			if code != tt.code || !strings.Contains(gjson.Get(body, "error.message").String(), tt.want) {
				t.Errorf("status %d body %s, want %d with %q", code, body, tt.code, tt.want)
			}
		})
	}
	if len(s.Errors()) != len(tests) {
		t.Errorf("logged %d errors, want %d", len(s.Errors()), len(tests))
	}
	if code, body := post(t, ts.URL+"/v1/messages/count_tokens", `{"messages":[]}`); code != 200 || !gjson.Get(body, "input_tokens").Exists() {
		t.Errorf("count_tokens: %d %s", code, body)
	}
}

// TestRejectedLastCall: the real CLI whose stdin closes while it asks may,
// racing its own exit, ask the model what it says to the rejection. The model
// stops; an answered last call past the turn's end is still the scenario's
// error.
func TestRejectedLastCall(t *testing.T) {
	s, ts := server(t, "late-answer")
	conv := func(isError bool) string {
		return fmt.Sprintf(`{"messages":[{"role":"user","content":"Set up storage for the app."},`+
			`{"role":"assistant","content":[{"type":"tool_use","id":"toolu_01L"}]},`+
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_01L","is_error":%t,"content":"The user doesn't want to proceed with this tool use."}]}]}`, isError)
	}
	code, body := post(t, ts.URL+"/v1/messages", conv(true))
	if code != 200 || gjson.Get(body, "stop_reason").String() != "end_turn" || !strings.Contains(body, "stop here") {
		t.Errorf("after a rejection: %d %s, want end_turn with the model stopping", code, body)
	}
	if n := len(s.Errors()); n != 0 {
		t.Errorf("after a rejection: %d errors logged: %v", n, s.Errors())
	}
	code, body = post(t, ts.URL+"/v1/messages", conv(false))
	if code != 400 || !strings.Contains(body, "asks for response 2") {
		t.Errorf("after an answer past the turn's end: %d %s, want 400", code, body)
	}
}
