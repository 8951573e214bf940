// Command chatbot-adapter plays a person in the chatbot example's chat, for
// askctl conformance: it speaks askctl's exec contract (JSON Lines on stdin
// and stdout; see conformance/README.md, "The exec contract") and turns each
// operation into what a person does in the chat. It was written from that
// contract alone, as a bridge's author would write theirs.
//
//   - answer: a reply to each card of the request, typed numbers ("1,3", in
//     the order picked) when the labels are the card's options, else the
//     text itself; the bot's reply says answered, held, refused or nothing
//     (a blank message is dropped: ignored).
//   - An answer to a question this chat does not show, or to a question no
//     card asks, is refused here (not_found, invalid): a person in the chat
//     has no card to reply to, so the chat itself cannot carry it.
//   - skip, raw: unsupported. The chat has no skip, and any text a person
//     types is a free-text answer, never a malformed one.
//   - permit: "yes", or "no: REASON", in reply to a permission prompt.
//   - open: reads the chat's history (the cards still open are replayed as
//     questions, then a status), then follows new messages.
//
// Usage: chatbot-adapter --url http://127.0.0.1:7480
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// message is the chatbot's chat message (the fields this adapter reads).
type message struct {
	N         int             `json:"n"`
	Kind      string          `json:"kind"`
	Text      string          `json:"text"`
	Ask       string          `json:"ask"`
	Card      *card           `json:"card"`
	Tool      string          `json:"tool"`
	Input     json.RawMessage `json:"input"`
	Code      string          `json:"code"`
	StillOpen []string        `json:"still_open"`
	Time      time.Time       `json:"time"`
}

type card struct {
	Index    int      `json:"index"`
	Of       int      `json:"of"`
	Question string   `json:"question"`
	Multi    bool     `json:"multi"`
	Options  []option `json:"options"`
}

type option struct {
	Label       string `json:"label"`
	Description string `json:"description,omitempty"`
}

// question is a question as askctl's exec contract carries it. The chat
// shows no header, so none is told.
type question struct {
	Question    string   `json:"question"`
	Header      string   `json:"header"`
	Options     []option `json:"options"`
	MultiSelect bool     `json:"multiSelect"`
}

type request struct {
	ID         int                 `json:"id"`
	Op         string              `json:"op"`
	Prompt     string              `json:"prompt"`
	Session    string              `json:"session"`
	Conn       string              `json:"conn"`
	QuestionID string              `json:"question_id"`
	Answers    map[string][]string `json:"answers"`
	Allow      bool                `json:"allow"`
	Reason     string              `json:"reason"`
}

type adapter struct {
	url   string
	out   *json.Encoder
	outMu sync.Mutex

	mu    sync.Mutex
	conns map[string]*conn
}

type conn struct {
	chat   string
	cancel context.CancelFunc
}

func main() {
	u := flag.String("url", "", "the chatbot, e.g. http://127.0.0.1:7480")
	flag.Parse()
	if *u == "" {
		fmt.Fprintln(os.Stderr, "chatbot-adapter: --url is required")
		os.Exit(2)
	}
	a := &adapter{url: strings.TrimSuffix(*u, "/"), out: json.NewEncoder(os.Stdout), conns: map[string]*conn{}}
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var req request
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			fmt.Fprintln(os.Stderr, "chatbot-adapter: bad request line:", err)
			os.Exit(1)
		}
		go a.serve(req) // a slow operation never holds up another
	}
}

func (a *adapter) emit(v any) {
	a.outMu.Lock()
	defer a.outMu.Unlock()
	a.out.Encode(v)
}

func (a *adapter) serve(req request) {
	rep, err := a.do(req)
	if rep == nil {
		rep = map[string]any{}
	}
	if err != nil {
		rep["error"] = err.Error()
	}
	rep["id"] = req.ID
	a.emit(rep)
}

