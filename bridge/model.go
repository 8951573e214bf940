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
	if defect("multi-other-dropped") {
		kept := make(map[string]bridgeapi.Answer, len(given))
		for k, vals := range given {
			if qq, err := protocol.FindQuestion(q.Questions, k); err == nil && qq.MultiSelect {
				var labels bridgeapi.Answer
				for _, v := range vals {
					if protocol.IsLabel(qq, v) {
						labels = append(labels, v)
					}
				}
				if len(labels) > 0 {
					vals = labels
				}
			}
			kept[k] = vals
		}
		given = kept
	}
	draft := q.Draft
	if defect("draft-ignored") {
		draft = nil
	}
	merged, missing, err := protocol.MergeAnswers(q.Questions, draft, given)
	if err != nil {
		if defect("bad-answer-reported-resolved") {
			return nil, nil, fmt.Errorf("%w: %v", bridgeapi.ErrResolved, err)
		}
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
		if defect("other-html-escaped") && !qq.MultiSelect && !protocol.IsLabel(qq, a) {
			a = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;").Replace(a)
		}
		if defect("multi-option-order") && qq.MultiSelect {
			a = optionOrder(qq, a)
		}
		merged[qq.Question] = a
	}
	return merged, missing, nil
}
