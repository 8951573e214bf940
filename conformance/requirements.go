package conformance

import "sort"

// Requirement is one numbered requirement a bridge must meet; the case
// named after ID checks it.
type Requirement struct {
	ID         string `json:"id"`
	Level      string `json:"level"`                // MUST or SHOULD
	Capability string `json:"capability,omitempty"` // the capability a bridge declares to opt in; "" for the route's core
	Text       string `json:"text"`
}

// Requirements are the bridge requirements (askctl's REQUIREMENTS.md), by ID.
var Requirements = map[string]Requirement{}

func init() {
	for _, r := range []Requirement{
		{"SDK-DELIVER", "MUST", "sdk", "An AskUserQuestion can_use_tool request reaches the user surface with every question, its header, every option's label and description, and multiSelect, unchanged and in order."},
		{"SDK-DELIVER-LATENCY", "SHOULD", "sdk", "The question reaches the user surface within 3 s of the control_request (the suite reports the measured p50/p99)."},
		{"SDK-ANSWER-SINGLE", "MUST", "sdk", `A single-select answer comes back as {"behavior":"allow","updatedInput":{"questions":<unchanged>,"answers":{"<question text>":"<label>"}}} on the same request_id. Answers are keyed by the full question text, never by an index (q_0).`},
		{"SDK-ANSWER-MULTI", "MUST", "sdk", `A multiSelect answer is one string: the selected labels joined with ", " (comma + space), in the order the user selected them.`},
		{"SDK-ANSWER-OTHER", "MUST", "sdk", `Free text ("Other") is passed through verbatim as the answer value, even when it matches no option.`},
		{"SDK-ANSWER-ALL", "MUST", "sdk", "A request with 2–4 questions is answered once, with an answer for every question; the bridge never sends a partial answer set."},
		{"SDK-ANSWER-LATENCY", "SHOULD", "sdk", "The answer reaches the agent within 2 s of submission (measured)."},
		{"SDK-NO-EMPTY", "MUST", "sdk", "The bridge never sends allow with a missing, empty, or blank answer (repo chenhg5/cc-connect#1086, anthropics/claude-code#50728)."},
		{"SDK-SKIP-DENY", "MUST", "sdk", `When the user skips or cancels, the bridge answers {"behavior":"deny","message":<non-empty reason>}; never an allow.`},
		{"SDK-TIMEOUT", "MUST", "timeout", "When nobody answers within the bridge's declared timeout, the bridge answers deny with a message that says it timed out, within timeout + 1 s, and tells the user surface the question expired."},
		{"SDK-LATE-ANSWER", "MUST", "sdk", "An answer that arrives after the question was answered, skipped, timed out or cancelled is rejected with a clear error and never reaches the agent; the agent receives exactly one control_response per request."},
		{"SDK-FIRST-WINS", "MUST", "sdk", "Two answers racing for one question: exactly one wins, the other gets an error."},
		{"SDK-PASSTHROUGH", "MUST", "sdk", "can_use_tool for other tools is decided by the bridge's own policy without touching AskUserQuestion state, and never blocks on the user surface unless the bridge declares capability permissions; then the person's allow or deny reaches the agent as the matching permission result."},
		{"SDK-CANCEL", "MUST", "sdk", `A control_cancel_request for a pending question withdraws it from the user surface; a later answer is rejected (SDK-LATE-ANSWER). A deny that the SDK library itself writes right after the cancel (the official TypeScript Agent SDK writes deny "Permission request cancelled") is the library's, not an answer from the person: it does not fail this requirement.`},
		{"SDK-AGENT-EXIT", "MUST", "sdk", "If the agent process exits while a question is pending, the question is withdrawn, the surface is told, and the bridge keeps serving other sessions."},
		{"SDK-SEQUENTIAL", "MUST", "sdk", "Several questions asked one after another in one session are each delivered and answered independently."},
		{"SDK-ISOLATION", "MUST", "sdk", "Concurrent sessions never see or answer each other's questions."},
		{"SDK-BAD-INPUT", "MUST", "sdk", "A malformed answer (unknown id, unknown question, wrong type, invalid JSON) gets a clear error; the pending question stays pending and answerable."},
		{"MCP-LIST", "MUST", "mcp", "tools/list offers an ask_user tool whose input schema takes question (string, required), optional options (label, optional description) and multiSelect."},
		{"MCP-ANSWER", "MUST", "mcp", "tools/call ask_user shows the question on the user surface and returns the answer as text content, isError false."},
		{"MCP-MULTI", "MUST", "mcp", "A multiSelect answer names every selected label."},
		{"MCP-TIMEOUT", "MUST", "timeout", "With no answer in time, the call returns isError: true with text saying the user did not respond — never an empty success and never a hang."},
		{"MCP-SKIP", "MUST", "mcp", "A skipped question returns isError: true with a text saying the user declined."},
		{"MCP-CONCURRENT", "SHOULD", "mcp", "Two sessions calling ask_user at once are kept apart."},
		{"UI-RECONNECT-REPLAY", "MUST", "reconnect", "If the user surface disconnects while a question is pending (or was never connected when it was asked), the question is buffered and replayed on (re)connect with the same id; the answer then lands (alexjbarnes/cockpit PR #4, siteboon/claudecodeui PR #462)."},
		{"UI-STATUS", "SHOULD", "reconnect", "The session status tells a connecting surface that it is waiting for the user and which question is pending."},
		{"UI-TAKEOVER", "MUST", "takeover", "When a second connection takes over a session, answers from the old connection are rejected (session_taken)."},
		{"UI-PERSIST", "MUST", "persist", "A pending question survives a bridge restart: after restart it is listed again, and an answer either reaches the still-running agent or is delivered on resume (late-answer path)."},
	} {
		Requirements[r.ID] = r
	}
}

// RequirementIDs lists the IDs, sorted.
func RequirementIDs() []string {
	var out []string
	for id := range Requirements {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}
