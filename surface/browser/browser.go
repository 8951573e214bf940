// Package browser is the browser surface: it registers the kind "browser"
// with package surface, so only the programs that import it link a
// browser driver.
package browser

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/askctl/askctl/internal/chromium"
	"github.com/askctl/askctl/protocol"
	"github.com/askctl/askctl/surface"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// The browser adapter drives a web UI in a real headless Chromium, as a
// person would: it finds each request and its controls by the profile's
// map — CSS for the containers, ARIA roles and accessible names for the
// controls, as a screen reader finds them — clicks options, types, presses
// Send or Skip, and reads what the page then says. It checks the layer the
// other adapters cannot reach: what the person sees. Sessions are started
// through the HTTP API (surface.api), as the socket adapters do; each Conn
// is a tab.

func init() {
	surface.Register("browser", func(s surface.Spec, token surface.Token) (surface.Surface, error) {
		return newBrowserSurface(s, token), nil
	})
}

//go:embed browser.js
var browserDriver string

type browserSurface struct {
	spec  surface.Spec
	api   surface.Surface
	token func() (string, error)

	mu        sync.Mutex
	shared    *sharedBrowser
	loggedIn  bool
	tabs      map[*browserConn]bool
	closed    bool
	spare     *browserConn // a tab ready at the page of every session
	preparing bool         // a spare is being opened; spareDone closes when it is
	spareDone chan struct{}
	spareErr  error
	restarts  int                // the bridge's restarts told (BridgeRestarted): a spare opened before the last one is not used
	stopSpare context.CancelFunc // ends the spare's opening
	// opened is the sessions a tab was opened for: a tab opened for one
	// again (a reconnect) tells of what is pending, as a fresh page would,
	// not of what ended while the spare tab looked on.
	opened map[string]bool
	// settled is the requests a person answered or skipped in one of this
	// surface's tabs (under settledMu, apart from mu: a tab's lock is held
	// when it is read). A tab opened for a session after that does not
	// tell of them, as a page loaded then would not show them.
	settledMu sync.Mutex
	settled   map[string]bool
	// gestures counts the person's answers and skips in each session: its
	// parity picks their way to one (browser.js, changesMind), the first
	// of a session changing its mind. By session, so that a row of a case
	// that ended early does not turn the next row's way around.
	gestureMu sync.Mutex
	gestures  map[string]int
}

func newBrowserSurface(s surface.Spec, token func() (string, error)) *browserSurface {
	return &browserSurface{spec: s, token: token, api: surface.NewAPI(s, token), tabs: map[*browserConn]bool{}, opened: map[string]bool{}, settled: map[string]bool{}}
}

