package protocol

import (
	"fmt"
	"strings"
)

// The tool_result texts of CLI 2.1.330, word for word. Each was seen in a capture
// of the real CLI (shared/fixtures, or a session recorded with askctl record).
const (
	// DenyInterruptText is the tool_result content after a deny with
	// interrupt: true, and after the turn is interrupted while the request is
	// pending (an SDK interrupt, or stdin closing).
	DenyInterruptText = "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, the new_string was NOT written to the file). STOP what you are doing and wait for the user to tell you how to proceed."

	// DenyInterruptToolUseResult is the tool_use_result that goes with DenyInterruptText.
	DenyInterruptToolUseResult = "User rejected tool use"

	// InterruptedForToolUseText is the user text the CLI writes after an
	// interrupting deny, just before the error result.
	InterruptedForToolUseText = "[Request interrupted by user for tool use]"

	// InvalidPermissionResultText is the deny the CLI substitutes for a
	// permission result that fails its schema (say, behavior "maybe").
	InvalidPermissionResultText = "The canUseTool callback returned an invalid permission result. Expected {behavior: 'allow', updatedInput?: object} or {behavior: 'deny', message: string}. updatedPermissions may hold at most 4096 updates, rules and directories in all."

	// AskNotAnsweredText is the allow text when no question got an answer.
	AskNotAnsweredText = "The user did not answer the questions."

	// AskUnavailableText is the tool_result when the model calls
	// AskUserQuestion in a session that has no permission prompt surface.
	AskUnavailableText = "<tool_use_error>Error: No such tool available: AskUserQuestion. AskUserQuestion is disabled for this session, in subagents as well as here.</tool_use_error>"

	// AskUnavailableToolUseResult goes with AskUnavailableText.
	AskUnavailableToolUseResult = "Error: No such tool available: AskUserQuestion. AskUserQuestion is disabled for this session, in subagents as well as here."

	// PermissionStreamClosedText is the tool_result of a permission request
	// still pending when stdin closes, in releases before the CLI withdrew
	// it instead (claudecli.StdinCloseCancels).
	PermissionStreamClosedText = "Tool permission request failed: AbortError: Tool permission stream closed before response received"

	// BashNoOutputText is what a Bash call that printed nothing returns.
	BashNoOutputText = "(Bash completed with no output)"

	// notesOnly is the answer sentinel for "notes but no choice".
	notesOnly = "(notes only)"
)

// EDEDiagnostic is the single entry of errors[] in the error_during_execution
// result that ends an interrupted turn.
const EDEDiagnostic = "[ede_diagnostic] result_type=user last_content_type=n/a stop_reason=tool_use"

// ErrorResponseText is the tool_result content when the host answers a
// can_use_tool request with a control_response of subtype "error".
func ErrorResponseText(errText string) string {
	return "Tool permission request failed: Error: " + errText
}

// UpdatedInputInvalidText is the tool_result content when an allow carries an
// updatedInput that fails the tool's schema; problem is the schema's complaint,
// such as "The required parameter `questions` is missing".
func UpdatedInputInvalidText(tool, problem string) string {
	return fmt.Sprintf("<tool_use_error>The permission handler returned updatedInput for %s that failed schema validation: %s failed due to the following issue:\n%s\nThis is a configuration issue in your canUseTool callback, PermissionRequest hook, or permission-prompt tool — updatedInput must satisfy the tool's input schema. The tool input from the model was valid.</tool_use_error>", tool, tool, problem)
}

// UpdatedInputInvalidToolUseResult goes with UpdatedInputInvalidText.
func UpdatedInputInvalidToolUseResult(tool string) string {
	return "InputValidationError: permission handler updatedInput failed schema for " + tool
}

// AskResultText is the tool_result text the CLI gives the model after an allow
// for AskUserQuestion, built from the questions and the host's answers and
// annotations (PROTOCOL.md §5.4, checked against the real CLI).
//
// One entry per question, in question order, for each question with an answer
// or notes; the entries are joined with ", ". Answers keyed by anything other
// than the exact question text (an index such as "q_0") are not seen at all.
func AskResultText(questions []Question, answers map[string]AnswerValue, annotations map[string]Annotation) string {
	var entries []string
	canonical := true
	for _, q := range questions {
		ans, hasAns := answers[q.Question]
		if hasAns && (ans == "" || ans == notesOnly) {
			hasAns = false
		}
		ann := annotations[q.Question]
		if !hasAns && ann.Notes == "" {
			continue
		}
		var b strings.Builder
		b.WriteString(`"` + q.Question + `"=`)
		if hasAns {
			b.WriteString(`"` + string(ans) + `"`)
		} else {
			b.WriteString("(no option selected)")
		}
		if ann.Preview != "" {
			b.WriteString(" selected preview:\n" + ann.Preview)
		}
		if ann.Notes != "" {
			b.WriteString(" notes: " + ann.Notes)
			canonical = false
		}
		if hasAns && !isCanonical(q, string(ans)) {
			canonical = false
		}
		entries = append(entries, b.String())
	}
	if len(entries) == 0 {
		return AskNotAnsweredText
	}
	d := strings.Join(entries, ", ")
	if canonical {
		return "Your questions have been answered: " + d + ". You can now continue with these answers in mind."
	}
	return "The user answered: " + d + ". Read the answers carefully — they may request clarification, changes, or that you not proceed — and follow what they actually say."
}

// isCanonical reports whether ans is exactly an option label, or for a
// multiSelect question a ", "-joined list of labels that re-joins to itself.
func isCanonical(q Question, ans string) bool {
	labels := make(map[string]bool, len(q.Options))
	for _, o := range q.Options {
		labels[o.Label] = true
	}
	if !q.MultiSelect {
		return labels[ans]
	}
	items := strings.Split(ans, MultiSelectSeparator)
	for _, it := range items {
		if !labels[it] {
			return false
		}
	}
	return JoinLabels(items) == ans
}
