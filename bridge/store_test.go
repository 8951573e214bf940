//go:build !mutation

package bridge

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/askctl/askctl/bridgeapi"
)

// TestGroupCommitIsolatesAFailedWrite: writes made at once share a commit;
// one that fails (a duplicate session id) fails alone: every other write
// of its group is committed, and each caller hears its own outcome.
func TestGroupCommitIsolatesAFailedWrite(t *testing.T) {
	st, err := openStore(filepath.Join(t.TempDir(), "b.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	for try := 0; st.isolated.Load() == 0; try++ {
		if try == 10 {
			t.Fatal("no group ever held a failed write (the writes were never grouped)")
		}
		// Hold the writer while the writes queue, so they form one group.
		hold, held := make(chan struct{}), make(chan struct{})
		go st.write(ctx, func(*sql.Tx) error { close(held); <-hold; return nil }, nil)
		<-held
		const n = 20
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				id := fmt.Sprintf("s_%d_%d", try, i)
				if i == n/2 {
					id = fmt.Sprintf("s_%d_%d", try, 0) // the same id as write 0: one of the two fails
				}
				errs[i] = st.insertSession(ctx, &bridgeapi.Session{ID: id, Prompt: "p", Status: bridgeapi.StatusRunning, CreatedAt: time.Now()})
			}()
		}
		time.Sleep(50 * time.Millisecond) // let them queue (a try without a group is retried)
		close(hold)
		wg.Wait()
		failed := 0
		for _, err := range errs {
			if err != nil {
				failed++
			}
		}
		if failed != 1 {
			t.Fatalf("try %d: %d writes failed, want exactly the duplicate: %v", try, failed, errors.Join(errs...))
		}
		all, err := st.sessions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		count := 0
		for _, ss := range all {
			var a, b int
			if _, err := fmt.Sscanf(ss.ID, "s_%d_%d", &a, &b); err == nil && a == try {
				count++
			}
		}
		if count != n-1 {
			t.Fatalf("try %d: %d sessions committed, want %d (all but the duplicate)", try, count, n-1)
		}
	}
}

// TestLateSubscriberHearsOnlyLaterEvents: an event committed before a
// surface subscribed is not delivered to it afterwards (it read that state
// already, after subscribing): pending --wait would show a question that
// was answered in between. The deliverer is held (b.mu) while the event is
// committed and the subscription is made.
func TestLateSubscriberHearsOnlyLaterEvents(t *testing.T) {
	b, err := New(Config{DB: filepath.Join(t.TempDir(), "b.db"), Claude: "/bin/false"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	early := b.Subscribe("")
	defer early.Close()
	b.mu.Lock()
	published := make(chan struct{})
	go func() {
		b.publish(bridgeapi.Event{Type: bridgeapi.EventQuestion, SessionID: "s_1", QuestionID: "q_1"})
		close(published)
	}()
	for queued := false; !queued; {
		b.out.mu.Lock()
		queued = len(b.out.queue) == 1
		b.out.mu.Unlock()
		time.Sleep(time.Millisecond)
	}
	// Committed, not yet delivered: a surface subscribes now (as Subscribe
	// does, with b.mu held here).
	late := &Subscription{c: make(chan bridgeapi.Event, 8), b: b}
	late.C = late.c
	late.gen = b.subGen.Add(1)
	b.subs[late] = true
	b.mu.Unlock()
	<-published
	select {
	case e := <-early.C:
		if e.QuestionID != "q_1" {
			t.Errorf("early subscriber got %+v", e)
		}
	default:
		t.Error("the subscriber from before the commit did not hear the event")
	}
	select {
	case e := <-late.C:
		t.Errorf("the subscriber from after the commit heard it too, late: %+v", e)
	default:
	}
}

// TestUrgentWritesGoFirst: a person's writes (urgently) do not wait behind
// the writes already queued (a storm of session starts): they are in the
// next commit, and the queued ones after it.
func TestUrgentWritesGoFirst(t *testing.T) {
	st, err := openStore(filepath.Join(t.TempDir(), "b.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	// Hold the writer in a commit while the others queue.
	hold, held := make(chan struct{}), make(chan struct{})
	go st.write(ctx, func(*sql.Tx) error { close(held); <-hold; return nil }, nil)
	<-held
	var mu sync.Mutex
	var order []string
	committed := func(name string) func() {
		return func() { mu.Lock(); order = append(order, name); mu.Unlock() }
	}
	var wg sync.WaitGroup
	const queued = maxGroup + 10 // more than one commit's worth
	for i := range queued {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = st.write(ctx, func(*sql.Tx) error { return nil }, committed(fmt.Sprint("start", i)))
		}()
	}
	// Wait until they are all queued: the queue holds maxGroup, and the
	// rest wait to enter it.
	for len(st.ops) < maxGroup {
		runtime.Gosched()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = st.write(urgently(ctx), func(*sql.Tx) error { return nil }, committed("answer"))
	}()
	for len(st.urgent) < 1 {
		runtime.Gosched()
	}
	close(hold)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute): // a backstop: the writes take milliseconds
		t.Fatalf("the writes were not all committed within a minute: %d of %d", len(order), queued+1)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(order) != queued+1 {
		t.Fatalf("%d writes committed, want %d", len(order), queued+1)
	}
	if at := slices.Index(order, "answer"); at != 0 {
		t.Errorf("the answer's write was committed after %d queued writes, want before them", at)
	}
}

// TestStatusIsNotOvertaken: a session's status is read and logged with no
// other event of that session logged between. Were a question logged
// between, the status read before it (nobody waits) would reach the
// surfaces after it, and a page would close the question's card: "settled
// while this page was away" (seen once in CI, through the page).
func TestStatusIsNotOvertaken(t *testing.T) {
	b, err := New(Config{DB: filepath.Join(t.TempDir(), "b.db"), Claude: "/bin/false"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	if err := b.st.insertSession(ctx, &bridgeapi.Session{ID: "s_1", Status: "running", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	sub := b.Subscribe("")
	defer sub.Close()
	asked := make(chan struct{})
	statusRead = func() {
		go func() {
			b.publish(bridgeapi.Event{Type: bridgeapi.EventQuestion, SessionID: "s_1", QuestionID: "q_2"})
			close(asked)
		}()
		// The question's chance to be logged first, were nothing to stop
		// it; with the order held it waits, however long this is.
		time.Sleep(100 * time.Millisecond)
	}
	defer func() { statusRead = nil }()
	b.publishStatus("s_1")
	<-asked
	var got []string
	for len(got) < 2 {
		select {
		case e := <-sub.C:
			got = append(got, e.Type)
		case <-time.After(10 * time.Second):
			t.Fatalf("heard %v, want two events", got)
		}
	}
	if got[0] != bridgeapi.EventStatus || got[1] != bridgeapi.EventQuestion {
		t.Errorf("events in the order %v, want the status (read before the question) first", got)
	}
}
