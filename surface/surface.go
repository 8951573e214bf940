package surface

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/askctl/askctl/bridgeapi"
	"github.com/askctl/askctl/protocol"
)

// Surface is the user side of a bridge, as a person (or a script) reaches
// it: askctl's adapters speak each kind of surface, so a conformance case
// and askctl answer --bridge work the same on any bridge with a profile.
type Surface interface {
	// Kind is the adapter's kind (ws, control-ws, http, exec, browser).
	Kind() string
	// Start starts a session with a first prompt and returns the bridge's
	// id for it.
	Start(ctx context.Context, prompt string) (string, error)
	// Open connects a person to a session ("" for every session the
	// surface shows at once, where it can). Events reach sink as they
	// come, from the connection's goroutine, until Close.
	Open(ctx context.Context, session string, sink func(Event)) (Conn, error)
	// Close ends the surface and every connection.
	Close() error
}

// Conn is one person's connection to a session.
type Conn interface {
	// Pending lists the questions waiting for this person.
	Pending(ctx context.Context) ([]Pending, error)
	// Sync returns once the connection has heard what the bridge had to
	// tell it when it opened (its replay of pending questions), so a
	// listing right after Open is complete. It is a round trip, never a
	// sleep.
	Sync(ctx context.Context) error
	// Answer answers a question: question text → the selected labels in
	// order, or one free text. A rejection is a *Rejected.
	Answer(ctx context.Context, questionID string, answers map[string][]string) (Ack, error)
	// Skip declines a question with a reason.
	Skip(ctx context.Context, questionID, reason string) error
	// (A Conn that can also abort the agent's turn when it skips is an
	// Interrupter.)
	// SendRaw sends raw bytes where an answer to questionID goes, in the
	// surface's own protocol (an HTTP body, a WebSocket message), for cases
	// that send malformed input. A refusal is a *Rejected.
	SendRaw(ctx context.Context, questionID string, raw []byte) error
	// Close disconnects.
	Close() error
}

// Pending is a question waiting for a person. The fields after Questions
// are what a surface tells where it tells it (the reference bridge's HTTP
// API tells all), with the keys of its question objects.
type Pending struct {
	QuestionID     string              `json:"question_id"`
	Session        string              `json:"session_id,omitempty"`
	Questions      []protocol.Question `json:"questions"`
	TimeoutSeconds int                 `json:"timeout_seconds,omitempty"`
	CreatedAt      time.Time           `json:"created_at,omitzero"`
	Deadline       time.Time           `json:"deadline,omitzero"`
	// Draft holds the answers given so far to a multi-question request.
	Draft map[string]string `json:"draft,omitempty"`
	// Orphaned: the agent that asked is gone; an answer resumes it.
	Orphaned bool `json:"orphaned,omitempty"`
}

// Interrupter is a Conn that can skip a question and abort the agent's
// turn with it.
type Interrupter interface {
	SkipInterrupt(ctx context.Context, questionID, reason string) error
}

// Resumer is a Conn whose event stream can drop and resume where it left
// off (SSE's Last-Event-ID): Drop cuts the stream as a network would,
// without telling the bridge anything else; Resume reconnects asking for
// what was missed after the last event heard, which the bridge must send
// once each, and nothing heard before. A Conn without it has no resume
// operation (a WebSocket surface replays pending questions on a new
// connection instead: UI-RECONNECT-REPLAY's own lines).
type Resumer interface {
	Drop(ctx context.Context) error
	Resume(ctx context.Context) error
}

// Offliner is a Conn whose person can lose the network with the client
// left open (a browser tab on a laptop that went offline): Offline cuts
// the client's connection to the bridge as a network would and keeps it
// down; Online gives the network back and returns once the client has
// reconnected by itself and heard the bridge's replay, or fails saying it
// did not. What the client shows after is what a fresh one would: the
// pending questions, none that ended meanwhile as answerable.
type Offliner interface {
	Offline(ctx context.Context) error
	Online(ctx context.Context) error
}

// Reclaimer is a Conn whose client, taken over by another connection of
// its session, can take the session back by itself (a page's "Answer here
// again"): Reclaim does what its person does there and returns once the
// client has connected again and heard the bridge's replay. What it shows
// after is what a fresh client would: the pending questions answerable,
// whatever it showed while taken over. A Conn without it takes the session
// back as any client does: it closes and connects again (harness).
type Reclaimer interface {
	Reclaim(ctx context.Context) error
}

