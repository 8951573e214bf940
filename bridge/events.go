package bridge

import (
	"context"
	"sync"
)

// subscriptionBuffer is how many events a subscriber may fall behind before
// it is dropped; a dropped stream reconnects and catches up from the log
// (SSE Last-Event-ID), so nothing is lost and nothing blocks the bridge.
const subscriptionBuffer = 1024

// Subscription receives a bridge's events as they happen.
type Subscription struct {
	C       <-chan Event
	c       chan Event
	session string
	b       *Bridge
	once    sync.Once
	dropped bool
}

// Subscribe returns the events of session (of every session when ""),
// from now on. Close it when done.
func (b *Bridge) Subscribe(session string) *Subscription {
	c := make(chan Event, subscriptionBuffer)
	s := &Subscription{C: c, c: c, session: session, b: b}
	b.mu.Lock()
	b.subs[s] = true
	b.mu.Unlock()
	return s
}

// deliver hands e over without blocking; it is called with b.mu held.
func (s *Subscription) deliver(e Event) {
	select {
	case s.c <- e:
	default:
		s.dropped = true
		delete(s.b.subs, s)
		s.close()
	}
}

func (s *Subscription) close() { s.once.Do(func() { close(s.c) }) }

// Dropped reports whether the subscription was closed because its reader
// fell too far behind.
func (s *Subscription) Dropped() bool {
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	return s.dropped
}

// Close ends the subscription.
func (s *Subscription) Close() {
	s.b.mu.Lock()
	delete(s.b.subs, s)
	s.b.mu.Unlock()
	s.close()
}

// EventsAfter returns logged events after seq (of session, when set), at
// most limit, for a stream that resumes.
func (b *Bridge) EventsAfter(ctx context.Context, seq int64, session string, limit int) ([]Event, error) {
	return b.st.eventsAfter(ctx, seq, session, limit)
}
