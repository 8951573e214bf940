package browser

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/askctl/askctl/internal/testenv"
	"github.com/askctl/askctl/surface"
)

// A tab opened ahead of time while the bridge restarts can lose its
// script with the old bridge, and wait for a replay that never comes: the
// harness tells the surface of the restart, and the next Open gets a tab
// of the bridge that is up. Before, Open waited for the lost tab until
// the start limit, past its own step's deadline: UI-PERSIST failed 1 run
// in 8–20 through the page on a busy machine.
func TestRestartDropsTheSpareTab(t *testing.T) {
	testenv.Chromium(t)
	t.Parallel()

	// The page: ready (data-synced) once its script runs, anew at each
	// change of the fragment. While hang is set, the script never comes,
	// as from a bridge killed mid-load.
	var mu sync.Mutex
	hang := false
	hung := make(chan struct{}, 16)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/":
			fmt.Fprint(w, `<!doctype html><html><head><script src="/app.js"></script></head><body><p>page</p></body></html>`)
		case "/app.js":
			mu.Lock()
			h := hang
			mu.Unlock()
			if h {
				hung <- struct{}{}
				select {
				case <-release:
				case <-r.Context().Done():
				}
				return
			}
			w.Header().Set("Content-Type", "text/javascript")
			fmt.Fprint(w, `let n = 0; const sync = () => { document.documentElement.dataset.synced = String(++n); };
sync(); addEventListener("hashchange", sync);`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	defer close(release)

	spec := surface.Spec{Kind: "browser", URL: srv.URL + "/#session={session}",
		Browser: &surface.BrowserSpec{Map: surface.BrowserMap{Request: "article[data-qid]", ID: "data-qid", State: "data-state", Text: ".q", Send: "^Send", Ready: "html@data-synced"}},
		// A start limit longer than the step below: a lost spare that
		// is waited for until it runs out fails the step.
		Limits: surface.Limits{Start: surface.Duration(2 * time.Minute)}}
	s := newBrowserSurface(spec, func() (string, error) { return "", nil })
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.Warm(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	hang = true
	mu.Unlock()
	a, err := s.Open(ctx, "a", func(surface.Event) {})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	// The next spare is on its way, and its script hangs.
	select {
	case <-hung:
	case <-ctx.Done():
		t.Fatal("the next spare tab never asked for the page's script")
	}
	mu.Lock()
	hang = false
	mu.Unlock()

	s.BridgeRestarted()
	step, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	b, err := s.Open(step, "b", func(surface.Event) {})
	if err != nil {
		t.Fatalf("opening a session after the restart: %v", err)
	}
	defer b.Close()
}