// AfterOpener is a Surface whose connection can open as a client that
// heard event lastID of some log before (SSE's Last-Event-ID on its first
// request): 0 asks for the whole log; an id ahead of the bridge's log is
// another log's (a page kept open while its bridge was redeployed with a
// new database), and the bridge must take it as a new client's.
type AfterOpener interface {
	OpenAfter(ctx context.Context, session string, lastID int64, sink func(Event)) (Conn, error)
}

// Overseer is a Surface whose connection opened with no session (Open with
// session "") hears every session as it happens, besides each session's
// own connections: two people, each with a connection of their own, can
// act on one question at once.
type Overseer interface {
	Surface
	OverseesSessions()
}

// Warmer is a Surface that can get ready before the first session (a
// browser started, logged in, a tab open at the page), so that a question
// asked as a session starts is seen: the harness warms it within the
// start limit.
type Warmer interface {
	Warm(ctx context.Context) error
}

// RestartWatcher is a Surface that keeps something of its own open against
// the bridge ahead of time (a browser tab at the page, for the next
// person), which a restart of the bridge can spoil: a page whose load
// straddled the restart may have lost its script with the old bridge. The
// harness tells it once the restarted bridge is up, and it renews what it
// keeps (in the background: the next Open waits for it).
type RestartWatcher interface {
	BridgeRestarted()
}

// Prober is a Conn that may lack an operation and can be asked whether it
// has it before anything depends on it (an exec adapter): an *Unsupported
// when it has not.
type Prober interface {
	Probe(ctx context.Context, op string) error
}

// Permitter is a Conn that puts other tools' permission prompts to the
// person (capability permissions): it allows or denies the prompt its
// EventPermission event named. A Conn without it has no permit operation.
type Permitter interface {
	Permit(ctx context.Context, promptID string, allow bool, reason string) error
}

// Stopper is a Surface whose person can stop a session: the bridge ends
// its agent (the reference API's DELETE /api/sessions/ID, askctl stop). A
// Surface without it has no stop operation.
type Stopper interface {
	Stop(ctx context.Context, session string) error
}

// Ack is a bridge's acceptance of an answer: answered, or held until the
// rest of a multi-question request comes (Missing names the rest).
type Ack struct {
	Status  string   `json:"status"`
	Missing []string `json:"missing,omitempty"`
	// Answers are the answers the agent got, where the surface says.
	Answers map[string]string `json:"answers,omitempty"`
	// Resumed: the agent was gone, and the answer resumed its session.
	Resumed bool `json:"resumed,omitempty"`
}

// Unsupported is a surface's word that it has no such operation (a chat
// with no skip): a case that needs it is skipped, naming the operation,
// never failed or passed.
type Unsupported struct {
	Op      string
	Message string
}

func (u *Unsupported) Error() string {
	if u.Message == "" {
		return fmt.Sprintf("the surface has no %s operation", u.Op)
	}
	return fmt.Sprintf("the surface has no %s operation: %s", u.Op, u.Message)
}

// ErrIgnored is a surface's word that it took an operation and did nothing
// with it (an empty message a chat drops): not an answer, and not a refusal
// with a message either.
var ErrIgnored = errors.New("the surface took it and did nothing with it")

// Rejected is a bridge's refusal of an answer or skip.
type Rejected struct {
	Code    string // resolved, invalid, not_found, session_taken, bad_request, … as the bridge says
	Message string
}

func (r *Rejected) Error() string {
	if r.Code == "" {
		return "rejected: " + r.Message
	}
	return fmt.Sprintf("rejected (%s): %s", r.Code, r.Message)
}

// Surface event types, the same whatever the surface kind.
const (
	EventQuestion  = "question"  // a question to show (asked, or replayed on connect)
	EventExpired   = "expired"   // it timed out
	EventAnswered  = "answered"  // answered (from any connection)
	EventHeld      = "held"      // part of a multi-question answer was kept
	EventSkipped   = "skipped"   // skipped
	EventWithdrawn = "withdrawn" // the agent withdrew it, exited, or the session stopped
	EventResumed   = "resumed"   // a late answer resumed its session
	EventStatus    = "status"    // the session's status
	EventTaken     = "taken"     // another connection took this session over
	EventClosed    = "closed"    // the connection ended (Reason says why)
	EventOther     = "other"     // anything else the surface said
	// EventPermission: another tool's permission prompt put to the person
	// (capability permissions): QuestionID is the prompt's id, Tool and
	// Input what the agent wants to run.
	EventPermission = "permission"
)

