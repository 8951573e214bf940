// Package fakeapi is a stand-in for the Anthropic Messages API that plays the
// model's side of a scenario, so the real claude CLI can run a scenario
// offline and for free, sending the real control_requests.
//
// Point the CLI at it with ANTHROPIC_BASE_URL=<URL>, any ANTHROPIC_API_KEY,
// and CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1. It answers POST /v1/messages
// (streaming SSE or plain JSON) and POST /v1/messages/count_tokens. Which
// model response to give is read from the conversation the CLI sends: the
// turn is the number of prompts in it, and the place in the turn is how many
// of the turn's tool calls are already in it. So retries and extra requests
// get the same answer, and nothing depends on request order.
//
// A request it cannot place, or any other path, gets an error reply that says
// why, and is logged; none hangs. One request past a turn's end is placed:
// the one that follows the CLI's rejection of the turn's last tool call (the
// real CLI, its stdin closed while it asked, sometimes asks the model about
// the rejection before it exits); the model says it stops.
package fakeapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/askctl/askctl/protocol"
	"github.com/askctl/askctl/scenarios"
	"github.com/askctl/askctl/transcript"
	"github.com/tidwall/gjson"
)

// Response is one model response: text blocks, then its tool calls (more
// than one where the scenario's steps run in parallel).
type Response struct {
	Text  []string
	Tools []Tool
}

// Tool is a tool_use block.
type Tool struct {
	ID    string
	Name  string
	Input json.RawMessage
	// Delay is how long after the block before it the model streams this
	// one (a parallel step's delay).
	Delay time.Duration
}

// Model is a scenario's model side: the responses of each turn, in order.
type Model struct {
	Name  string
	Turns [][]Response
}

// ModelFor splits a scenario's steps into model responses, as fakeclaude
// plays them: text steps followed by a tool call form one response.
func ModelFor(sc *scenarios.Scenario) Model {
	m := Model{Name: "claude-sonnet-4-5"}
	for _, turn := range sc.Turns() {
		var rs []Response
		var cur Response
		for i := 1; i < len(turn); i++ {
			st := &turn[i]
			switch st.Kind {
			case scenarios.KindText:
				cur.Text = append(cur.Text, st.Text)
			case scenarios.KindAsk, scenarios.KindTool, scenarios.KindMCP:
				t := Tool{ID: st.ToolUseID(), Name: protocol.ToolAskUserQuestion, Input: st.Input(), Delay: st.Delay}
				if st.Kind == scenarios.KindTool {
					t.Name = st.Tool.Name
				} else if st.Kind == scenarios.KindMCP {
					t.Name = st.MCP.Name()
				}
				if st.Parallel && len(rs) > 0 && len(cur.Text) == 0 {
					// In the response of the call before it.
					rs[len(rs)-1].Tools = append(rs[len(rs)-1].Tools, t)
					continue
				}
				cur.Tools = []Tool{t}
				rs, cur = append(rs, cur), Response{}
			}
		}
		if len(cur.Text) > 0 {
			rs = append(rs, cur)
		}
		m.Turns = append(m.Turns, rs)
	}
	return m
}

// Server serves a Model over HTTP.
type Server struct {
	model Model
	log   transcript.Sink

	mu       sync.Mutex
	requests int
	errors   []string
}

// New returns a server for the scenario. log, if not nil, receives a note for
// every request and an error record for every request it could not serve.
func New(sc *scenarios.Scenario, log transcript.Sink) *Server {
	return &Server{model: ModelFor(sc), log: log}
}

// Errors returns what went wrong so far, one line a request.
func (s *Server) Errors() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.errors...)
}

// Requests is the number of requests served.
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}

