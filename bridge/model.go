package bridge

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
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

	input json.RawMessage // the tool input as the agent sent it
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
	Error             string              `json:"error,omitempty"`
	Reason            string              `json:"reason,omitempty"`
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

// resolvedError says how a question was resolved.
func resolvedError(q *Question) error {
	switch q.Status {
	case QuestionExpired:
		return fmt.Errorf("%w: question %s expired at %s (timed out), the agent was told", ErrResolved, q.ID, q.ResolvedAt.Format(time.RFC3339))
	case QuestionCancelled, QuestionWithdrawn:
		return fmt.Errorf("%w: question %s was withdrawn (%s)", ErrResolved, q.ID, q.Reason)
	}
	return fmt.Errorf("%w: question %s was %s", ErrResolved, q.ID, q.Status)
}

// Answer is one question's answer as a person gives it: one string (a label
// or free text), or several labels for a multiSelect question. It reads a
// JSON string or array of strings.
type Answer []string

// UnmarshalJSON accepts a string or an array of strings.
func (a *Answer) UnmarshalJSON(b []byte) error {
	labels, _, err := protocol.DecodeLabels(b)
	*a = labels
	return err
}

// resolveAnswers checks answers given for q and merges them into its draft.
// Keys are question texts, or a question's number (1-based) when no question
// has that text. It returns the merged answers, keyed by full question text,
// and the questions still without one.
func resolveAnswers(q *Question, given map[string]Answer) (map[string]string, []string, error) {
	if len(given) == 0 {
		return nil, nil, fmt.Errorf("%w: no answers given", ErrInvalid)
	}
	merged := map[string]string{}
	for k, v := range q.Draft {
		merged[k] = v
	}
	seen := map[string]string{}
	for key, vals := range given {
		qq, err := FindQuestion(q.Questions, key)
		if err != nil {
			return nil, nil, err
		}
		if prev, dup := seen[qq.Question]; dup {
			return nil, nil, fmt.Errorf("%w: question %q is answered twice (as %q and %q)", ErrInvalid, qq.Question, prev, key)
		}
		seen[qq.Question] = key
		text, err := answerText(qq, vals)
		if err != nil {
			return nil, nil, err
		}
		merged[qq.Question] = text
	}
	var missing []string
	for _, qq := range q.Questions {
		if _, ok := merged[qq.Question]; !ok {
			missing = append(missing, qq.Question)
		}
	}
	return merged, missing, nil
}

// FindQuestion is the question of a request that key names: its full text,
// or its number from 1 when no question has that text.
func FindQuestion(qs []protocol.Question, key string) (protocol.Question, error) {
	for _, q := range qs {
		if q.Question == key {
			return q, nil
		}
	}
	if n, err := strconv.Atoi(key); err == nil && n >= 1 && n <= len(qs) {
		return qs[n-1], nil
	}
	texts := make([]string, len(qs))
	for i, q := range qs {
		texts[i] = strconv.Quote(q.Question)
	}
	return protocol.Question{}, fmt.Errorf("%w: no question %q here (the questions are %s, or their numbers 1 to %d)", ErrInvalid, key, strings.Join(texts, ", "), len(qs))
}

// answerText is the answer string the agent gets for one question: the
// label or free text verbatim; for multiSelect, the labels joined with ", "
// in the order given.
func answerText(q protocol.Question, vals []string) (string, error) {
	if len(vals) == 0 {
		return "", fmt.Errorf("%w: question %q has an empty answer", ErrInvalid, q.Question)
	}
	for _, v := range vals {
		if strings.TrimSpace(v) == "" {
			return "", fmt.Errorf("%w: question %q has a blank answer", ErrInvalid, q.Question)
		}
	}
	if !q.MultiSelect && len(vals) > 1 {
		return "", fmt.Errorf("%w: question %q takes one answer (it is not multiSelect), got %d", ErrInvalid, q.Question, len(vals))
	}
	if q.MultiSelect {
		seen := map[string]bool{}
		for _, v := range vals {
			if seen[v] {
				return "", fmt.Errorf("%w: question %q: %q is selected twice", ErrInvalid, q.Question, v)
			}
			seen[v] = true
		}
	}
	return protocol.JoinLabels(vals), nil
}