// Event is one thing a surface told a person.
type Event struct {
	T          time.Time           `json:"t"`              // when the harness heard it
	At         time.Time           `json:"time,omitzero"`  // when the bridge says it happened, if it says
	Conn       string              `json:"conn,omitempty"` // which connection heard it
	Type       string              `json:"type"`
	QuestionID string              `json:"question_id,omitempty"`
	Session    string              `json:"session_id,omitempty"`
	Questions  []protocol.Question `json:"questions,omitempty"`
	Answers    map[string]string   `json:"answers,omitempty"`
	Timeout    int                 `json:"timeout_seconds,omitempty"` // a question's time to answer
	Status     string              `json:"status,omitempty"`          // a session's status
	Exit       *int                `json:"exit_code,omitempty"`       // an ended session's agent's exit status
	Waiting    *bool               `json:"waiting_for_user,omitempty"`
	PendingID  string              `json:"pending_question_id,omitempty"`
	Reason     string              `json:"reason,omitempty"`
	By         string              `json:"by,omitempty"`        // who settled it, when the surface says it was not a person (a policy's rule)
	Tool       string              `json:"tool_name,omitempty"` // a permission prompt's tool
	Input      json.RawMessage     `json:"input,omitempty"`     // a permission prompt's tool input
	Raw        json.RawMessage     `json:"raw,omitempty"`
	// Seq is the event's own id where the surface numbers its events (an
	// SSE id): a connection told one id twice was sent one event twice.
	Seq int64 `json:"seq,omitempty"`
}

// Token is a surface's bearer token as it is now: the token file is read
// whenever a session starts or a connection opens, so a bridge that makes
// a new token when it restarts is followed.
type Token func() (string, error)

// An Opener makes the adapter of a kind that lives in a package of its own
// (the browser, in surface/browser, which links a browser driver only into
// the programs that import it).
type Opener func(s Spec, token Token) (Surface, error)

var (
	registryMu sync.Mutex
	registry   = map[string]Opener{}
)

// Register makes New open surfaces of kind with open. A package that
// adapts a kind registers it in its init.
func Register(kind string, open Opener) {
	registryMu.Lock()
	defer registryMu.Unlock()
	registry[kind] = open
}

// New returns the adapter for a profile's surface.
func New(s Spec) (Surface, error) {
	var token Token = func() (string, error) {
		if s.Token != "" || s.TokenFile == "" {
			return s.Token, nil
		}
		b, err := os.ReadFile(s.TokenFile)
		if err != nil {
			return "", fmt.Errorf("surface token: %w", err)
		}
		return strings.TrimSpace(string(b)), nil
	}
	if _, err := token(); err != nil {
		return nil, err
	}
	switch s.Kind {
	case "ws", "control-ws":
		return newSocketSurface(s, token), nil
	case "http":
		return newHTTPSurface(s, token), nil
	case "exec":
		return startExecSurface(s)
	}
	registryMu.Lock()
	open := registry[s.Kind]
	registryMu.Unlock()
	if open != nil {
		return open(s, token)
	}
	if s.Kind == "browser" {
		return nil, errors.New("surface kind browser: this program was built without the browser adapter (import github.com/askctl/askctl/surface/browser)")
	}
	return nil, fmt.Errorf("surface kind %q: want one of %s", s.Kind, strings.Join(Kinds(), ", "))
}

// NewAPI is a surface that starts sessions through the reference bridge's
// HTTP API at s.API (the browser adapter's, and the socket adapters'
// way).
func NewAPI(s Spec, token Token) Surface { return apiSurface(s, token) }

// Client is the reference bridge's API client at s.API with the token as it
// is now.
func Client(s Spec, token Token) (*bridgeapi.Client, error) { return apiSurface(s, token).client() }

// apiSurface is the http surface of s's API base.
func apiSurface(s Spec, token Token) *httpSurface {
	return newHTTPSurface(Spec{URL: s.API, Slow: s.Slow, Limits: s.Limits}, token)
}

var errClosed = errors.New("connection closed")
