package bridge

import (
	"context"
	"sync"

	"github.com/askctl/askctl/bridgeapi"
	"github.com/askctl/askctl/protocol"
)

// subscriptionBuffer is how many events a subscriber may fall behind before
// it is dropped; a dropped stream reconnects and catches up from the log
// (SSE Last-Event-ID), so nothing is lost and nothing blocks the bridge.
const subscriptionBuffer = 1024

// Subscription receives a bridge's events as they happen.
type Subscription struct {
	C       <-chan bridgeapi.Event
	c       chan bridgeapi.Event
	session string
	b       *Bridge
	once    sync.Once
	gen     int64 // when it subscribed (Bridge.subGen): it hears events committed after
}

// Subscribe returns the events of session (of every session when ""),
// from now on: the events committed to the log after it subscribed (what
// was committed before is in the log and the state a surface reads after
// subscribing). Close it when done.
func (b *Bridge) Subscribe(session string) *Subscription {
	if defect("sessions-crossed") {
		session = ""
	}
	c := make(chan bridgeapi.Event, subscriptionBuffer)
	s := &Subscription{C: c, c: c, session: session, b: b}
	b.mu.Lock()
	s.gen = b.subGen.Add(1)
	b.subs[s] = true
	b.mu.Unlock()
	return s
}

// deliver hands e over without blocking; it is called with b.mu held.
func (s *Subscription) deliver(e bridgeapi.Event) {
	select {
	case s.c <- e:
	default:
		delete(s.b.subs, s)
		s.close()
	}
}

func (s *Subscription) close() { s.once.Do(func() { close(s.c) }) }

// Close ends the subscription.
func (s *Subscription) Close() {
	s.b.mu.Lock()
	delete(s.b.subs, s)
	s.b.mu.Unlock()
	s.close()
}

// EventsAfter returns logged events after seq (of session, when set), at
// most limit, for a stream that resumes.
func (b *Bridge) EventsAfter(ctx context.Context, seq int64, session string, limit int) ([]bridgeapi.Event, error) {
	return b.st.eventsAfter(ctx, seq, session, limit)
}

// Head is the sequence number of the latest logged event (0: none): a
// stream that starts with a Snapshot resumes after it.
func (b *Bridge) Head(ctx context.Context) (int64, error) { return b.st.head(ctx) }

// Snapshot is what a surface that connects is told first: the session's
// status (with a session), then every pending question, with its id.
func (b *Bridge) Snapshot(ctx context.Context, session string) []bridgeapi.Event {
	var out []bridgeapi.Event
	if session != "" {
		if ss, err := b.Session(ctx, session); err == nil {
			out = append(out, statusEvent(ss))
		}
	}
	if defect("lost-on-reconnect") {
		return out
	}
	filter := session
	if defect("snapshot-all-sessions") {
		filter = ""
	}
	qs, _ := b.Pending(ctx, filter)
	for _, q := range qs {
		questions := shown(q.Questions)
		if defect("replay-multiselect-lost") {
			questions = append([]protocol.Question(nil), questions...)
			for i := range questions {
				questions[i].MultiSelect = false
			}
		}
		qid := q.ID
		if defect("replay-request-id") {
			qid = q.RequestID
		}
		out = append(out, bridgeapi.Event{Type: bridgeapi.EventQuestion, SessionID: q.SessionID, QuestionID: qid, Questions: questions, TimeoutSeconds: q.TimeoutSeconds, Time: q.CreatedAt})
	}
	return out
}