// Warm starts the browser, logs it in and opens a tab at the page, before
// the first session: a question asked as a session starts is then seen
// (surface.Warmer).
func (s *browserSurface) Warm(ctx context.Context) error {
	s.prepareSpare()
	s.mu.Lock()
	done := s.spareDone
	s.mu.Unlock()
	if done != nil {
		select {
		case <-done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.spare == nil {
		return fmt.Errorf("the page did not open: %v", s.spareErr)
	}
	return nil
}

func (s *browserSurface) Kind() string { return "browser" }

func (s *browserSurface) Start(ctx context.Context, prompt string) (string, error) {
	return s.api.Start(ctx, prompt)
}

// Stop stops a session through the bridge's API, as Start starts one.
func (s *browserSurface) Stop(ctx context.Context, session string) error {
	st, ok := s.api.(surface.Stopper)
	if !ok {
		return &surface.Unsupported{Op: "stop", Message: "the surface's API stops no session"}
	}
	return st.Stop(ctx, session)
}

// Close closes the surface's tabs, and lets go of the browser.
func (s *browserSurface) Close() error {
	s.mu.Lock()
	tabs := make([]*browserConn, 0, len(s.tabs))
	for c := range s.tabs {
		tabs = append(tabs, c)
	}
	shared := s.shared
	s.shared, s.spare, s.closed = nil, nil, true
	if s.preparing {
		s.stopSpare()
	}
	s.mu.Unlock()
	for _, c := range tabs {
		_ = c.Close()
	}
	if shared != nil {
		shared.release()
	}
	return nil
}

// browser is the shared Chromium, logged in when the profile says so.
func (s *browserSurface) browser(ctx context.Context) (context.Context, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errors.New("the browser surface is closed")
	}
	if s.shared == nil {
		path, err := chromium.Find(s.spec.Browser.Chromium)
		if err != nil {
			return nil, fmt.Errorf("the browser surface: %w (or surface.browser.chromium)", err)
		}
		if s.shared, err = acquireBrowser(path, s.spec.Browser.Flags, s.spec.StartLimit()); err != nil {
			return nil, err
		}
	}
	if s.spec.Browser.Login == "api" && !s.loggedIn {
		if err := s.login(ctx, s.shared.root); err != nil {
			return nil, err
		}
		s.loggedIn = true
	}
	return s.shared.root, nil
}

// A Chromium is shared by every browser surface of the process with the
// same browser and flags: a conformance run starts it once, not once a
// case. It stops a few seconds after its last surface closes (and with the
// process: chromedp has the kernel kill it then).
var browsers = struct {
	mu sync.Mutex
	m  map[string]*sharedBrowser
}{m: map[string]*sharedBrowser{}}

type sharedBrowser struct {
	key   string
	root  context.Context
	stop  func()
	users int
	idle  *time.Timer
}

func acquireBrowser(path string, flags []string, limit time.Duration) (*sharedBrowser, error) {
	key := path + "\x00" + strings.Join(flags, "\x00")
	browsers.mu.Lock()
	defer browsers.mu.Unlock()
	if b := browsers.m[key]; b != nil {
		if b.idle != nil {
			b.idle.Stop()
			b.idle = nil
		}
		b.users++
		return b, nil
	}
	sweepProfiles()
	dir, err := os.MkdirTemp("", profilePrefix+strconv.Itoa(os.Getpid())+"-*")
	if err != nil {
		return nil, err
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.UserDataDir(dir), chromedp.WindowSize(1000, 900), chromedp.Flag("disable-quic", true), chromedp.Flag("disable-component-update", true),
		// computedRole and computedName: the driver finds controls by role
		// and accessible name.
		chromedp.Flag("enable-blink-features", "ComputedAccessibilityInfo"))
	for _, f := range flags {
		k, v, _ := strings.Cut(strings.TrimLeft(f, "-"), "=")
		if v == "" {
			opts = append(opts, chromedp.Flag(k, true))
		} else {
			opts = append(opts, chromedp.Flag(k, v))
		}
	}
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	root, rcancel := chromedp.NewContext(actx)
	if err := first(root, limit); err != nil {
		rcancel()
		acancel()
		os.RemoveAll(dir)
		return nil, fmt.Errorf("starting %s: %w", path, err)
	}
	b := &sharedBrowser{key: key, root: root, users: 1, stop: func() { rcancel(); acancel(); os.RemoveAll(dir) }}
	browsers.m[key] = b
	return b, nil
}

func (b *sharedBrowser) release() {
	browsers.mu.Lock()
	defer browsers.mu.Unlock()
	if b.users--; b.users > 0 {
		return
	}
	b.idle = time.AfterFunc(5*time.Second, func() {
		browsers.mu.Lock()
		defer browsers.mu.Unlock()
		if b.users == 0 && browsers.m[b.key] == b {
			delete(browsers.m, b.key)
			b.stop()
		}
	})
}

// StopAll stops every Chromium this process started, now, and removes its
// profile directory: a process about to end calls it, since the idle stop
// after the last surface closes comes seconds after a command has exited.
func StopAll() {
	browsers.mu.Lock()
	defer browsers.mu.Unlock()
	for key, b := range browsers.m {
		if b.idle != nil {
			b.idle.Stop()
		}
		delete(browsers.m, key)
		b.stop()
	}
}

// profilePrefix starts the name of each Chromium profile directory, which
// goes on with the pid of the process that made it.
const profilePrefix = "askctl-chromium-"

// sweepProfiles removes the profile directories of processes that have
// ended (a test binary or a library user that exited before its browser's
// idle stop, a process killed), an hour after they were last changed: a browser started leaves no more than one
// behind, and only while its process lives.
func sweepProfiles() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), profilePrefix+"*-*"))
	for _, d := range dirs {
		pid, err := strconv.Atoi(strings.SplitN(strings.TrimPrefix(filepath.Base(d), profilePrefix), "-", 2)[0])
		if err != nil || pid <= 0 || pid == os.Getpid() || alive(pid) {
			continue
		}
		// Not touched for an hour: a pid of another pid namespace sharing
		// the directory looks ended from here, and its browser may run.
		if fi, err := os.Stat(d); err != nil || time.Since(fi.ModTime()) < time.Hour {
			continue
		}
		_ = os.RemoveAll(d)
	}
}

// first makes ctx's browser or tab, within limit. It must run on ctx
// itself, with no deadline of its own: chromedp ends a browser or a tab
// with the context of its first action.
func first(ctx context.Context, limit time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- chromedp.Do(ctx) }()
	select {
	case err := <-done:
		return err
	case <-time.After(limit):
		_ = chromedp.Cancel(ctx)
		return fmt.Errorf("not up within %v", limit)
	}
}

