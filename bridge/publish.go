package bridge

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/askctl/askctl/bridgeapi"
)

// publishStatus tells the surfaces a session's state.
func (b *Bridge) publishStatus(id string) { b.publishStatusIn(context.Background(), id) }

// publishStatusIn is publishStatus with ctx's values (urgently). The
// state is read and its event logged with no other event of the session
// logged between: a status read before a new question was stored cannot
// be logged after that question's event, where it would tell the surfaces
// that nobody waits any more, about a question that does wait.
func (b *Bridge) publishStatusIn(ctx context.Context, id string) {
	unlock := b.order.lock(id)
	ss, err := b.Session(ctx, id)
	if defect("status-read-without-waiting") {
		ss, err = b.st.session(ctx, id) // the store's bare row: waiting_for_user never filled
	}
	if err != nil {
		unlock()
		return
	}
	if statusRead != nil {
		statusRead() // a test's moment between the read and the log
	}
	o := b.logEvent(ctx, statusEvent(ss))
	unlock()
	b.delivered(o)
}

// statusRead, in tests, runs between a status's read and its log.
var statusRead func()

func statusEvent(ss *bridgeapi.Session) bridgeapi.Event {
	waiting := ss.WaitingForUser
	var pq *string
	if ss.PendingQuestionID != "" {
		pending := ss.PendingQuestionID
		pq = &pending
	}
	return bridgeapi.Event{Type: bridgeapi.EventStatus, SessionID: ss.ID, Status: ss.Status, WaitingForUser: &waiting, PendingQuestionID: pq,
		ExitCode: ss.ExitCode, Detail: ss.Detail, Time: time.Now().UTC()}
}

// publish logs an event and hands it to every subscriber of its session.
//
// The event is logged with the store's next commit, and delivered once it
// is committed, in the log's order; publish returns when it is delivered.
// Publishes from many goroutines share commits.
func (b *Bridge) publish(e bridgeapi.Event) { b.publishIn(context.Background(), e) }

// publishIn is publish with ctx's values (urgently), never its
// cancellation: an event is delivered once it is logged.
func (b *Bridge) publishIn(ctx context.Context, e bridgeapi.Event) {
	unlock := func() {} // an event of no session waits for nothing
	if e.SessionID != "" {
		unlock = b.order.lock(e.SessionID)
	}
	o := b.logEvent(ctx, e)
	unlock()
	b.delivered(o)
}

// logEvent logs e and queues it for delivery once committed.
func (b *Bridge) logEvent(ctx context.Context, e bridgeapi.Event) *outgoing {
	e.Time = time.Now().UTC()
	data, _ := json.Marshal(e)
	o := &outgoing{e: e, done: make(chan struct{})}
	err := b.st.appendEvent(context.WithoutCancel(ctx), e.SessionID, data, e.Time, b.queue(o))
	if err != nil {
		// Not logged (a resumed stream will not replay it), but surfaces
		// that are connected still hear it.
		b.cfg.Logf("logging an event: %v", err)
		o.subs = b.subGen.Load()
		b.out.push(o)
	}
	return o
}

// ended records how session ss ended, with the end of its agent's stderr
// when stderr is not nil, and logs its status event in the same commit,
// so whoever reads the session ended finds its end in the log. Like every
// change of an ended session, it is retried until it is written (a full
// disk), or the session would stay "running" until a restart; it fails
// only when the bridge closes first.
func (b *Bridge) ended(ss *bridgeapi.Session, stderr *string) error {
	unlock := b.order.lock(ss.ID)
	b.fillWaiting(b.ctx, ss)
	var o *outgoing
	err := b.durably("session "+ss.ID+": marking it "+ss.Status, func(ctx context.Context) error {
		e := statusEvent(ss)
		data, _ := json.Marshal(e)
		o = &outgoing{e: e, done: make(chan struct{})}
		return b.st.setStatusLogged(ctx, ss, stderr, data, e.Time, b.queue(o))
	})
	unlock()
	if err != nil {
		return err
	}
	b.delivered(o)
	return nil
}

// queue is the store's after for o's event: once committed, it is queued
// for delivery to the subscriptions made so far; a later one finds it in
// the log (or in the state it reads), so it is not delivered there too,
// late, after what that one read.
func (b *Bridge) queue(o *outgoing) func(seq int64) {
	return func(seq int64) {
		o.e.Seq, o.subs = seq, b.subGen.Load()
		b.out.push(o)
	}
}

// delivered waits until o is delivered (or the deliverer has ended).
func (b *Bridge) delivered(o *outgoing) {
	select {
	case <-o.done:
	case <-b.out.exited:
	}
}

// outbox hands logged events from the store's writer to the deliverer, so
// the writer never waits for the bridge's lock.
type outbox struct {
	mu     sync.Mutex
	queue  []*outgoing
	wake   chan struct{} // 1-buffered: the queue has something
	exited chan struct{} // closed when the deliverer has ended
}

type outgoing struct {
	e    bridgeapi.Event
	subs int64         // delivered to the subscriptions numbered up to this
	done chan struct{} // closed when delivered
}

func (o *outbox) push(e *outgoing) {
	o.mu.Lock()
	o.queue = append(o.queue, e)
	o.mu.Unlock()
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// deliver hands each logged event to the subscriptions that want it, in
// order, until the bridge ends and the queue is empty.
func (b *Bridge) deliver() {
	defer close(b.out.exited)
	for {
		select {
		case <-b.out.wake:
		case <-b.ctx.Done():
		}
		b.mu.Lock()
		b.out.mu.Lock()
		queue := b.out.queue
		b.out.queue = nil
		b.out.mu.Unlock()
		if len(queue) == 0 && b.ctx.Err() != nil {
			b.mu.Unlock()
			return
		}
		for _, o := range queue {
			for s := range b.subs {
				if s.gen <= o.subs && (s.session == "" || s.session == o.e.SessionID) {
					s.deliver(o.e)
				}
			}
		}
		b.mu.Unlock()
		for _, o := range queue {
			close(o.done)
		}
	}
}
