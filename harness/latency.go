package harness

import (
	"sort"
	"time"

	"github.com/askctl/askctl/surface"
)

// Latency is what one question took: from the agent's control_request to
// the surface showing it (Deliver), and from the person's answer to the
// agent's control_response (Answer; zero when it was never answered).
type Latency struct {
	Session  string        `json:"session"`
	Question string        `json:"question_id"`
	Deliver  time.Duration `json:"deliver_ns"`
	Answer   time.Duration `json:"answer_ns,omitempty"`
}

// Latencies measures every question of every session so far.
func (e *Env) Latencies() []Latency {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []Latency
	for _, s := range e.st.list() {
		reqs := s.requests
		for _, qid := range s.questions {
			i := s.reqIndex(qid)
			if i < 0 {
				continue
			}
			l := Latency{Session: s.alias, Question: qid}
			for _, ev := range s.told {
				if ev.Type == surface.EventQuestion && ev.QuestionID == qid {
					l.Deliver = ev.T.Sub(reqs[i].T)
					break
				}
			}
			if at, ok := s.answered[qid]; ok {
				if rs := reqs[i].Responses; len(rs) > 0 && rs[0].T.After(at) {
					l.Answer = rs[0].T.Sub(at)
				}
			}
			out = append(out, l)
		}
	}
	return out
}

// Percentile is the p-th percentile (0–100) of ds, nearest rank; zero
// for none.
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(float64(len(s))*p/100+0.999999) - 1
	if i < 0 {
		i = 0
	}
	if i >= len(s) {
		i = len(s) - 1
	}
	return s[i]
}
