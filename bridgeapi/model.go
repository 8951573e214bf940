package bridgeapi

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/askctl/askctl/protocol"
)

// Session statuses.
const (
	StatusStarting = "starting" // the agent is being spawned
	StatusRunning  = "running"  // the agent runs
	StatusExited   = "exited"   // the agent exited (ExitCode)
	StatusLost     = "lost"     // a previous bridge stopped while the agent ran
)

// Question statuses. Only pending questions can be answered or skipped.
const (
	QuestionPending   = "pending"
	QuestionAnswered  = "answered"
	QuestionSkipped   = "skipped"
	QuestionExpired   = "expired"   // nobody answered in time: the agent got a deny
	QuestionCancelled = "cancelled" // the agent withdrew it (control_cancel_request)
	QuestionWithdrawn = "withdrawn" // the agent exited, or its session was stopped
)

// Session is one agent the bridge spawned.
type Session struct {
	ID              string    `json:"id"`
	ClaudeSessionID string    `json:"claude_session_id,omitempty"` // the CLI's own, from system/init: what --resume takes
	Prompt          string    `json:"prompt"`
	Scenario        string    `json:"scenario,omitempty"` // fakeclaude's scenario, when the CLI is fakeclaude
	Claude          string    `json:"claude"`
	Status          string    `json:"status"`
	ExitCode        *int      `json:"exit_code,omitempty"`
	Detail          string    `json:"detail,omitempty"`
	CreatedAt       time.Time `json:"created_at"`
	EndedAt         time.Time `json:"ended_at,omitzero"`
	// WaitingForUser and PendingQuestionID say whether a question of the
	// session waits for the person, and which.
	WaitingForUser    bool   `json:"waiting_for_user"`
	PendingQuestionID string `json:"pending_question_id,omitempty"`
}

// SessionLog is what happened in a session (GET /api/sessions/{id}/log):
// the session, its logged events in order (what its surfaces were told:
// its questions, their answers, skips and timeouts, its status), and the
// end of its latest agent's stderr (at most 8 KiB).
type SessionLog struct {
	Session *Session `json:"session"`
	Events  []Event  `json:"events"`
	Stderr  string   `json:"stderr"`
}

// Question is one AskUserQuestion request: 1 to 4 questions, answered
// together.
type Question struct {
	ID        string              `json:"question_id"`
	SessionID string              `json:"session_id"`
	RequestID string              `json:"request_id"`
	ToolUseID string              `json:"tool_use_id,omitempty"`
	Questions []protocol.Question `json:"questions"`
	Status    string              `json:"status"`
	// Draft holds the answers given so far to a multi-question request;
	// nothing reaches the agent until every question has one.
	Draft          map[string]string `json:"draft,omitempty"`
	Answers        map[string]string `json:"answers,omitempty"`
	Reason         string            `json:"reason,omitempty"`
	CreatedAt      time.Time         `json:"created_at"`
	Deadline       time.Time         `json:"deadline"`
	ResolvedAt     time.Time         `json:"resolved_at,omitzero"`
	TimeoutSeconds int               `json:"timeout_seconds"`
	// Orphaned: the agent that asked died with a previous bridge. An answer
	// resumes its session with the question and the answer (late answer).
	Orphaned bool `json:"orphaned,omitempty"`

	// Input is the tool input as the agent sent it; the bridge keeps it to
	// build the answer, and it is not part of the wire.
	Input json.RawMessage `json:"-"`
}

// Event is what the surfaces are told, in order. Seq numbers it across the
// bridge's life (SSE ids).
type Event struct {
	Seq               int64               `json:"seq,omitempty"`
	Type              string              `json:"type"`
	SessionID         string              `json:"session_id,omitempty"`
	QuestionID        string              `json:"question_id,omitempty"`
	Questions         []protocol.Question `json:"questions,omitempty"`
	TimeoutSeconds    int                 `json:"timeout_seconds,omitempty"`
	Answers           map[string]string   `json:"answers,omitempty"`
	Status            string              `json:"status,omitempty"`
	WaitingForUser    *bool               `json:"waiting_for_user,omitempty"`
	PendingQuestionID *string             `json:"pending_question_id,omitempty"`
	ExitCode          *int                `json:"exit_code,omitempty"` // session_status of an ended session
	Detail            string              `json:"detail,omitempty"`    // why it ended, when it did not end well
	Error             string              `json:"error,omitempty"`
	Reason            string              `json:"reason,omitempty"`
	Rule              string              `json:"rule,omitempty"` // answered or skipped by a policy's rule (askctl serve --policy), not a person
	Time              time.Time           `json:"time"`
}

// Event types.
const (
	EventQuestion  = "ask_user_question"  // a question to show
	EventTimeout   = "ask_user_timeout"   // it expired: the agent got a deny
	EventAnswered  = "ask_user_answered"  // answered (from any surface)
	EventHeld      = "ask_user_held"      // part of a multi-question answer is held
	EventSkipped   = "ask_user_skipped"   // skipped: the agent got a deny
	EventWithdrawn = "ask_user_withdrawn" // the agent withdrew it or exited
	EventResumed   = "ask_user_resumed"   // a late answer resumed the session
	EventStatus    = "session_status"     // a session's state
)

// Errors of Answer and Skip, and of the surfaces.
var (
	ErrNotFound = errors.New("not found")
	ErrResolved = errors.New("already resolved")
	ErrInvalid  = errors.New("invalid input")
	// ErrBusy: another bridge holds the database.
	ErrBusy = errors.New("database busy")
)

// Answer is one question's answer as a person gives it: one string (a label
// or free text), or several labels for a multiSelect question. It reads a
// JSON string or array of strings.
type Answer []string

// MarshalJSON writes one label as a string, as seed 003's clients send it,
// and several as an array.
func (a Answer) MarshalJSON() ([]byte, error) {
	if len(a) == 1 {
		return json.Marshal(a[0])
	}
	return json.Marshal([]string(a))
}

// UnmarshalJSON accepts a string or an array of strings.
func (a *Answer) UnmarshalJSON(b []byte) error {
	labels, _, err := protocol.DecodeLabels(b)
	*a = labels
	return err
}
