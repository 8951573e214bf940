//go:build !askctl_broken

package bridge

import (
	"context"
	"io"

	"github.com/askctl/askctl/bridgeapi"
	"github.com/askctl/askctl/protocol"
)

// defect is always false in askctl as shipped: the branches it guards are
// removed by the compiler. Tests build askctl with -tags askctl_broken to
// get bridges with one known defect each (defect_on.go), and prove the
// conformance suite catches them.
func defect(string) bool { return false }

// The broken bridges' code, absent: never called when defect is false.
func misjoin(_ []protocol.Question, answers map[string]string) map[string]string { return answers }

func (b *Bridge) forwardAgain(_ context.Context, _ string, _ map[string]bridgeapi.Answer, resolved error) (*bridgeapi.AnswerResult, error) {
	return nil, resolved
}

func activeMCPDefect() string { return "" }

// pageEdited is the page's file name as a broken bridge serves it: never.
func pageEdited(string) ([]byte, bool, error) { return nil, false, nil }

func misreport(_ context.Context, q *bridgeapi.Question) (*bridgeapi.Question, error) { return q, nil }

func optionOrder(_ protocol.Question, a string) string { return a }

func latin1Answers(given map[string]bridgeapi.Answer) map[string]bridgeapi.Answer { return given }

func agentOutput(r io.Reader) io.Reader { return r }