// login opens a one-time login link in a tab of its own and waits until the
// page has the key.
func (s *browserSurface) login(ctx context.Context, root context.Context) error {
	c, err := surface.Client(s.spec, s.token)
	if err != nil {
		return err
	}
	link, _, err := c.LoginURL(ctx)
	if err != nil {
		return fmt.Errorf("logging the browser in: %w", surface.Rejection(err))
	}
	tab, tcancel := chromedp.NewContext(root)
	defer tcancel()
	if err := first(tab, s.spec.StartLimit()); err != nil {
		return fmt.Errorf("logging the browser in: %w", err)
	}
	lctx, cancel := context.WithTimeout(tab, s.spec.StartLimit())
	defer cancel()
	if err := chromedp.Do(lctx, chromedp.Navigate(link)); err != nil {
		return fmt.Errorf("logging the browser in: %w", err)
	}
	for {
		loc, err := chromedp.Run(lctx, chromedp.Location())
		if err != nil {
			return fmt.Errorf("logging the browser in: %w", err)
		}
		if u, _ := url.Parse(loc); u != nil && u.Path != "/login" {
			return nil
		}
		select {
		case <-lctx.Done():
			return fmt.Errorf("logging the browser in: the login page did not go on to the page within %v", s.spec.StartLimit())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Open connects a person: a tab at the page of the session (or of every
// session). A tab is kept ready at the page of every session, so opening
// one is a change of the address's fragment where the profile's URL puts
// the session there (the reference page does), not a page load: a question
// asked as the session starts is seen before it is gone.
func (s *browserSurface) Open(ctx context.Context, session string, sink func(surface.Event)) (surface.Conn, error) {
	if _, err := s.browser(ctx); err != nil {
		return nil, err
	}
	target := s.pageURL(session)
	s.mu.Lock()
	for s.spare == nil && s.preparing { // again when one opened across a restart was dropped
		done := s.spareDone
		s.mu.Unlock()
		select {
		case <-done:
		case <-ctx.Done():
			return nil, fmt.Errorf("opening %s in the browser: waiting for the tab opened ahead for it: %w", target, stopped(ctx, context.Background(), s.spec.StartLimit(), ctx.Err()))
		}
		s.mu.Lock()
	}
	c := s.spare
	s.spare = nil
	again := session != "" && s.opened[session]
	if session != "" {
		s.opened[session] = true
	}
	s.mu.Unlock()
	defer s.prepareSpare()
	if c != nil && c.url == target {
		c.adopt(session, again, sink) // the page of every session, as the spare shows it
		return c, nil
	}
	if c != nil && sameDocument(c.url, target) {
		if err := c.switchTo(ctx, target, session, again, sink); err != nil {
			_ = c.Close()
			return nil, err
		}
		return c, nil
	}
	if c != nil {
		_ = c.Close()
	}
	return s.newTab(ctx, target, session, sink)
}

// pageURL is the page of one session, or of every session ("").
func (s *browserSurface) pageURL(session string) string {
	return strings.ReplaceAll(s.spec.URL, "{session}", url.QueryEscape(session))
}

// sameDocument reports whether two addresses differ only after the #.
func sameDocument(a, b string) bool {
	da, _, okA := strings.Cut(a, "#")
	db, _, okB := strings.Cut(b, "#")
	return okA && okB && da == db
}

// prepareSpare opens the next tab in the background.
func (s *browserSurface) prepareSpare() {
	s.mu.Lock()
	if s.spare != nil || s.preparing || s.closed {
		s.mu.Unlock()
		return
	}
	s.preparing, s.spareDone = true, make(chan struct{})
	done, restarts := s.spareDone, s.restarts
	ctx, cancel := context.WithTimeout(context.Background(), s.spec.StartLimit())
	s.stopSpare = cancel
	s.mu.Unlock()
	go func() {
		defer close(done) // after a stale spare's successor is under way
		defer cancel()
		var c *browserConn
		_, err := s.browser(ctx)
		if err == nil {
			c, err = s.newTab(ctx, s.pageURL(""), "", nil)
		}
		s.mu.Lock()
		stale := s.restarts != restarts
		s.preparing, s.spareErr = false, err
		if err == nil && !stale && !s.closed && s.spare == nil {
			s.spare, c = c, nil
		}
		s.mu.Unlock()
		if c != nil {
			_ = c.Close()
		}
		if stale {
			s.prepareSpare()
		}
	}()
}

// BridgeRestarted drops the spare tab, ready or on its way, and opens
// another on the bridge that is up now (surface.RestartWatcher). A page
// whose load straddled the restart can have lost its script with the old
// bridge: it would wait for a replay that never comes, and Open with it.
func (s *browserSurface) BridgeRestarted() {
	s.mu.Lock()
	s.restarts++
	c := s.spare
	s.spare = nil
	if s.preparing {
		s.stopSpare()
	}
	s.mu.Unlock()
	if c != nil {
		_ = c.Close()
	}
	s.prepareSpare()
}

// newTab opens a tab at target, with the driver in every document it
// loads, and waits until the page has the bridge's replay.
func (s *browserSurface) newTab(ctx context.Context, target, session string, sink func(surface.Event)) (*browserConn, error) {
	s.mu.Lock()
	shared := s.shared
	s.mu.Unlock()
	if shared == nil {
		return nil, errors.New("the browser surface is closed")
	}
	tab, cancel := chromedp.NewContext(shared.root)
	if err := first(tab, s.spec.StartLimit()); err != nil {
		cancel()
		return nil, fmt.Errorf("opening a tab: %w", err)
	}
	c := &browserConn{s: s, tab: tab, cancel: cancel, url: target, session: session, sink: sink, last: map[string]browserRequest{}, status: map[string]browserSession{}, changed: make(chan struct{})}
	s.mu.Lock()
	s.tabs[c] = true
	s.mu.Unlock()
	m, _ := json.Marshal(s.spec.Browser.Map)
	script := "window.__askctlMap = " + string(m) + ";\n" + browserDriver
	octx, ocancel := context.WithTimeout(tab, s.spec.StartLimit())
	defer ocancel()
	stop := context.AfterFunc(ctx, ocancel)
	defer stop()
	err := chromedp.Do(octx,
		chromedp.ExposeFunc("__askctlPush", func(_ context.Context, snap string) (chromedp.Void, error) {
			c.onSnapshot(snap)
			return chromedp.Void{}, nil
		}),
		func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
			_, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: script})
			return chromedp.Void{}, err
		},
		chromedp.Navigate(target))
	if err == nil {
		if err = c.await(octx, func() bool { return c.ready != "" }); err != nil {
			err = fmt.Errorf("the page did not hear the bridge's replay: %w", stopped(ctx, tab, s.spec.StartLimit(), err))
		}
	} else {
		err = stopped(ctx, tab, s.spec.StartLimit(), err)
	}
	if err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("opening %s in the browser: %w", target, err)
	}
	return c, nil
}

