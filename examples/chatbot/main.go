// Command chatbot is a tiny chat-bot bridge for Claude Code, written as a
// third party would write one: from the wire protocol alone, with the
// standard library, importing nothing of askctl. It is askctl's worked
// example of a chat-style surface (see README.md here), and CI runs the
// conformance suite against it through its exec adapter (chatbot-adapter).
//
// A person starts a chat with a first message; the bot spawns claude for
// it. Each AskUserQuestion request becomes one card per question (question,
// numbered options with descriptions; no header: a chat card has no place
// for one). The person answers a card by replying to it: typed numbers
// ("2", or "1,3" for multiSelect, in the order picked) or any other text,
// taken verbatim as a free-text answer. When every card of a request has an
// answer, the bot answers the agent. There is no skip: a chat has no such
// button. Unanswered cards expire after --timeout (the agent gets a deny).
// With --permissions, other tools are put to the person ("yes", or "no:
// why"); without, they are allowed.
//
// The chat network is three HTTP calls on --addr:
//
//	POST /chats {"text":"…"}                         → {"chat":"chat_1"}
//	GET  /chats/ID/messages?after=N&wait=5s          → {"messages":[…]} (long poll)
//	POST /chats/ID/messages {"text":"…","reply_to":N} → {"reply":{…}} (null: ignored)
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Message is one chat message. Card, Permission and the rest are what a
// rich chat client renders (buttons, a thread); Text is what a person reads.
type Message struct {
	N       int    `json:"n"`
	From    string `json:"from"` // bot or person
	Kind    string `json:"kind"` // text, card, permission, held, answered, expired, withdrawn, error, ended
	Text    string `json:"text"`
	Ask     string `json:"ask,omitempty"` // the request a card or notice belongs to (chat_1.a2: unique in the bot)
	ReplyTo int    `json:"reply_to,omitempty"`
	Card    *Card  `json:"card,omitempty"`
	// Permission prompts: the tool and its input.
	Tool  string          `json:"tool,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
	// Code says why a reply was refused (resolved, not_found, invalid).
	Code string `json:"code,omitempty"`
	// StillOpen: the questions of a request still to answer (held).
	StillOpen []string  `json:"still_open,omitempty"`
	Time      time.Time `json:"time"`
}

// Card is one question of a request.
type Card struct {
	Index    int      `json:"index"` // 1-based
	Of       int      `json:"of"`
	Question string   `json:"question"`
	Multi    bool     `json:"multi"`
	Options  []Option `json:"options"`
}

// Option is one numbered choice.
type Option struct {
	Label       string `json:"label"`
	Description string `json:"description,omitempty"`
}

type question struct {
	Question    string   `json:"question"`
	Header      string   `json:"header"`
	Options     []Option `json:"options"`
	MultiSelect bool     `json:"multiSelect"`
}

// ask is a pending request: AskUserQuestion cards, or a permission prompt.
type ask struct {
	id        string // the chat's tag for it (a_1, p_1)
	requestID string
	input     json.RawMessage
	questions []question
	cards     []int          // message numbers of the cards
	answers   map[int]string // card index → answer
	done      string         // answered, expired, withdrawn
	timer     *time.Timer
}

type chat struct {
	id      string
	msgs    []Message
	changed chan struct{} // closed and replaced on every new message
	asks    map[string]*ask
	byCard  map[int]*ask
	stdin   io.WriteCloser
	wmu     sync.Mutex
	ended   bool
}

type bot struct {
	claude      string
	timeout     time.Duration
	permissions bool

	mu    sync.Mutex
	chats map[string]*chat
	seq   int
}

func main() {
	addr := flag.String("addr", "127.0.0.1:7480", "where the chat network listens")
	claude := flag.String("claude", "claude", "the claude CLI to spawn")
	timeout := flag.Duration("timeout", 5*time.Minute, "how long a question waits for an answer")
	perms := flag.Bool("permissions", false, "put other tools to the person (else allow them)")
	flag.Parse()
	b := &bot{claude: *claude, timeout: *timeout, permissions: *perms, chats: map[string]*chat{}}
	l, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("chatbot: listening on http://%s", l.Addr())
	srv := &http.Server{Handler: b.routes(), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, IdleTimeout: time.Minute}
	go func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
		<-sig
		srv.Close()
	}()
	if err := srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
}

func (b *bot) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok\n") })
	mux.HandleFunc("POST /chats", b.newChat)
	mux.HandleFunc("GET /chats/{id}/messages", b.messages)
	mux.HandleFunc("POST /chats/{id}/messages", b.reply)
	return mux
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

func (b *bot) newChat(w http.ResponseWriter, r *http.Request) {
	var in struct{ Text string }
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&in); err != nil || strings.TrimSpace(in.Text) == "" {
		writeJSON(w, 400, map[string]string{"error": "send {\"text\": your first message}"})
		return
	}
	cmd := exec.Command(b.claude, "--output-format", "stream-json", "--verbose", "--input-format", "stream-json", "--permission-prompt-tool", "stdio")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		writeJSON(w, 500, map[string]string{"error": err.Error()})
		return
	}
	b.mu.Lock()
	b.seq++
	c := &chat{id: fmt.Sprintf("chat_%d", b.seq), changed: make(chan struct{}), asks: map[string]*ask{}, byCard: map[int]*ask{}, stdin: stdin}
	b.chats[c.id] = c
	b.postLocked(c, Message{From: "person", Kind: "text", Text: in.Text})
	b.mu.Unlock()
	c.send(map[string]any{"type": "control_request", "request_id": "init_1", "request": map[string]any{"subtype": "initialize", "hooks": nil}})
	c.send(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": in.Text}, "parent_tool_use_id": nil, "session_id": "default"})
	go b.readAgent(c, cmd, stdout)
	writeJSON(w, 200, map[string]string{"chat": c.id})
}

// send writes one line to the agent; a dead agent's pipe error is left to
// readAgent, which sees it exit.
func (c *chat) send(v any) {
	line, _ := json.Marshal(v)
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.stdin.Write(append(line, '\n'))
}

func (c *chat) respond(requestID string, result any) {
	c.send(map[string]any{"type": "control_response", "response": map[string]any{"subtype": "success", "request_id": requestID, "response": result}})
}

// postLocked appends a message to the chat and wakes its readers.
func (b *bot) postLocked(c *chat, m Message) Message {
	m.N = len(c.msgs) + 1
	m.Time = time.Now().UTC()
	c.msgs = append(c.msgs, m)
	close(c.changed)
	c.changed = make(chan struct{})
	return m
}

func (b *bot) readAgent(c *chat, cmd *exec.Cmd, stdout io.Reader) {
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var m struct {
			Type      string `json:"type"`
			RequestID string `json:"request_id"`
			Request   struct {
				Subtype  string          `json:"subtype"`
				ToolName string          `json:"tool_name"`
				Input    json.RawMessage `json:"input"`
			} `json:"request"`
			Result string `json:"result"`
		}
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue
		}
		switch {
		case m.Type == "control_request" && m.Request.Subtype == "can_use_tool" && m.Request.ToolName == "AskUserQuestion":
			b.ask(c, m.RequestID, m.Request.Input)
		case m.Type == "control_request" && m.Request.Subtype == "can_use_tool":
			if !b.permissions {
				c.respond(m.RequestID, map[string]any{"behavior": "allow", "updatedInput": m.Request.Input})
				continue
			}
			b.permission(c, m.RequestID, m.Request.ToolName, m.Request.Input)
		case m.Type == "control_cancel_request":
			b.mu.Lock()
			for _, a := range c.asks {
				if a.requestID == m.RequestID && a.done == "" {
					b.closeLocked(c, a, "withdrawn", "Claude no longer needs this answer.")
				}
			}
			b.mu.Unlock()
		case m.Type == "result":
			c.stdin.Close() // one prompt, one turn
		}
	}
	err := cmd.Wait()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, a := range c.asks {
		if a.done == "" {
			b.closeLocked(c, a, "withdrawn", "Claude has stopped; this question is closed.")
		}
	}
	c.ended = true
	b.postLocked(c, Message{From: "bot", Kind: "ended", Text: fmt.Sprintf("Claude has finished (exit status %d).", code)})
}

func (b *bot) ask(c *chat, requestID string, input json.RawMessage) {
	var in struct{ Questions []question }
	if err := json.Unmarshal(input, &in); err != nil || len(in.Questions) == 0 {
		c.respond(requestID, map[string]any{"behavior": "deny", "message": "The chat could not show this question."})
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	a := &ask{id: fmt.Sprintf("%s.a%d", c.id, len(c.msgs)+1), requestID: requestID, input: input, questions: in.Questions, answers: map[int]string{}}
	c.asks[a.id] = a
	for i, q := range in.Questions {
		var text strings.Builder
		fmt.Fprintf(&text, "%s\n", q.Question)
		for j, o := range q.Options {
			fmt.Fprintf(&text, "%d. %s — %s\n", j+1, o.Label, o.Description)
		}
		if q.MultiSelect {
			text.WriteString("Reply with the numbers you pick, in order (1,3), or your own answer.")
		} else {
			text.WriteString("Reply with a number, or your own answer.")
		}
		m := b.postLocked(c, Message{From: "bot", Kind: "card", Text: text.String(), Ask: a.id,
			Card: &Card{Index: i + 1, Of: len(in.Questions), Question: q.Question, Multi: q.MultiSelect, Options: q.Options}})
		a.cards = append(a.cards, m.N)
		c.byCard[m.N] = a
	}
	b.expireLater(c, a)
}

func (b *bot) permission(c *chat, requestID, tool string, input json.RawMessage) {
	b.mu.Lock()
	defer b.mu.Unlock()
	a := &ask{id: fmt.Sprintf("%s.p%d", c.id, len(c.msgs)+1), requestID: requestID, input: input}
	c.asks[a.id] = a
	m := b.postLocked(c, Message{From: "bot", Kind: "permission", Ask: a.id, Tool: tool, Input: input,
		Text: fmt.Sprintf("Claude wants to use %s: %s\nReply yes, or no: why.", tool, input)})
	a.cards = []int{m.N}
	c.byCard[m.N] = a
	b.expireLater(c, a)
}

func (b *bot) expireLater(c *chat, a *ask) {
	a.timer = time.AfterFunc(b.timeout, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if a.done != "" {
			return
		}
		msg := fmt.Sprintf("The user did not answer within %v: the question timed out.", b.timeout)
		b.closeLocked(c, a, "expired", "Nobody answered in time; the question is closed.")
		go c.respond(a.requestID, map[string]any{"behavior": "deny", "message": msg})
	})
}

// closeLocked ends an ask that got no answer and tells the chat.
func (b *bot) closeLocked(c *chat, a *ask, how, text string) {
	a.done = how
	if a.timer != nil {
		a.timer.Stop()
	}
	b.postLocked(c, Message{From: "bot", Kind: how, Ask: a.id, Text: text})
}

func (b *bot) chat(w http.ResponseWriter, r *http.Request) *chat {
	b.mu.Lock()
	c := b.chats[r.PathValue("id")]
	b.mu.Unlock()
	if c == nil {
		writeJSON(w, 404, map[string]string{"error": "no such chat"})
	}
	return c
}

func (b *bot) messages(w http.ResponseWriter, r *http.Request) {
	c := b.chat(w, r)
	if c == nil {
		return
	}
	after, _ := strconv.Atoi(r.URL.Query().Get("after"))
	wait, _ := time.ParseDuration(r.URL.Query().Get("wait"))
	deadline := time.After(min(wait, time.Minute))
	for {
		b.mu.Lock()
		var out []Message
		if after < len(c.msgs) {
			out = append(out, c.msgs[max(after, 0):]...)
		}
		changed := c.changed
		b.mu.Unlock()
		if len(out) > 0 || wait <= 0 {
			writeJSON(w, 200, map[string]any{"messages": out})
			return
		}
		select {
		case <-changed:
		case <-deadline:
			writeJSON(w, 200, map[string]any{"messages": []Message{}})
			return
		case <-r.Context().Done():
			return
		}
	}
}

var numbers = regexp.MustCompile(`^\s*\d+(\s*,\s*\d+)*\s*$`)

// reply is a person's message. Replying to a card answers it; to a
// permission prompt, decides it. The bot's reply comes back at once.
func (b *bot) reply(w http.ResponseWriter, r *http.Request) {
	c := b.chat(w, r)
	if c == nil {
		return
	}
	var in struct {
		Text    string `json:"text"`
		ReplyTo int    `json:"reply_to"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&in); err != nil {
		writeJSON(w, 400, map[string]string{"error": err.Error()})
		return
	}
	// The agent is answered after the chat's lock is let go: an agent that
	// stops reading holds up its own chat only.
	var send func()
	defer func() {
		if send != nil {
			send()
		}
	}()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.postLocked(c, Message{From: "person", Kind: "text", Text: in.Text, ReplyTo: in.ReplyTo})
	refuse := func(code, text string) {
		m := b.postLocked(c, Message{From: "bot", Kind: "error", Code: code, Text: text, ReplyTo: in.ReplyTo})
		writeJSON(w, 200, map[string]any{"reply": m})
	}
	a := c.byCard[in.ReplyTo]
	switch {
	case in.ReplyTo == 0:
		refuse("bad_request", "Reply to a question to answer it.")
		return
	case a == nil:
		refuse("not_found", "That message is not a question.")
		return
	case a.done != "":
		refuse("resolved", fmt.Sprintf("Too late: that question was %s.", a.done))
		return
	case strings.TrimSpace(in.Text) == "":
		writeJSON(w, 200, map[string]any{"reply": nil}) // a blank message: nothing to do
		return
	}
	if a.questions == nil { // a permission prompt
		verdict, why, _ := strings.Cut(in.Text, ":")
		switch strings.ToLower(strings.TrimSpace(verdict)) {
		case "yes", "y":
			a.done = "answered"
			a.timer.Stop()
			send = func() { c.respond(a.requestID, map[string]any{"behavior": "allow", "updatedInput": a.input}) }
		case "no", "n":
			a.done = "answered"
			a.timer.Stop()
			if why = strings.TrimSpace(why); why == "" {
				why = "The user said no."
			}
			send = func() { c.respond(a.requestID, map[string]any{"behavior": "deny", "message": why}) }
		default:
			refuse("invalid", "Reply yes, or no: why.")
			return
		}
		m := b.postLocked(c, Message{From: "bot", Kind: "answered", Ask: a.id, Text: "Done.", ReplyTo: in.ReplyTo})
		writeJSON(w, 200, map[string]any{"reply": m})
		return
	}
	idx := 0
	for i, n := range a.cards {
		if n == in.ReplyTo {
			idx = i
		}
	}
	q := a.questions[idx]
	answer := in.Text // free text, verbatim
	if numbers.MatchString(in.Text) {
		var labels []string
		for _, f := range strings.Split(in.Text, ",") {
			n, _ := strconv.Atoi(strings.TrimSpace(f))
			if n < 1 || n > len(q.Options) {
				refuse("invalid", fmt.Sprintf("There is no option %d: pick 1 to %d.", n, len(q.Options)))
				return
			}
			labels = append(labels, q.Options[n-1].Label)
		}
		if len(labels) > 1 && !q.MultiSelect {
			refuse("invalid", "Pick one option.")
			return
		}
		answer = strings.Join(labels, ", ")
	}
	a.answers[idx] = answer
	var open []string
	for i, q := range a.questions {
		if _, ok := a.answers[i]; !ok {
			open = append(open, q.Question)
		}
	}
	if len(open) > 0 {
		m := b.postLocked(c, Message{From: "bot", Kind: "held", Ask: a.id, Text: "Noted. Still to answer: " + strings.Join(open, "; "), StillOpen: open, ReplyTo: in.ReplyTo})
		writeJSON(w, 200, map[string]any{"reply": m})
		return
	}
	answers := map[string]string{}
	for i, q := range a.questions {
		answers[q.Question] = a.answers[i]
	}
	a.done = "answered"
	a.timer.Stop()
	var questions json.RawMessage
	var whole map[string]json.RawMessage
	if json.Unmarshal(a.input, &whole) == nil {
		questions = whole["questions"]
	}
	send = func() {
		c.respond(a.requestID, map[string]any{"behavior": "allow", "updatedInput": map[string]any{"questions": questions, "answers": answers}})
	}
	m := b.postLocked(c, Message{From: "bot", Kind: "answered", Ask: a.id, Text: "Thanks, sent to Claude.", ReplyTo: in.ReplyTo})
	writeJSON(w, 200, map[string]any{"reply": m})
}
