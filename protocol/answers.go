package protocol

import (
	"fmt"
	"strconv"
	"strings"
)

// The answer rules, in one place: how a person's answer to a request of 1
// to 4 questions becomes the answers map of updatedInput. The reference
// bridge applies them to every answer it takes, askctl's commands to what a
// person types, and the surface adapters to what they send.
//
//   - A question is named by its full text, or by its number from 1 when
//     no question has that text.
//   - An answer is one option label or free text, verbatim; a multiSelect
//     question takes several labels, joined with ", " in the order given
//     ([JoinLabels]), none twice.
//   - No answer is empty or blank, and a single-select question takes one.
//   - A request is answered whole: answers to part of it are held (a draft)
//     until every question has one; the agent never gets a partial set.

// AnswerError is an answer the rules refuse.
type AnswerError struct{ Msg string }

func (e *AnswerError) Error() string { return e.Msg }

func answerErrorf(format string, args ...any) error {
	return &AnswerError{Msg: fmt.Sprintf(format, args...)}
}

// FindQuestion is the question of a request that key names: its full text,
// or its number from 1 when no question has that text.
func FindQuestion(qs []Question, key string) (Question, error) {
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
	return Question{}, answerErrorf("no question %q here (the questions are %s, or their numbers 1 to %d)", key, strings.Join(texts, ", "), len(qs))
}

// IsLabel reports whether label is one of q's options.
func IsLabel(q Question, label string) bool {
	for _, op := range q.Options {
		if op.Label == label {
			return true
		}
	}
	return false
}

// Labels are q's option labels, in order.
func (q Question) Labels() []string {
	out := make([]string, len(q.Options))
	for i, op := range q.Options {
		out[i] = op.Label
	}
	return out
}

// AnswerText is the answer string the agent gets for q: the label or free
// text verbatim; for multiSelect, the labels joined with ", " in the order
// given.
func AnswerText(q Question, vals []string) (string, error) {
	if len(vals) == 0 {
		return "", answerErrorf("question %q has an empty answer", q.Question)
	}
	for _, v := range vals {
		if strings.TrimSpace(v) == "" {
			return "", answerErrorf("question %q has a blank answer", q.Question)
		}
	}
	if !q.MultiSelect && len(vals) > 1 {
		return "", answerErrorf("question %q takes one answer (it is not multiSelect), got %d", q.Question, len(vals))
	}
	if q.MultiSelect {
		seen := map[string]bool{}
		for _, v := range vals {
			if seen[v] {
				return "", answerErrorf("question %q: %q is selected twice", q.Question, v)
			}
			seen[v] = true
		}
	}
	return JoinLabels(vals), nil
}

// MergeAnswers checks answers given to the questions qs and merges them into
// draft (the answers held so far; it is not changed). Keys of given are
// question texts or numbers. It returns the merged answers, keyed by full
// question text, and the texts of the questions still without one.
func MergeAnswers[L ~[]string](qs []Question, draft map[string]string, given map[string]L) (map[string]string, []string, error) {
	if len(given) == 0 {
		return nil, nil, answerErrorf("no answers given")
	}
	merged := make(map[string]string, len(qs))
	for k, v := range draft {
		merged[k] = v
	}
	seen := map[string]string{}
	for key, vals := range given {
		q, err := FindQuestion(qs, key)
		if err != nil {
			return nil, nil, err
		}
		if prev, dup := seen[q.Question]; dup {
			return nil, nil, answerErrorf("question %q is answered twice (as %q and %q)", q.Question, prev, key)
		}
		seen[q.Question] = key
		text, err := AnswerText(q, vals)
		if err != nil {
			return nil, nil, err
		}
		merged[q.Question] = text
	}
	var missing []string
	for _, q := range qs {
		if _, ok := merged[q.Question]; !ok {
			missing = append(missing, q.Question)
		}
	}
	return merged, missing, nil
}

// QuestionOfLabels is the one question of qs whose options hold every label
// in labels, by its index; false when none does or more than one does (the
// labels are then ambiguous, and the person must say which question).
func QuestionOfLabels(qs []Question, labels []string) (int, bool) {
	found := -1
	for i, q := range qs {
		all := len(labels) > 0
		for _, l := range labels {
			if !IsLabel(q, l) {
				all = false
				break
			}
		}
		if all {
			if found >= 0 {
				return -1, false
			}
			found = i
		}
	}
	return found, found >= 0
}
