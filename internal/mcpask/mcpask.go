// Package mcpask is the MCP ask_user tool as askctl serves it: its input,
// the texts of its results, and the answer an ask_user server gives for each
// way a question ends. askctl mcp (the reference bridge's server) and the
// scripted server askctl replay runs for route "mcp" scenarios both use it,
// so the two say the same thing for the same answer.
package mcpask

import (
	"fmt"
	"strings"

	"github.com/askctl/askctl/protocol"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ToolName is the tool's name; the CLI calls it mcp__<server>__ask_user.
const ToolName = "ask_user"

// Description is the tool's description in tools/list.
const Description = "Ask the user a question and wait for the answer. Offer options when there are natural choices; the user may also answer in their own words."

// Input is ask_user's input.
type Input struct {
	Question    string   `json:"question" jsonschema:"the question to ask the user"`
	Options     []Option `json:"options,omitempty" jsonschema:"choices to offer; the user may also answer in their own words"`
	MultiSelect bool     `json:"multiSelect,omitempty" jsonschema:"whether the user may pick several options"`
}

// Option is one choice offered.
type Option struct {
	Label       string `json:"label" jsonschema:"the choice, as the user sees it"`
	Description string `json:"description,omitempty" jsonschema:"what the choice means"`
}

// Question is the input as a question of the ask-user protocol, as the
// surfaces show it.
func (in Input) AsQuestion() protocol.Question {
	q := protocol.Question{Question: in.Question, Header: "Question", MultiSelect: in.MultiSelect}
	for _, op := range in.Options {
		q.Options = append(q.Options, protocol.Option{Label: op.Label, Description: op.Description})
	}
	return q
}

// Tool is the tool as tools/list offers it; the SDK infers its input schema
// from Input.
func Tool() *mcp.Tool {
	t := &mcp.Tool{Name: ToolName, Description: Description}
	if defect("mcp-option-label-optional") {
		t.InputSchema = labelOptional()
	}
	return t
}

// Result texts.

// Answered is the result of an answer: "User selected: …" when the answer is
// made of the offered labels (a multiSelect answer names each), else "User
// answered: …" with the person's own words.
func Answered(in Input, answer string) *mcp.CallToolResult {
	if len(in.Options) > 0 && allLabels(answer, in) {
		return text(false, "User selected: "+answer)
	}
	if defect("mcp-free-text-quoted") {
		return text(false, fmt.Sprintf("User answered: %q", answer))
	}
	return text(false, "User answered: "+answer)
}

// Declined is the result of a skip.
func Declined(reason string) *mcp.CallToolResult {
	if strings.TrimSpace(reason) == "" {
		return text(true, "The user declined to answer.")
	}
	return text(true, "The user declined to answer: "+reason)
}

// TimedOut is the result when nobody answered in time.
func TimedOut(seconds int) *mcp.CallToolResult {
	return text(true, fmt.Sprintf("The user did not respond in time (no answer within %d s).", seconds))
}

// Withdrawn is the result when the question ended some other way.
func Withdrawn(why string) *mcp.CallToolResult {
	return text(true, "The question was withdrawn: "+why)
}

// Invalid is the result of a call the tool cannot ask.
func Invalid(why string) *mcp.CallToolResult { return text(true, why) }

func text(isErr bool, s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: isErr, Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// allLabels reports whether answer is made of in's option labels.
func allLabels(answer string, in Input) bool {
	labels := []string{answer}
	if in.MultiSelect {
		labels = strings.Split(answer, protocol.MultiSelectSeparator)
	}
	for _, l := range labels {
		found := false
		for _, op := range in.Options {
			found = found || op.Label == l
		}
		if !found {
			return false
		}
	}
	return true
}