func (s *Server) record(r transcript.Record) {
	if s.log != nil {
		_ = s.log.Write(r)
	}
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.requests++
	s.mu.Unlock()
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		s.fail(w, http.StatusBadRequest, "invalid_request_error", "reading the request body: %v", err)
		return
	}
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages":
		s.messages(w, body)
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages/count_tokens":
		writeJSON(w, http.StatusOK, map[string]any{"input_tokens": 10 + len(body)/4})
	default:
		s.fail(w, http.StatusNotFound, "not_found_error", "askctl fake model API serves POST /v1/messages and /v1/messages/count_tokens, not %s %s", r.Method, r.URL.Path)
	}
}

func (s *Server) fail(w http.ResponseWriter, status int, kind, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	s.mu.Lock()
	s.errors = append(s.errors, msg)
	s.mu.Unlock()
	s.record(transcript.Record{Event: transcript.EventError, Kind: "model-api", Text: msg})
	writeJSON(w, status, map[string]any{"type": "error", "error": map[string]any{"type": kind, "message": msg}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", fmt.Sprint(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func (s *Server) messages(w http.ResponseWriter, body []byte) {
	if !gjson.ValidBytes(body) {
		s.fail(w, http.StatusBadRequest, "invalid_request_error", "the request body is not JSON")
		return
	}
	req := gjson.ParseBytes(body)
	turn, pos, err := s.place(req.Get("messages"))
	var resp Response
	switch {
	case err == nil:
		resp = s.model.Turns[turn][pos]
	case errors.Is(err, errPastRejected):
		// The CLI rejected the turn's last tool call (stdin closed while it
		// asked, an interrupt) and, racing its own exit, asks what the
		// model says to that. A real model answers; the scenario has
		// nothing more to say, so the model stops.
		resp = Response{Text: []string{StopAfterRejection}}
	default:
		s.fail(w, http.StatusBadRequest, "invalid_request_error", "askctl fake model API: %v", err)
		return
	}
	model := req.Get("model").String()
	if model == "" {
		model = s.model.Name
	}
	s.record(transcript.Record{Event: transcript.EventNote, Kind: "model-api", Text: fmt.Sprintf("turn %d, response %d: %s", turn+1, pos+1, resp.describe())})
	if req.Get("stream").Bool() {
		stream(w, model, resp)
		return
	}
	writeJSON(w, http.StatusOK, message(model, resp))
}

// place finds the turn and the response within it that the conversation asks
// for.
func (s *Server) place(msgs gjson.Result) (turn, pos int, err error) {
	prompts := 0
	seen := map[string]bool{}
	for _, m := range msgs.Array() {
		c := m.Get("content")
		if m.Get("role").String() == "user" {
			if c.Type == gjson.String {
				prompts++
				continue
			}
			for _, b := range c.Array() {
				if b.Get("type").String() == "text" && isPrompt(b.Get("text").String()) {
					prompts++
				}
			}
			continue
		}
		for _, b := range c.Array() {
			if b.Get("type").String() == "tool_use" {
				seen[b.Get("id").String()] = true
			}
		}
	}
	if prompts == 0 {
		return 0, 0, fmt.Errorf("the conversation has no user prompt")
	}
	turn = prompts - 1
	if turn >= len(s.model.Turns) {
		return 0, 0, fmt.Errorf("the conversation is in turn %d, and the scenario has %d", turn+1, len(s.model.Turns))
	}
	rs := s.model.Turns[turn]
	for _, r := range rs {
		if len(r.Tools) > 0 && seen[r.Tools[0].ID] {
			pos++
		}
	}
	if pos >= len(rs) && rejected(msgs) {
		return turn, pos, errPastRejected
	}
	if pos >= len(rs) {
		return 0, 0, fmt.Errorf("turn %d has %d model responses, and the conversation asks for response %d (the scenario ends the turn with a tool call; add a text step for the model's last word)", turn+1, len(rs), pos+1)
	}
	return turn, pos, nil
}

// errPastRejected is place's error for a request past a turn's last response
// that follows a rejected tool call.
var errPastRejected = errors.New("the turn's last tool call was rejected")

// StopAfterRejection is the model's reply to a rejected last tool call.
const StopAfterRejection = "Understood: I will stop here and wait."

// rejected tells whether the conversation ends with the CLI's rejection of
// a tool call: a user message whose tool results are all errors.
func rejected(msgs gjson.Result) bool {
	all := msgs.Array()
	if len(all) == 0 {
		return false
	}
	last := all[len(all)-1]
	if last.Get("role").String() != "user" {
		return false
	}
	n := 0
	for _, b := range last.Get("content").Array() {
		if b.Get("type").String() != "tool_result" {
			continue
		}
		if !b.Get("is_error").Bool() {
			return false
		}
		n++
	}
	return n > 0
}

// isPrompt tells a person's text from the CLI's own additions.
func isPrompt(text string) bool {
	return !strings.HasPrefix(text, "<system-reminder>") && !strings.HasPrefix(text, "[Request interrupted")
}

func (r Response) describe() string {
	var parts []string
	for _, t := range r.Text {
		parts = append(parts, fmt.Sprintf("text %q", t))
	}
	for _, t := range r.Tools {
		parts = append(parts, "tool_use "+t.Name)
	}
	return strings.Join(parts, ", ")
}

func (r Response) blocks() []map[string]any {
	var bs []map[string]any
	for _, t := range r.Text {
		bs = append(bs, map[string]any{"type": "text", "text": t})
	}
	for _, t := range r.Tools {
		bs = append(bs, map[string]any{"type": "tool_use", "id": t.ID, "name": t.Name, "input": t.Input})
	}
	return bs
}

func (r Response) stopReason() string {
	if len(r.Tools) > 0 {
		return "tool_use"
	}
	return "end_turn"
}

var msgSeq struct {
	sync.Mutex
	n int
}

func messageID() string {
	msgSeq.Lock()
	defer msgSeq.Unlock()
	msgSeq.n++
	return fmt.Sprintf("msg_askctl_%d_%d", time.Now().UnixNano()%1e6, msgSeq.n)
}

// usage has the two members the scripted model of the fixture captures sent;
// the CLI copies them into its assistant messages.
func usage(out int) map[string]any {
	return map[string]any{"input_tokens": 10, "output_tokens": out}
}

func message(model string, r Response) map[string]any {
	return map[string]any{"id": messageID(), "type": "message", "role": "assistant", "model": model,
		"content": r.blocks(), "stop_reason": r.stopReason(), "stop_sequence": nil, "usage": usage(11)}
}

// stream writes the response as the Messages API's server-sent events.
func stream(w http.ResponseWriter, model string, r Response) {
	var b bytes.Buffer
	ev := func(name string, data map[string]any) {
		d, _ := json.Marshal(data)
		fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", name, d)
	}
	// A tool_use the model writes later (a delay) is streamed as it comes:
	// what came before it is sent first.
	delayed := slices.ContainsFunc(r.Tools, func(t Tool) bool { return t.Delay > 0 })
	flush := func() {}
	if delayed {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		w.WriteHeader(http.StatusOK)
		flush = func() {
			_, _ = w.Write(b.Bytes())
			b.Reset()
			if f, ok := w.(http.Flusher); ok {
				f.Flush()
			}
		}
	}
	ev("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": messageID(), "type": "message", "role": "assistant", "model": model, "content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": usage(1)}})
	tools := 0
	for i, blk := range r.blocks() {
		if blk["type"] == "tool_use" {
			if d := r.Tools[tools].Delay; d > 0 {
				flush()
				time.Sleep(d)
			}
			tools++
		}
		switch blk["type"] {
		case "text":
			ev("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "text", "text": ""}})
			ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "text_delta", "text": blk["text"]}})
		case "tool_use":
			ev("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "tool_use", "id": blk["id"], "name": blk["name"], "input": map[string]any{}}})
			ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": string(blk["input"].(json.RawMessage))}})
		}
		ev("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	ev("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": r.stopReason(), "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 11}})
	ev("message_stop", map[string]any{"type": "message_stop"})
	if delayed {
		flush()
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("Content-Length", fmt.Sprint(b.Len()))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b.Bytes())
}
