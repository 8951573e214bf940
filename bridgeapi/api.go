package bridgeapi

import (
	"time"

	"github.com/askctl/askctl/protocol"
)

// MaxBody bounds a request body and a WebSocket message.
const MaxBody = 1 << 20

// MaxScenarioText bounds StartOptions.ScenarioText, so that the request,
// JSON-escaped, stays within MaxBody.
const MaxScenarioText = MaxBody / 2

// APIError is the body of every error response.
type APIError struct {
	Code  string `json:"code"` // not_found, resolved, invalid, bad_request, unauthorized, too_large, internal
	Error string `json:"error"`
}

// MCPOpen is the body of POST /api/mcp.
type MCPOpen struct {
	Label string `json:"label,omitempty"`
}

// MCPAsk is the body of POST /api/mcp/{id}/ask.
type MCPAsk struct {
	Questions []protocol.Question `json:"questions"`
}

// AnswerRequest is the body of POST /api/questions/{id}/answer.
type AnswerRequest struct {
	// Answers maps a question's full text, or its number from 1, to the
	// answer: a label or free text, or an array of labels (multiSelect).
	Answers map[string]Answer `json:"answers"`
}

// SkipRequest is the body of POST /api/questions/{id}/skip.
type SkipRequest struct {
	Reason    string `json:"reason,omitempty"`
	Interrupt bool   `json:"interrupt,omitempty"`
}

// StartOptions start a session.
type StartOptions struct {
	Prompt string `json:"prompt"`
	// Scenario names what a fake agent plays, for a bridge whose CLI is
	// fakeclaude (askctl serve): a built-in scenario. A bridge never opens a
	// path a client names: a scenario of the client's own goes as
	// ScenarioText.
	Scenario string `json:"scenario,omitempty"`
	// ScenarioText is a scenario's content (a .txtar), at most
	// MaxScenarioText bytes: askctl session start --scenario FILE reads the
	// file and sends it.
	ScenarioText string `json:"scenario_text,omitempty"`
}

// Login is the reply to POST /api/login: a one-time link that logs a
// browser in to the bridge's page (askctl login prints it).
type Login struct {
	Path      string    `json:"path"` // /login?code=…, on the bridge's own URL
	ExpiresAt time.Time `json:"expires_at"`
}

// AnswerResult is how an answer was taken.
type AnswerResult struct {
	Question *Question `json:"question"`
	// Held: the answers are kept, and the request waits for the questions
	// in Missing; nothing was sent to the agent yet.
	Held    bool     `json:"held,omitempty"`
	Missing []string `json:"missing,omitempty"`
	// Resumed: the agent had died with a previous bridge; its session was
	// resumed with the question and the answer.
	Resumed bool `json:"resumed,omitempty"`
}

// DefaultSkipReason is the deny message when a person skips without saying why.
const DefaultSkipReason = "The user skipped the question without answering."
