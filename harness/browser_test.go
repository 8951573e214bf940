package harness

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
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