// adopt hands a spare tab to a person: it showed every session until now,
// and what it showed of this one is told, when it showed it (a question
// the agent withdrew at once was seen then, and is not replayed later).
// Again (the session had a tab before: a reconnect), what had ended is
// kept from the person, as a page loaded now would not show it; so is a
// request the person answered or skipped in another tab before this one
// was opened for the session, ended or not in what the spare has heard
// (a tab in the background hears the bridge late on a busy machine).
func (c *browserConn) adopt(session string, again bool, sink func(surface.Event)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.session, c.sink = session, sink
	last := c.last
	c.last, c.order, c.status = map[string]browserRequest{}, nil, map[string]browserSession{}
	for _, id := range c.order0(last) {
		r := last[id]
		if session != "" && r.Session != session {
			continue
		}
		if c.s.settledHere(id) {
			// The person settled it in another tab before opening this
			// one; the spare may not have heard yet that it ended.
			r.hidden = true
		}
		c.last[id] = r
		if r.hidden || again && r.Ended != "" {
			continue // seen, so a later snapshot does not tell of it either
		}
		c.order = append(c.order, id)
		sink(r.shownEvent())
		if e, ok := c.endedEvent(r); ok && r.Ended != "" {
			sink(e)
		}
	}
}

// switchTo points a ready tab at another session's page (a change of the
// fragment), and waits for that page's replay.
func (c *browserConn) switchTo(ctx context.Context, target, session string, again bool, sink func(surface.Event)) error {
	c.mu.Lock()
	c.url = target
	before := c.ready
	c.mu.Unlock()
	c.adopt(session, again, sink)
	// A session's page opened again is a person reconnecting: its replay
	// comes within the profile's limits.reconnect.
	limit := c.s.spec.OpLimit()
	if again {
		limit = c.s.spec.ReconnectLimit()
	}
	actx, cancel := c.boundBy(ctx, limit)
	defer cancel()
	t, _ := json.Marshal(target)
	if _, err := chromedp.Run(actx, chromedp.Evaluate[bool](`location.href = `+string(t)+`, true`)); err != nil {
		return fmt.Errorf("opening %s in the browser: %w", target, stopped(ctx, c.tab, limit, err))
	}
	if err := c.await(actx, func() bool { return c.ready != "" && c.ready != before }); err != nil {
		return fmt.Errorf("opening %s in the browser: the page did not hear the bridge's replay: %w", target, stopped(ctx, c.tab, limit, err))
	}
	return nil
}

// browserRequest is a request as one snapshot shows it.
type browserRequest struct {
	ID      string `json:"id"`
	State   string `json:"state"`
	Ended   string `json:"ended"`
	Status  string `json:"status"`
	Session string `json:"session"`
	SeenMS  int64  `json:"seen_ms"`  // the page's clock: when it first showed it
	EndedMS int64  `json:"ended_ms"` // … and how it ended
	AskedAt string `json:"asked_at"` // the bridge's times, where the page has them
	EndedAt string `json:"ended_at"`

	seen    time.Time           // when this tab first showed it
	endedAt time.Time           // when it first showed how it ended
	qs      []protocol.Question // as the page showed it then
	// hidden: a person had answered or skipped it in another tab before
	// this tab was this person's, so this tab tells nothing of it.
	hidden bool
}

type browserSession struct {
	ID      string `json:"id"`
	Status  string `json:"status"`
	Waiting bool   `json:"waiting"`
	Pending string `json:"pending"`
}

type browserConn struct {
	s       *browserSurface
	tab     context.Context
	cancel  func()
	url     string
	session string
	sink    func(surface.Event)

	mu      sync.Mutex
	seq     int64
	ready   string
	opened  int64   // the sockets the page opened (browser.js, online)
	offline bool    // taken offline, not yet online
	cutAt   sockets // the page's sockets then
	taken   bool
	last    map[string]browserRequest
	order   []string
	retell  map[string]bool // cards shown taken as the person took the session back (Reclaim): told anew once shown otherwise
	status  map[string]browserSession
	changed chan struct{} // closed and replaced at each snapshot taken
	closed  bool
}

