package bridge

import (
	"fmt"
	"strings"
	"time"

	"github.com/askctl/askctl/bridgeapi"
	"github.com/askctl/askctl/protocol"
)

// resolvedError says how a question was resolved.
func resolvedError(q *bridgeapi.Question) error {
	switch q.Status {
	case bridgeapi.QuestionExpired:
		return fmt.Errorf("%w: question %s expired at %s (timed out), the agent was told", bridgeapi.ErrResolved, q.ID, q.ResolvedAt.Format(time.RFC3339))
	case bridgeapi.QuestionCancelled, bridgeapi.QuestionWithdrawn:
		return fmt.Errorf("%w: question %s was withdrawn (%s)", bridgeapi.ErrResolved, q.ID, q.Reason)
	}
	return fmt.Errorf("%w: question %s was %s", bridgeapi.ErrResolved, q.ID, q.Status)
}

// resolveAnswers applies the answer rules (package protocol) to answers
// given for q, merging them into its draft; a refusal is ErrInvalid.
func resolveAnswers(q *bridgeapi.Question, given map[string]bridgeapi.Answer) (map[string]string, []string, error) {
	if defect("answer-latin1") {
		given = latin1Answers(given)
	}
	merged, missing, err := protocol.MergeAnswers(q.Questions, q.Draft, given)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", bridgeapi.ErrInvalid, err)
	}
	for _, qq := range q.Questions {
		a, ok := merged[qq.Question]
		if !ok {
			continue
		}
		if defect("other-collapsed") {
			a = strings.Join(strings.Fields(a), " ")
		}
		if defect("multi-option-order") && qq.MultiSelect {
			a = optionOrder(qq, a)
		}
		merged[qq.Question] = a
	}
	return merged, missing, nil
}
