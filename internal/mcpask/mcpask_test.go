//go:build !mutation

package mcpask

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func textOf(r *mcp.CallToolResult) string { return r.Content[0].(*mcp.TextContent).Text }

// TestResults: labels are "selected", anything else "answered"; a skip and a
// timeout are errors that say so.
func TestResults(t *testing.T) {
	in := Input{Question: "Which?", Options: []Option{{Label: "A"}, {Label: "B"}}}
	multi := in
	multi.MultiSelect = true
	for _, tt := range []struct {
		r       *mcp.CallToolResult
		want    string
		isError bool
	}{
		{Answered(in, "A"), "User selected: A", false},
		{Answered(in, "A, B"), "User answered: A, B", false}, // single-select: not a label
		{Answered(multi, "A, B"), "User selected: A, B", false},
		{Answered(multi, "A, C"), "User answered: A, C", false},
		{Answered(Input{Question: "Q?"}, "free words"), "User answered: free words", false},
		{Declined("not now"), "The user declined to answer: not now", true},
		{Declined(""), "The user declined to answer.", true},
		{TimedOut(30), "The user did not respond in time (no answer within 30 s).", true},
	} {
		if got := textOf(tt.r); got != tt.want || tt.r.IsError != tt.isError {
			t.Errorf("%q (isError %v), want %q (%v)", got, tt.r.IsError, tt.want, tt.isError)
		}
	}
}
