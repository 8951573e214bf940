package browser

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/askctl/askctl/surface"
)

// A wait on the page that a context ended says which one: the step's own
// deadline, the step stopped, the tab gone, or the harness's limit. It
// said "context canceled" for the step's deadline before (an AfterFunc
// cancels the wait's context, whatever ended the step's).
func TestStoppedNamesWhatEndedTheWait(t *testing.T) {
	live := context.Background()
	expired, cancel := context.WithDeadline(live, time.Now().Add(-time.Second))
	defer cancel()
	stoppedCtx, stop := context.WithCancel(live)
	stop()
	closedTab, closeTab := context.WithCancelCause(live)
	closeTab(errors.New("target crashed"))
	other := errors.New("net::ERR_CONNECTION_REFUSED")

	for _, tc := range []struct {
		name     string
		ctx, tab context.Context
		err      error
		want     string
	}{
		{"step deadline", expired, live, context.Canceled, "the step's own deadline passed first"},
		{"step stopped", stoppedCtx, live, context.Canceled, "the step was stopped (context canceled)"},
		{"tab closed", live, closedTab, context.Canceled, "the tab closed (target crashed)"},
		{"limit", live, live, context.DeadlineExceeded, "not within 10s"},
		{"step deadline before the tab", expired, closedTab, context.Canceled, "the step's own deadline passed first"},
		{"another error", expired, closedTab, other, other.Error()},
		{"wrapped", live, live, errors.Join(errors.New("evaluating"), context.DeadlineExceeded), "not within 10s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := stopped(tc.ctx, tc.tab, 10*time.Second, tc.err)
			if got.Error() != tc.want {
				t.Errorf("stopped = %q, want %q", got, tc.want)
			}
			if tc.err == other && got != other {
				t.Errorf("another error came back as %v, want it as it was", got)
			}
			if tc.name == "step stopped" && !errors.Is(got, context.Canceled) {
				t.Errorf("%v does not wrap context.Canceled", got)
			}
			if strings.Contains(tc.want, "deadline") && strings.Contains(got.Error(), "canceled") {
				t.Errorf("a deadline told as a cancel: %v", got)
			}
		})
	}
}

// A spare tab hands over what it showed of a session: all of it to the
// session's first tab (a question withdrawn at once was seen then), only
// what is still pending to a tab opened for it again, as a page loaded now
// shows. The explorer found a reconnect that took an answered question
// for the one being replayed.
func TestAdoptTellsAReconnectOnlyWhatIsPending(t *testing.T) {
	spare := func() *browserConn {
		now := time.Now()
		return &browserConn{
			s: &browserSurface{spec: surface.Spec{Browser: &surface.BrowserSpec{}}},
			last: map[string]browserRequest{
				"q_ended":   {ID: "q_ended", Session: "s_1", Ended: "answered", seen: now.Add(-2 * time.Second)},
				"q_pending": {ID: "q_pending", Session: "s_1", seen: now.Add(-time.Second)},
				"q_other":   {ID: "q_other", Session: "s_2", seen: now},
			},
		}
	}
	for _, tc := range []struct {
		again bool
		want  string
	}{
		{false, "question q_ended, answered q_ended, question q_pending"},
		{true, "question q_pending"},
	} {
		c := spare()
		var got []string
		c.adopt("s_1", tc.again, func(e surface.Event) { got = append(got, e.Type+" "+e.QuestionID) })
		if g := strings.Join(got, ", "); g != tc.want {
			t.Errorf("again=%v: told %q, want %q", tc.again, g, tc.want)
		}
		if _, ok := c.last["q_ended"]; !ok {
			t.Errorf("again=%v: the ended question is forgotten: a later snapshot would tell of it as new", tc.again)
		}
	}
}