// post sends v to the chatbot and decodes its reply into out.
func (a *adapter) post(path string, v, out any) error {
	body, _ := json.Marshal(v)
	resp, err := http.Post(a.url+path, "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		var e struct{ Error string }
		json.NewDecoder(resp.Body).Decode(&e)
		return fmt.Errorf("%s: %s", resp.Status, e.Error)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

func (a *adapter) history(ctx context.Context, chat string, after int, wait time.Duration) ([]message, error) {
	q := url.Values{"after": {strconv.Itoa(after)}, "wait": {wait.String()}}
	req, _ := http.NewRequestWithContext(ctx, "GET", a.url+"/chats/"+url.PathEscape(chat)+"/messages?"+q.Encode(), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("reading chat %s: %s", chat, resp.Status)
	}
	var out struct{ Messages []message }
	return out.Messages, json.NewDecoder(resp.Body).Decode(&out)
}

// asks folds a chat's history into its requests, in order: cards and
// permission prompts by ask, and whether each is done.
type asks struct {
	order []string
	cards map[string][]message
	done  map[string]bool
}

func fold(msgs []message) asks {
	s := asks{cards: map[string][]message{}, done: map[string]bool{}}
	for _, m := range msgs {
		s.add(m)
	}
	return s
}

func (s *asks) add(m message) {
	switch m.Kind {
	case "card", "permission":
		if _, ok := s.cards[m.Ask]; !ok {
			s.order = append(s.order, m.Ask)
		}
		s.cards[m.Ask] = append(s.cards[m.Ask], m)
	case "answered", "expired", "withdrawn":
		s.done[m.Ask] = true
	}
}

// complete: every card of the ask has been posted.
func (s *asks) complete(id string) bool {
	cs := s.cards[id]
	return len(cs) > 0 && (cs[0].Card == nil || len(cs) == cs[0].Card.Of)
}

func (s *asks) questions(id string) []question {
	var out []question
	for _, m := range s.cards[id] {
		if m.Card != nil {
			out = append(out, question{Question: m.Card.Question, Options: m.Card.Options, MultiSelect: m.Card.Multi})
		}
	}
	return out
}

func (s *asks) pending() []string {
	var out []string
	for _, id := range s.order {
		if !s.done[id] && s.complete(id) && s.cards[id][0].Kind == "card" {
			out = append(out, id)
		}
	}
	return out
}

// event tells askctl what a message means on this connection.
func (a *adapter) event(connID, chat string, s *asks, m message) {
	ev := map[string]any{"session_id": chat, "question_id": m.Ask, "time": m.Time}
	switch m.Kind {
	case "card":
		if !s.complete(m.Ask) {
			return
		}
		ev["type"], ev["questions"] = "question", s.questions(m.Ask)
	case "permission":
		ev["type"], ev["tool_name"], ev["input"] = "permission", m.Tool, m.Input
	case "answered", "expired", "withdrawn", "held":
		ev["type"] = m.Kind
	default:
		return
	}
	a.emit(map[string]any{"conn": connID, "event": ev})
}

func (a *adapter) do(req request) (map[string]any, error) {
	ctx := context.Background()
	switch req.Op {
	case "start":
		var out struct{ Chat string }
		if err := a.post("/chats", map[string]string{"text": req.Prompt}, &out); err != nil {
			return nil, err
		}
		return map[string]any{"session": out.Chat}, nil
	case "open":
		msgs, err := a.history(ctx, req.Session, 0, 0)
		if err != nil {
			return nil, err
		}
		s := fold(msgs)
		for _, id := range s.pending() {
			a.event(req.Conn, req.Session, &s, s.cards[id][len(s.cards[id])-1])
		}
		for _, id := range s.order {
			if !s.done[id] && s.cards[id][0].Kind == "permission" {
				a.event(req.Conn, req.Session, &s, s.cards[id][0])
			}
		}
		st := map[string]any{"type": "status", "session_id": req.Session, "waiting_for_user": len(s.pending()) > 0}
		if p := s.pending(); len(p) > 0 {
			st["pending_question_id"] = p[0]
		}
		a.emit(map[string]any{"conn": req.Conn, "event": st})
		cctx, cancel := context.WithCancel(ctx)
		a.mu.Lock()
		a.conns[req.Conn] = &conn{chat: req.Session, cancel: cancel}
		a.mu.Unlock()
		go a.follow(cctx, req.Conn, req.Session, s, len(msgs))
		return nil, nil
	case "close":
		a.mu.Lock()
		c := a.conns[req.Conn]
		delete(a.conns, req.Conn)
		a.mu.Unlock()
		if c != nil {
			c.cancel()
		}
		return nil, nil
	}
	a.mu.Lock()
	c := a.conns[req.Conn]
	a.mu.Unlock()
	if c == nil {
		return map[string]any{"code": "bad_request"}, fmt.Errorf("no open connection %q", req.Conn)
	}
	switch req.Op {
	case "pending":
		msgs, err := a.history(ctx, c.chat, 0, 0)
		if err != nil {
			return nil, err
		}
		s := fold(msgs)
		list := []map[string]any{}
		for _, id := range s.pending() {
			list = append(list, map[string]any{"question_id": id, "session_id": c.chat, "questions": s.questions(id)})
		}
		return map[string]any{"pending": list}, nil
	case "answer":
		return a.answer(ctx, c.chat, req)
	case "permit":
		msgs, err := a.history(ctx, c.chat, 0, 0)
		if err != nil {
			return nil, err
		}
		s := fold(msgs)
		cs := s.cards[req.QuestionID]
		if len(cs) == 0 || cs[0].Kind != "permission" {
			return map[string]any{"code": "not_found"}, fmt.Errorf("the chat shows no permission prompt %s", req.QuestionID)
		}
		text := "yes"
		if !req.Allow {
			text = "no: " + req.Reason
		}
		return a.send(c.chat, cs[0].N, text)
	case "skip":
		return map[string]any{"unsupported": true}, fmt.Errorf("the chat has no skip: a person can only reply to a card")
	case "raw":
		return map[string]any{"unsupported": true}, fmt.Errorf("any text a person types in the chat is a free-text answer: the chat carries no malformed answer")
	}
	return map[string]any{"unsupported": true}, fmt.Errorf("no operation %q", req.Op)
}

// follow long-polls the chat and tells askctl what happens, until close.
func (a *adapter) follow(ctx context.Context, connID, chat string, s asks, after int) {
	for ctx.Err() == nil {
		msgs, err := a.history(ctx, chat, after, 5*time.Second)
		if err != nil {
			if ctx.Err() == nil {
				a.emit(map[string]any{"conn": connID, "event": map[string]any{"type": "closed", "reason": err.Error()}})
			}
			return
		}
		for _, m := range msgs {
			after = m.N
			s.add(m)
			a.event(connID, chat, &s, m)
		}
	}
}

// answer replies to each card of the request the answers name, in order.
func (a *adapter) answer(ctx context.Context, chat string, req request) (map[string]any, error) {
	msgs, err := a.history(ctx, chat, 0, 0)
	if err != nil {
		return nil, err
	}
	s := fold(msgs)
	cards := s.cards[req.QuestionID]
	if len(cards) == 0 {
		return map[string]any{"code": "not_found"}, fmt.Errorf("chat %s shows no question %s: there is no card to reply to", chat, req.QuestionID)
	}
	var rep map[string]any
	for q := range req.Answers {
		if !slices.ContainsFunc(cards, func(m message) bool { return m.Card != nil && m.Card.Question == q }) {
			return map[string]any{"code": "invalid"}, fmt.Errorf("no card of %s asks %q: there is no card to reply to", req.QuestionID, q)
		}
	}
	for _, m := range cards {
		labels, ok := req.Answers[m.Card.Question]
		if !ok {
			continue
		}
		if rep, err = a.send(chat, m.N, typed(m.Card, labels)); err != nil || rep["ignored"] == true {
			return rep, err
		}
	}
	return rep, nil
}

// typed is what a person types for labels: the options' numbers when every
// label is an option, else the text itself.
func typed(c *card, labels []string) string {
	var nums []string
	for _, l := range labels {
		i := slices.IndexFunc(c.Options, func(o option) bool { return o.Label == l })
		if i < 0 {
			return strings.Join(labels, ", ")
		}
		nums = append(nums, strconv.Itoa(i+1))
	}
	return strings.Join(nums, ",")
}

// send replies to message n and reads the bot's reply.
func (a *adapter) send(chat string, n int, text string) (map[string]any, error) {
	var out struct{ Reply *message }
	if err := a.post("/chats/"+url.PathEscape(chat)+"/messages", map[string]any{"text": text, "reply_to": n}, &out); err != nil {
		return nil, err
	}
	switch r := out.Reply; {
	case r == nil:
		return map[string]any{"ignored": true}, nil
	case r.Kind == "error":
		return map[string]any{"code": r.Code}, fmt.Errorf("%s", r.Text)
	case r.Kind == "held":
		return map[string]any{"status": "held", "missing": r.StillOpen}, nil
	}
	return map[string]any{"status": "answered"}, nil
}
