package harness

import (
	"fmt"
	"strings"
)

// Verdict is where an expectation stands.
type Verdict int

const (
	// Met: the expectation holds now.
	Met Verdict = iota
	// Unmet: not yet; it may hold later.
	Unmet
	// Unmeetable: it can no longer hold (the agent exited, the question
	// ended another way): Await fails at once instead of timing out.
	Unmeetable
)

func (v Verdict) String() string {
	switch v {
	case Met:
		return "Met"
	case Unmet:
		return "Unmet"
	}
	return "Unmeetable"
}

// Expectation is a condition on what the agents and the surfaces have seen.
// Check runs with the Env's state locked and must not block; its string
// says why, for Unmeetable.
type Expectation struct {
	Description string
	Check       func(*State) (Verdict, string)
	// alias is the session the expectation is about, if one: a wait for it
	// that runs out says what that session's agent waits on.
	alias string
}

// AllOf holds when every one of exps holds; it is unmeetable as soon as one
// is.
func AllOf(exps ...Expectation) Expectation {
	var d []string
	for _, e := range exps {
		d = append(d, e.Description)
	}
	return Expectation{Description: "all of: " + strings.Join(d, "; "), alias: sharedAlias(exps), Check: func(s *State) (Verdict, string) {
		v := Met
		for _, e := range exps {
			switch got, why := e.Check(s); got {
			case Unmeetable:
				return Unmeetable, fmt.Sprintf("%s: %s", e.Description, why)
			case Unmet:
				v = Unmet
			}
		}
		return v, ""
	}}
}

// sharedAlias is the session every one of exps is about, "" when they are
// about several or none: a combination's wait that runs out says what that
// session's agent waits on, as each part's would.
func sharedAlias(exps []Expectation) string {
	if len(exps) == 0 {
		return ""
	}
	a := exps[0].alias
	for _, e := range exps[1:] {
		if e.alias != a {
			return ""
		}
	}
	return a
}

// AnyOf holds when one of exps holds; it is unmeetable when all are.
func AnyOf(exps ...Expectation) Expectation {
	var d []string
	for _, e := range exps {
		d = append(d, e.Description)
	}
	return Expectation{Description: "any of: " + strings.Join(d, "; "), alias: sharedAlias(exps), Check: func(s *State) (Verdict, string) {
		var whys []string
		unmeetable := 0
		for _, e := range exps {
			switch got, why := e.Check(s); got {
			case Met:
				return Met, ""
			case Unmeetable:
				unmeetable++
				whys = append(whys, why)
			}
		}
		if unmeetable == len(exps) {
			return Unmeetable, strings.Join(whys, "; ")
		}
		return Unmet, ""
	}}
}

// Not holds while e does not. It is for Hold (a condition that must stay
// true for a while), not for Await.
func Not(e Expectation) Expectation {
	return Expectation{Description: "not " + e.Description, Check: func(s *State) (Verdict, string) {
		if v, _ := e.Check(s); v == Met {
			return Unmeetable, e.Description + " happened"
		}
		return Met, ""
	}}
}