// kind is what the map calls a request's state.
func (c *browserConn) kind(state string) string {
	if k, ok := c.s.spec.Browser.Map.States[state]; ok {
		return k
	}
	return state
}

// onSnapshot turns what the page shows now into events: new requests,
// requests that ended, the session taken over, sessions' statuses.
func (c *browserConn) onSnapshot(data string) {
	var snap struct {
		Seq      int64            `json:"seq"`
		Ready    string           `json:"ready"`
		Opened   int64            `json:"opened"`
		Taken    bool             `json:"taken"`
		Requests []browserRequest `json:"requests"`
		Sessions []browserSession `json:"sessions"`
	}
	if json.Unmarshal([]byte(data), &snap) != nil {
		return
	}
	// The questions of a request shown for the first time are read off
	// the page, with the lock let go: a read is a round trip to a browser
	// that may be slow, and every wait on this tab checks under the lock.
	qs := map[string][]protocol.Question{}
	for {
		c.mu.Lock()
		if c.closed || snap.Seq <= c.seq {
			c.mu.Unlock()
			return // an older snapshot, overtaken by a newer one
		}
		var need []string
		for _, r := range snap.Requests {
			_, seen := c.last[r.ID]
			_, read := qs[r.ID]
			if c.mine(r) && (!seen || c.retold(r)) && !read {
				need = append(need, r.ID)
			}
		}
		if len(need) == 0 {
			break // with the lock held
		}
		c.mu.Unlock()
		for _, id := range need {
			qs[id] = c.questions(id)
		}
	}
	defer c.mu.Unlock()
	c.seq = snap.Seq
	now := time.Now()
	sink := c.sink
	if sink == nil {
		sink = func(surface.Event) {} // a spare tab: nobody listens yet
	}
	for _, r := range snap.Requests {
		if !c.mine(r) {
			continue
		}
		prev, seen := c.last[r.ID]
		if c.retold(r) {
			// Taken back (Reclaim): this person is shown it anew.
			delete(c.retell, r.ID)
			prev, seen = browserRequest{}, false
			c.order = slices.DeleteFunc(c.order, func(o string) bool { return o == r.ID })
		}
		if r.Session == "" {
			r.Session = c.session
		}
		r.seen, r.endedAt, r.qs, r.hidden = prev.seen, prev.endedAt, prev.qs, prev.hidden
		if !seen && c.sink != nil && c.s.settledHere(r.ID) {
			// A person answered or skipped it in another tab before this
			// one showed it (the page may not have heard yet that it
			// ended): this tab does not tell of it, as a page loaded now
			// would not show it.
			r.hidden = true
		}
		if r.hidden {
			c.last[r.ID] = r
			continue
		}
		if !seen {
			// Shown, even if it ended before this snapshot was taken (an
			// agent that withdraws a question at once).
			c.order = append(c.order, r.ID)
			r.seen, r.qs = pageTime(r.SeenMS, now), qs[r.ID]
			sink(r.shownEvent())
		}
		if r.Ended != "" && r.Ended != prev.Ended {
			r.endedAt = pageTime(r.EndedMS, now)
			if e, ok := c.endedEvent(r); ok {
				sink(e)
			}
		}
		c.last[r.ID] = r
	}
	for _, s := range snap.Sessions {
		if c.session != "" && s.ID != c.session {
			continue
		}
		if prev, ok := c.status[s.ID]; !ok || prev != s {
			c.status[s.ID] = s
			w := s.Waiting
			sink(surface.Event{T: now, Type: surface.EventStatus, Session: s.ID, Status: s.Status, Waiting: &w, PendingID: s.Pending})
		}
	}
	if snap.Taken && !c.taken {
		sink(surface.Event{T: now, Type: surface.EventTaken, Session: c.session})
	}
	c.taken, c.ready, c.opened = snap.Taken, snap.Ready, snap.Opened
	close(c.changed)
	c.changed = make(chan struct{})
}

// retold reports whether r, shown taken as the person took the session
// back, is shown otherwise now: told anew (Reclaim). Under c.mu.
func (c *browserConn) retold(r browserRequest) bool {
	return c.retell[r.ID] && c.kind(r.State) != "taken"
}

// mine reports whether a request the page shows is of this tab's session
// (a tab pointed at its session may still show another's, from before).
func (c *browserConn) mine(r browserRequest) bool {
	return c.session == "" || r.Session == "" || r.Session == c.session
}

// order0 is the ids of last in the order they were first seen.
func (c *browserConn) order0(last map[string]browserRequest) []string {
	ids := make([]string, 0, len(last))
	for id := range last {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return last[ids[i]].seen.Before(last[ids[j]].seen) })
	return ids
}

// bound is a context of the tab (chromedp runs actions on its own
// context) that ends at the op limit, or when ctx does.
func (c *browserConn) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	return c.boundBy(ctx, c.s.spec.OpLimit())
}

// boundBy is bound with another limit.
func (c *browserConn) boundBy(ctx context.Context, limit time.Duration) (context.Context, context.CancelFunc) {
	actx, cancel := context.WithTimeout(c.tab, limit)
	stop := context.AfterFunc(ctx, cancel)
	return actx, func() { stop(); cancel() }
}

// stopped says why a wait on the page ended early, when it was a context
// that ended it: the step's own deadline (ctx, the caller's), the tab or
// its browser going away, or the harness's limit for the wait. Other
// errors are as they came.
func stopped(ctx, tab context.Context, limit time.Duration, err error) error {
	switch {
	case !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded):
		return err
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return errors.New("the step's own deadline passed first")
	case ctx.Err() != nil:
		return fmt.Errorf("the step was stopped (%w)", ctx.Err())
	case tab.Err() != nil:
		return fmt.Errorf("the tab closed (%w)", context.Cause(tab))
	}
	return fmt.Errorf("not within %v", limit)
}

// bridgeTime is a time the bridge gave (surface.Event.At: when the bridge
// says it happened), or zero.
func bridgeTime(s string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t
}

// pageTime is a time the page stamped (milliseconds since the epoch, on
// this machine's clock), or def when it gave none.
func pageTime(ms int64, def time.Time) time.Time {
	if ms <= 0 {
		return def
	}
	return time.UnixMilli(ms)
}

func (r browserRequest) shownEvent() surface.Event {
	return surface.Event{T: r.seen, At: bridgeTime(r.AskedAt), Type: surface.EventQuestion, QuestionID: r.ID, Session: r.Session, Questions: r.qs}
}

// endedEvent is the event for how r ended, if the map names it.
func (c *browserConn) endedEvent(r browserRequest) (surface.Event, bool) {
	typ := map[string]string{"answered": surface.EventAnswered, "skipped": surface.EventSkipped, "expired": surface.EventExpired, "withdrawn": surface.EventWithdrawn}[c.kind(r.Ended)]
	return surface.Event{T: r.endedAt, At: bridgeTime(r.EndedAt), Type: typ, QuestionID: r.ID, Session: r.Session, Reason: r.Status}, typ != ""
}

// questions reads a request's questions off the page. A read that fails
// or finds none (a busy browser, a card being redrawn) is tried again, a
// few times within the op limit, before it reports what it found: a
// request always shows at least one question.
func (c *browserConn) questions(qid string) []protocol.Question {
	ctx, cancel := context.WithTimeout(c.tab, c.s.spec.OpLimit())
	defer cancel()
	var qs []protocol.Question
	for try := 0; try < 5 && ctx.Err() == nil; try++ {
		if try > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(time.Duration(try) * 50 * time.Millisecond):
			}
		}
		js, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`JSON.stringify(window.__askctl.questions(%q))`, qid)))
		qs = nil
		if err == nil && json.Unmarshal([]byte(js), &qs) == nil && len(qs) > 0 {
			return qs
		}
	}
	return qs
}

// await waits until cond holds, checked after each snapshot.
func (c *browserConn) await(ctx context.Context, cond func() bool) error {
	for {
		c.mu.Lock()
		ok, ch := cond(), c.changed
		c.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (c *browserConn) Pending(ctx context.Context) ([]surface.Pending, error) {
	c.mu.Lock()
	var ids []string
	for _, id := range c.order {
		if k := c.kind(c.last[id].State); k == "pending" || k == "error" {
			ids = append(ids, id)
		}
	}
	c.mu.Unlock()
	out := []surface.Pending{}
	for _, id := range ids {
		out = append(out, surface.Pending{QuestionID: id, Session: c.session, Questions: c.questions(id)})
	}
	return out, nil
}

func (c *browserConn) Sync(ctx context.Context) error {
	sctx, cancel := context.WithTimeout(ctx, c.s.spec.OpLimit())
	defer cancel()
	return c.await(sctx, func() bool { return c.ready != "" })
}

// act runs one of the driver's operations, then waits for the page to
// settle the request: what it then says is the bridge's reply.
func (c *browserConn) act(ctx context.Context, op, qid, call string) (string, string, error) {
	actx, cancel := c.bound(ctx)
	defer cancel()
	c.mu.Lock()
	from, before := c.seq, c.last[qid]
	c.mu.Unlock()
	res, err := chromedp.Run(actx, chromedp.Evaluate[string](`JSON.stringify(`+call+`)`))
	if err != nil {
		return "", "", fmt.Errorf("%s in the browser: %w", op, stopped(ctx, c.tab, c.s.spec.OpLimit(), err))
	}
	var r struct {
		OK          bool   `json:"ok"`
		Code        string `json:"code"`
		Unsupported string `json:"unsupported"`
		Error       string `json:"error"`
	}
	_ = json.Unmarshal([]byte(res), &r)
	switch {
	case r.Unsupported != "":
		return "", "", &surface.Unsupported{Op: r.Unsupported, Message: r.Error}
	case !r.OK:
		return "", "", &surface.Rejected{Code: r.Code, Message: r.Error}
	}
	// Settled: not pending nor sending, and changed since the op (a card
	// the page refused before, in its error state, says so until it
	// answers this op). A page that answers exactly as before is taken as
	// settled after a moment.
	var k, status string
	settledNow := func(changed bool) func() bool {
		return func() bool {
			r := c.last[qid]
			k, status = c.kind(r.State), r.Status
			return c.seq > from && k != "pending" && k != "sending" && (!changed || r.State != before.State || r.Status != before.Status)
		}
	}
	wctx, wcancel := context.WithTimeout(actx, c.s.spec.Scaled(time.Second))
	err = c.await(wctx, settledNow(true))
	wcancel()
	if err != nil && actx.Err() == nil {
		err = c.await(actx, settledNow(false))
	}
	if err != nil {
		return "", "", fmt.Errorf("%s in the browser: the page did not settle question %s (it says %q): %w", op, qid, status, stopped(ctx, c.tab, c.s.spec.OpLimit(), err))
	}
	if k == "answered" || k == "skipped" {
		c.s.settledMu.Lock()
		c.s.settled[qid] = true
		c.s.settledMu.Unlock()
	}
	return k, status, nil
}

// sessionID is the session the tab shows ("" for the page of every one).
func (c *browserConn) sessionID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.session
}

// gesture counts one more answer or skip of the person in session.
func (s *browserSurface) gesture(session string) int {
	s.gestureMu.Lock()
	defer s.gestureMu.Unlock()
	if s.gestures == nil {
		s.gestures = map[string]int{}
	}
	s.gestures[session]++
	return s.gestures[session]
}

// settledHere reports whether a person answered or skipped request qid in
// one of this surface's tabs.
func (s *browserSurface) settledHere(qid string) bool {
	s.settledMu.Lock()
	defer s.settledMu.Unlock()
	return s.settled[qid]
}

func (c *browserConn) Answer(ctx context.Context, qid string, answers map[string][]string) (surface.Ack, error) {
	a, _ := json.Marshal(answers)
	k, status, err := c.act(ctx, "answer", qid, fmt.Sprintf(`window.__askctl.answer(%q, %s, %d)`, qid, a, c.s.gesture(c.sessionID())))
	if err == nil {
		err = settled(k, status)
	}
	if err != nil {
		return surface.Ack{}, err
	}
	return surface.Ack{Status: k}, nil
}

func (c *browserConn) Skip(ctx context.Context, qid, reason string) error {
	r, _ := json.Marshal(reason)
	k, status, err := c.act(ctx, "skip", qid, fmt.Sprintf(`window.__askctl.skip(%q, %s, %d)`, qid, r, c.s.gesture(c.sessionID())))
	if err != nil {
		return err
	}
	if k == "skipped" {
		return nil
	}
	return settled(k, status)
}

// settled is the error for how the page settled a request after this
// connection's answer or skip: nil when it took it.
func settled(kind, status string) error {
	switch kind {
	case "answered", "skipped":
		return nil
	case "taken":
		return &surface.Rejected{Code: "session_taken", Message: status}
	case "error":
		return &surface.Rejected{Code: "invalid", Message: status}
	}
	return &surface.Rejected{Code: "resolved", Message: status}
}

// Offline takes the network away from the tab, the page left open, as a
// person's laptop loses it (surface.Offliner): the page's WebSockets fail
// as cut ones do, and new ones fail as they do with no network, never
// reaching the bridge, until Online (browser.js). A page that holds no
// open WebSocket has no such operation.
func (c *browserConn) Offline(ctx context.Context) error {
	actx, cancel := c.bound(ctx)
	defer cancel()
	r, err := chromedp.Run(actx, chromedp.Evaluate[sockets](`window.__askctl.offline()`))
	if err != nil {
		return fmt.Errorf("taking the tab offline: %w", stopped(ctx, c.tab, c.s.spec.OpLimit(), err))
	}
	if r.Cut == 0 {
		return &surface.Unsupported{Op: "offline", Message: "the page holds no open WebSocket to cut"}
	}
	c.mu.Lock()
	c.offline, c.cutAt = true, r
	c.mu.Unlock()
	return nil
}

// sockets counts a page's WebSockets (browser.js): cut by offline, made
// and opened so far by its document; Ready is its ready mark as online
// let them through again.
type sockets struct {
	Cut    int    `json:"cut"`
	Made   int64  `json:"made"`
	Opened int64  `json:"opened"`
	Ready  string `json:"ready"`
}

// Online gives the tab its network back and waits, within the step's
// deadline and the start limit, for the page to reconnect by itself and
// hear the bridge's replay (its ready mark changed since the network came
// back, where the map names one): a page that stays down fails, saying
// what it did.
func (c *browserConn) Online(ctx context.Context) error {
	c.mu.Lock()
	was, cutAt := c.offline, c.cutAt
	c.offline = false
	c.mu.Unlock()
	if !was {
		return errors.New("bringing the tab online: it was not taken offline")
	}
	limit := c.s.spec.StartLimit()
	actx, cancel := c.boundBy(ctx, limit)
	defer cancel()
	back, err := chromedp.Run(actx, chromedp.Evaluate[sockets](`window.__askctl.online()`))
	if err != nil {
		return fmt.Errorf("bringing the tab online: %w", stopped(ctx, c.tab, limit, err))
	}
	opened, ready, err := c.awaitReplay(ctx, actx, limit, back, func() bool { return true })
	if err == nil {
		return nil
	}
	if opened {
		return fmt.Errorf("the network came back and the page reconnected, but its ready mark (%s) stayed %q: it did not hear the bridge's replay: %w", c.s.spec.Browser.Map.Ready, ready, err)
	}
	why := "the page did not reconnect by itself"
	qctx, qcancel := c.boundBy(context.Background(), c.s.spec.OpLimit())
	defer qcancel()
	if now, qerr := chromedp.Run(qctx, chromedp.Evaluate[sockets](`window.__askctl.sockets()`)); qerr == nil {
		if n := back.Made - cutAt.Made; n >= 0 {
			why += fmt.Sprintf(": it tried %d WebSockets while offline, %d after", n, now.Made-back.Made)
		} else { // the page was reloaded meanwhile: its counts started over
			why += fmt.Sprintf(": it was reloaded while offline, and tried %d WebSockets after", now.Made-back.Made)
		}
	}
	return fmt.Errorf("the network came back, and %s: %w", why, err)
}

// awaitReplay waits (actx, within limit) for the page to have opened a
// socket since from, and heard the bridge's replay (its ready mark changed
// since from, when the profile maps one), and for also (under c.mu). On
// failure it says whether a socket opened, and the ready mark.
func (c *browserConn) awaitReplay(ctx, actx context.Context, limit time.Duration, from sockets, also func() bool) (opened bool, ready string, err error) {
	marked := c.s.spec.Browser.Map.Ready != ""
	err = c.await(actx, func() bool { return c.opened > from.Opened && (!marked || c.ready != from.Ready) && also() })
	if err == nil {
		return true, "", nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.opened > from.Opened, c.ready, stopped(ctx, c.tab, limit, err)
}

// Reclaim presses the page's button that takes its session back after
// another tab took it over (surface.Reclaimer; map.reclaim names it), and
// waits, within the step's deadline and the start limit, for the page to
// connect again, hear the bridge's replay and no longer say it is taken
// over. The cards the page showed as taken over are told again as shown
// once the page shows them otherwise (the replay shows them again,
// answerable), as a page loaded now would show them.
func (c *browserConn) Reclaim(ctx context.Context) error {
	if c.s.spec.Browser.Map.Reclaim == "" {
		return &surface.Unsupported{Op: "reclaim", Message: "the profile's map names no button that takes the session back (map.reclaim)"}
	}
	limit := c.s.spec.StartLimit()
	actx, cancel := c.boundBy(ctx, limit)
	defer cancel()
	// Each card the page shows as taken is told again, as a new one, once
	// the page shows it otherwise (a snapshot from before the press still
	// shows it taken, and tells nothing).
	c.mu.Lock()
	for id, r := range c.last {
		if c.kind(r.State) == "taken" {
			if c.retell == nil {
				c.retell = map[string]bool{}
			}
			c.retell[id] = true
		}
	}
	c.mu.Unlock()
	var r struct {
		sockets
		OK          bool   `json:"ok"`
		Unsupported string `json:"unsupported"`
		Error       string `json:"error"`
	}
	res, err := chromedp.Run(actx, chromedp.Evaluate[string](`JSON.stringify(window.__askctl.reclaim())`))
	if err != nil {
		return fmt.Errorf("taking the session back in the browser: %w", stopped(ctx, c.tab, limit, err))
	}
	_ = json.Unmarshal([]byte(res), &r)
	switch {
	case r.Unsupported != "":
		return &surface.Unsupported{Op: r.Unsupported, Message: r.Error}
	case !r.OK:
		return fmt.Errorf("taking the session back: %s", r.Error)
	}
	opened, ready, err := c.awaitReplay(ctx, actx, limit, r.sockets, func() bool { return !c.taken })
	if err == nil {
		return nil
	}
	c.mu.Lock()
	taken := c.taken
	c.mu.Unlock()
	switch {
	case !opened:
		return fmt.Errorf("the person pressed %q, and the page did not connect again: %w", c.s.spec.Browser.Map.Reclaim, err)
	case taken:
		return fmt.Errorf("the person pressed %q, and the page connected again but still says the session is taken over (%s): %w", c.s.spec.Browser.Map.Reclaim, c.s.spec.Browser.Map.Taken, err)
	}
	return fmt.Errorf("the person pressed %q, and the page connected again, but its ready mark (%s) stayed %q: it did not hear the bridge's replay: %w", c.s.spec.Browser.Map.Reclaim, c.s.spec.Browser.Map.Ready, ready, err)
}

func (c *browserConn) SendRaw(context.Context, string, []byte) error {
	return &surface.Unsupported{Op: "raw message", Message: "a person on a web page sends only what its controls send"}
}

func (c *browserConn) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	c.s.mu.Lock()
	delete(c.s.tabs, c)
	c.s.mu.Unlock()
	c.cancel()
	c.mu.Lock()
	sink := c.sink
	c.mu.Unlock()
	if sink != nil {
		sink(surface.Event{T: time.Now(), Type: surface.EventClosed, Session: c.session, Reason: "the tab was closed"})
	}
	return nil
}
