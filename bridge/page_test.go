//go:build !mutation

package bridge_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/askctl/askctl/bridge"
	"github.com/askctl/askctl/bridgeapi"
	"github.com/askctl/askctl/fakeclaude"
	"github.com/askctl/askctl/internal/testenv"
	"github.com/askctl/askctl/scenarios"
	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/coder/websocket"
	"github.com/tidwall/gjson"
)

// The page (GET /) in a real headless Chromium: a person logs in with a
// one-time link, sees a question, answers with clicks and keys, and the
// agent (fakeclaude) gets exactly the expected answer, which it checks
// itself. Every wait is for a condition, within a deadline.

// formScenario is three questions of one request: single-select, multiSelect
// answered in an order that is not the options' order, and free text with
// a newline and an emoji.
const formScenario = `The page's form: three questions answered together.
-- scenario.json --
{"name":"page-form","route":"sdk","cli_version":"2.1.330","origin":"synthetic"}
-- steps.jsonl --
{"prompt":"Plan the release."}
{"ask":{"questions":[{"question":"Which database should I use?","header":"Database","options":[{"label":"Postgres","description":"Relational, runs as a server"},{"label":"SQLite","description":"Embedded, one file"}],"multiSelect":false},{"question":"Which sections?","header":"Sections","options":[{"label":"Intro","description":"Why"},{"label":"Body","description":"What"},{"label":"Outro","description":"Next steps"}],"multiSelect":true},{"question":"Anything else?","header":"Notes","options":[{"label":"No","description":"Nothing more"},{"label":"Later","description":"Ask me again"}],"multiSelect":false}]},"id":"toolu_01P","user":{"answers":{"Which database should I use?":"SQLite","Which sections?":["Outro","Intro"],"Anything else?":"Ship it\non Friday 🚀"}}}
{"text":"Planned."}
`

// pageEnv is a bridge with its page, and a browser logged in to it.
type pageEnv struct {
	*env
	hold chan chan struct{} // GET /test/hold: the page's script waits until released
}

func newPageEnv(t *testing.T, cfg bridge.Config) *pageEnv {
	t.Helper()
	form := filepath.Join(t.TempDir(), "page-form.txtar")
	if err := os.WriteFile(form, []byte(formScenario), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.SessionEnv = func(name, text string) ([]string, string, error) {
		if name == "page-form" {
			return fakeclaude.Env{Scenario: form}.Environ(), name, nil
		}
		if _, err := scenarios.Builtin(name); err != nil {
			return nil, "", err
		}
		return fakeclaude.Env{Scenario: name}.Environ(), name, nil
	}
	cfg = testConfig(t, cfg, true)
	b, err := bridge.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	pe := &pageEnv{env: &env{t: t, b: b, dir: cfg.Dir, cfg: cfg}, hold: make(chan chan struct{})}
	pe.server = &bridge.Server{B: b, Token: "test-token"}
	mux := http.NewServeMux()
	mux.Handle("/", pe.server.Handler())
	mux.HandleFunc("GET /test/hold", func(w http.ResponseWriter, r *http.Request) {
		release := make(chan struct{})
		select {
		case pe.hold <- release:
			<-release
		case <-r.Context().Done():
		}
	})
	pe.srv = httptest.NewServer(mux)
	pe.c = &bridgeapi.Client{URL: pe.srv.URL, Token: "test-token"}
	t.Cleanup(func() {
		pe.srv.Close()
		b.Close()
	})
	return pe
}

// loginURL is a one-time login link.
func (pe *pageEnv) loginURL() string {
	code, _ := pe.server.NewLogin()
	return pe.srv.URL + "/login?code=" + code
}

// newBrowser starts headless Chromium for the test and returns its first
// tab.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(testenv.Chromium(t)),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1000, 900),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
	)
	// The whole browser is bounded: nothing here outlives the test.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(acancel)
	tab, tcancel := chromedp.NewContext(actx, chromedp.WithErrorf(t.Logf))
	t.Cleanup(tcancel)
	if err := chromedp.Do(tab); err != nil { // starts the browser
		t.Fatalf("starting chromium: %v", err)
	}
	return tab
}

// newTab opens another tab in the same browser.
func newTab(t *testing.T, tab context.Context) context.Context {
	t.Helper()
	ctx, cancel := chromedp.NewContext(tab)
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatal(err)
	}
	return ctx
}

// do runs steps in the tab within a deadline, and fails the test with what
// the page shows when they fail.
func do(t *testing.T, tab context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(tab, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v\nthe page shows:\n%s", what, err, shows(tab))
	}
}

// shows is the page's text, for failure messages.
func shows(tab context.Context) string {
	ctx, cancel := context.WithTimeout(tab, 5*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
	if err != nil {
		return "(" + err.Error() + ")"
	}
	return s
}

// until waits for a JavaScript condition.
func until(t *testing.T, tab context.Context, what, cond string) {
	t.Helper()
	do(t, tab, "waiting for "+what, func(ctx context.Context, tt *chromedp.Target) (chromedp.Void, error) {
		_, err := chromedp.Poll[bool](cond, chromedp.WithPollingInterval(20*time.Millisecond))(ctx, tt)
		return chromedp.Void{}, err
	})
}

// card is the CSS selector of a question's card.
func card(qid string) string { return "#card-" + qid }

// statusOf is the text a card shows about its state.
func statusOf(t *testing.T, tab context.Context, qid string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(tab, 10*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`document.querySelector(%q + " .status").textContent`, card(qid))))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// answered waits for the session's agent to exit 0 (fakeclaude checks the
// answer against its scenario) and returns what it received, one entry a
// control_response.
func (pe *pageEnv) answered(t *testing.T, s *bridgeapi.Session) []string {
	t.Helper()
	ended := pe.ended(s.ID)
	if *ended.ExitCode != 0 { // ended: the exit code is set
		t.Errorf("the agent of %s exited %d: %s", s.ID, *ended.ExitCode, ended.Detail)
	}
	return answersSent(pe.transcript(ended.ClaudeSessionID))
}

func TestPage(t *testing.T) {
	pe := newPageEnv(t, bridge.Config{})
	tab := newBrowser(t)

	t.Run("login", func(t *testing.T) {
		// Not logged in: the page says how.
		do(t, tab, "opening / before logging in", chromedp.Navigate(pe.srv.URL+"/"))
		until(t, tab, "how to log in", `document.getElementById("banner").textContent.includes("askctl login")`)
		link := pe.loginURL()
		do(t, tab, "logging in", chromedp.Navigate(link))
		until(t, tab, "the page after login", `document.getElementById("conn") && document.getElementById("conn").textContent === "connected"`)
		loc, _ := chromedp.Run(tab, chromedp.Location())
		if loc != pe.srv.URL+"/" {
			t.Errorf("after login the page is at %s, want / (no code in the URL)", loc)
		}
		// The link works once.
		other := newTab(t, tab)
		do(t, other, "opening the used link again", chromedp.Navigate(link))
		if got := shows(other); !strings.Contains(got, "used already") {
			t.Errorf("a used link shows %q", got)
		}
	})

	t.Run("keyboard", func(t *testing.T) {
		s := pe.start("page-form", "Plan the release.")
		q := pe.pending(s.ID, 1)[0]
		until(t, tab, "the question", fmt.Sprintf(`!!document.querySelector(%q)`, card(q.ID)))
		checkAccessible(t, tab)
		// Focus goes to the new question; 2 picks SQLite and moves on to
		// the next question, where 3 then 1 pick Outro, then Intro.
		do(t, tab, "picking with number keys",
			chromedp.Focus(chromedp.CSS(card(q.ID)+" fieldset[data-index='0'] input")),
			chromedp.KeyEvent("2"), chromedp.KeyEvent("3"), chromedp.KeyEvent("1"))
		// Enter now would send a partial set: the page refuses it.
		do(t, tab, "pressing Enter with a question unanswered", chromedp.KeyEvent(kb.Enter))
		if got := statusOf(t, tab, q.ID); !strings.Contains(got, "Answer every question first: Anything else?") {
			t.Errorf("after Enter with one question open the card says %q", got)
		}
		// The third question's Other: text with a newline (Shift+Enter)
		// and an emoji, then Enter sends all three.
		do(t, tab, "typing an own answer",
			chromedp.Click(chromedp.CSS(card(q.ID)+" fieldset[data-index='2'] .other-text")),
			chromedp.KeyEvent("Ship it"),
			chromedp.KeyEvent(kb.Enter, chromedp.KeyModifiers(kb.ModifierShift)),
			chromedp.KeyEvent("on Friday 🚀"),
			chromedp.KeyEvent(kb.Enter))
		until(t, tab, "the answer taken", fmt.Sprintf(`document.querySelector(%q).dataset.state === "answered"`, card(q.ID)))
		if got := statusOf(t, tab, q.ID); !strings.HasPrefix(got, "Answered: ") {
			t.Errorf("the card says %q, want Answered: …", got)
		}
		got := pe.answered(t, s)
		want := map[string]string{"Which database should I use?": "SQLite", "Which sections?": "Outro, Intro", "Anything else?": "Ship it\non Friday 🚀"}
		var answers map[string]string
		if len(got) == 1 {
			_ = json.Unmarshal([]byte(gjson.Get(got[0], "updatedInput.answers").Raw), &answers)
		}
		if len(got) != 1 || !maps.Equal(answers, want) {
			t.Errorf("the agent received %v, want one allow with %v", got, want)
		}
	})

	t.Run("reload", func(t *testing.T) {
		s := pe.start("ask-single", "Set up storage for the app.")
		q := pe.pending(s.ID, 1)[0]
		until(t, tab, "the question", fmt.Sprintf(`!!document.querySelector(%q)`, card(q.ID)))
		do(t, tab, "reloading mid-question", chromedp.Reload())
		until(t, tab, "the question replayed", fmt.Sprintf(`!!document.querySelector(%q) && document.querySelector(%q).dataset.state === "pending"`, card(q.ID), card(q.ID)))
		do(t, tab, "answering with clicks",
			chromedp.Click(chromedp.CSS(card(q.ID)+` input[value="Postgres"]`)),
			chromedp.Click(chromedp.CSS(card(q.ID)+` button.send`)))
		until(t, tab, "the answer taken", fmt.Sprintf(`document.querySelector(%q).dataset.state === "answered"`, card(q.ID)))
		if got := pe.answered(t, s); len(got) != 1 || gjson.Get(got[0], "updatedInput.answers.Which database should I use?").String() != "Postgres" {
			t.Errorf("the agent received %v", got)
		}
	})

	t.Run("takeover", func(t *testing.T) {
		s := pe.start("ask-single", "Set up storage for the app.")
		q := pe.pending(s.ID, 1)[0]
		view := pe.srv.URL + "/#session=" + s.ID
		do(t, tab, "opening the session", chromedp.Navigate(view))
		until(t, tab, "the question", fmt.Sprintf(`!!document.querySelector(%q)`, card(q.ID)))
		second := newTab(t, tab)
		do(t, second, "opening the session in a second tab", chromedp.Navigate(view))
		until(t, second, "the question in the second tab", fmt.Sprintf(`!!document.querySelector(%q)`, card(q.ID)))
		until(t, tab, "the first tab taken over", `!document.getElementById("banner").hidden && document.getElementById("banner").textContent.includes("another tab")`)
		until(t, tab, "the first tab's controls off", fmt.Sprintf(`document.querySelector(%q + " button.send").disabled`, card(q.ID)))
		do(t, second, "answering in the second tab",
			chromedp.Focus(chromedp.CSS(card(q.ID)+" input")),
			chromedp.KeyEvent("1"), chromedp.KeyEvent(kb.Enter))
		until(t, second, "the answer taken", fmt.Sprintf(`document.querySelector(%q).dataset.state === "answered"`, card(q.ID)))
		if got := pe.answered(t, s); len(got) != 1 {
			t.Errorf("the agent received %d answers, want 1: %v", len(got), got)
		}
		do(t, tab, "back to every session", chromedp.Navigate(pe.srv.URL+"/#"))
	})

	t.Run("skip", func(t *testing.T) {
		s := pe.start("ask-skip", "Set up storage for the app.")
		q := pe.pending(s.ID, 1)[0]
		until(t, tab, "the question", fmt.Sprintf(`!!document.querySelector(%q)`, card(q.ID)))
		reason := skipReason(t, "ask-skip")
		do(t, tab, "skipping with a reason (Enter in the reason field)",
			chromedp.Click(chromedp.CSS(card(q.ID)+" .reason")),
			chromedp.KeyEvent(reason),
			chromedp.KeyEvent(kb.Enter))
		until(t, tab, "the skip taken", fmt.Sprintf(`document.querySelector(%q).dataset.state === "skipped"`, card(q.ID)))
		got := pe.answered(t, s)
		if len(got) != 1 || gjson.Get(got[0], "behavior").String() != "deny" || gjson.Get(got[0], "message").String() != reason {
			t.Errorf("the agent received %v, want one deny with %q", got, reason)
		}
	})

	t.Run("late", func(t *testing.T) {
		// The person clicks Send just after someone else answered: the
		// page's script is held (a synchronous request) while the API
		// answers, then clicks at once, before it has read the event.
		s := pe.start("ask-single", "Set up storage for the app.")
		q := pe.pending(s.ID, 1)[0]
		until(t, tab, "the question", fmt.Sprintf(`!!document.querySelector(%q)`, card(q.ID)))
		done := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(tab, 30*time.Second)
			defer cancel()
			_, err := chromedp.Run(ctx, chromedp.Evaluate[bool](fmt.Sprintf(`(() => {
				const x = new XMLHttpRequest();
				x.open("GET", "/test/hold", false);
				x.send();
				document.querySelector(%[1]q + ' input[value="SQLite"]').click();
				document.querySelector(%[1]q + ' button.send').click();
				return true;
			})()`, card(q.ID))))
			done <- err
		}()
		var release chan struct{}
		select {
		case release = <-pe.hold:
		case err := <-done:
			t.Fatalf("the page's script ended before it was held: %v", err)
		case <-time.After(30 * time.Second):
			t.Fatal("the page's script never asked to be held")
		}
		if _, err := pe.c.Answer(context.Background(), q.ID, map[string]bridgeapi.Answer{"1": {"Postgres"}}); err != nil {
			close(release)
			t.Fatal(err)
		}
		close(release)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		until(t, tab, "the late answer refused", fmt.Sprintf(`document.querySelector(%q).dataset.state === "late" && document.querySelector(%q + " .status").textContent.startsWith("Answered elsewhere")`, card(q.ID), card(q.ID)))
		if got := statusOf(t, tab, q.ID); !strings.Contains(got, "too late") || !strings.Contains(got, "Postgres") {
			t.Errorf("the card says %q, want who answered and that this answer came too late", got)
		}
		if got := pe.answered(t, s); len(got) != 1 || gjson.Get(got[0], "updatedInput.answers.Which database should I use?").String() != "Postgres" {
			t.Errorf("the agent received %v, want only the API's answer", got)
		}
	})

	t.Run("phone", func(t *testing.T) {
		s := pe.start("ask-multi", "Ask me how to format.")
		q := pe.pending(s.ID, 1)[0]
		do(t, tab, "a 360 px wide screen", chromedp.EmulateViewport(360, 780, chromedp.EmulateMobile))
		defer do(t, tab, "back to a wide screen", chromedp.EmulateReset())
		until(t, tab, "the question", fmt.Sprintf(`!!document.querySelector(%q)`, card(q.ID)))
		w, err := chromedp.Run(tab, chromedp.Evaluate[float64](`document.documentElement.scrollWidth`))
		if err != nil || w > 360 {
			t.Errorf("at 360 px the page is %v px wide (%v): it scrolls sideways", w, err)
		}
		screenshot(t, tab, "page-phone.png")
		do(t, tab, "answering on the phone",
			chromedp.Click(chromedp.CSS(card(q.ID)+` input[value="Summary"]`)),
			chromedp.Click(chromedp.CSS(card(q.ID)+` input[value="Intro"]`)),
			chromedp.Click(chromedp.CSS(card(q.ID)+` input[value="Outro"]`)),
			chromedp.Click(chromedp.CSS(card(q.ID)+` button.send`)))
		until(t, tab, "the answer taken", fmt.Sprintf(`document.querySelector(%q).dataset.state === "answered"`, card(q.ID)))
		if got := pe.answered(t, s); len(got) != 1 {
			t.Errorf("the agent received %v", got)
		}
	})
}

// TestPageLogout: log out forgets the key; the page then says how to log in,
// also after a reload.
func TestPageLogout(t *testing.T) {
	pe := newPageEnv(t, bridge.Config{})
	tab := newBrowser(t)
	do(t, tab, "logging in", chromedp.Navigate(pe.loginURL()))
	until(t, tab, "connected", `document.getElementById("conn").textContent === "connected"`)
	key, err := chromedp.Run(tab, chromedp.Evaluate[string](`localStorage.getItem("askctl.key")`))
	if err != nil || key == "" {
		t.Fatalf("reading the key: %q, %v", key, err)
	}
	do(t, tab, "logging out", chromedp.Click(chromedp.CSS("#logout")))
	// The page had the bridge revoke the key: a copy of it opens nothing.
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		c, _, err := websocket.Dial(ctx, strings.Replace(pe.srv.URL, "http:", "ws:", 1)+"/ws", &websocket.DialOptions{Subprotocols: []string{"askctl", "askctl.key." + key}, HTTPHeader: http.Header{"Origin": {pe.srv.URL}}})
		cancel()
		if err != nil {
			break
		}
		c.CloseNow()
		if time.Now().After(deadline) {
			t.Fatal("the key still opens the socket 10s after the page logged out")
		}
		time.Sleep(20 * time.Millisecond)
	}
	until(t, tab, "logged out", `document.getElementById("banner").textContent.startsWith("Logged out.")`)
	do(t, tab, "reloading", chromedp.Reload())
	until(t, tab, "still logged out", `document.getElementById("banner").textContent.startsWith("Not logged in.") && localStorage.getItem("askctl.key") === null`)
}

// TestPageTimeout: a question nobody answers counts down, then shows that
// it expired, with its controls off; the agent got the timeout's deny.
func TestPageTimeout(t *testing.T) {
	pe := newPageEnv(t, bridge.Config{Timeout: 3 * time.Second})
	tab := newBrowser(t)
	do(t, tab, "logging in", chromedp.Navigate(pe.loginURL()))
	s := pe.start("ask-single", "Set up storage for the app.")
	q := pe.pending(s.ID, 1)[0]
	until(t, tab, "the question with its countdown", fmt.Sprintf(`!!document.querySelector(%q) && document.querySelector(%q + " .countdown").textContent.startsWith("expires in 0:0")`, card(q.ID), card(q.ID)))
	screenshot(t, tab, "page-question.png")
	until(t, tab, "the question expired", fmt.Sprintf(`document.querySelector(%q).dataset.state === "expired"`, card(q.ID)))
	if got := statusOf(t, tab, q.ID); !strings.HasPrefix(got, "Expired") {
		t.Errorf("the card says %q", got)
	}
	off, err := chromedp.Run(tab, chromedp.Evaluate[bool](fmt.Sprintf(`[...document.querySelectorAll(%q + " input, " + %q + " button")].every(x => x.disabled)`, card(q.ID), card(q.ID))))
	if err != nil || !off {
		t.Errorf("an expired card's controls are still on (%v)", err)
	}
	ended := pe.ended(s.ID)
	got := answersSent(pe.transcript(ended.ClaudeSessionID))
	if len(got) != 1 || gjson.Get(got[0], "behavior").String() != "deny" {
		t.Errorf("the agent received %v, want the timeout's deny", got)
	}
}

// checkAccessible fails the test for any control in the accessibility tree
// without a name: every radio, checkbox, text field and button says what it
// is to a screen reader.
func checkAccessible(t *testing.T, tab context.Context) {
	t.Helper()
	ctx, cancel := context.WithTimeout(tab, 10*time.Second)
	defer cancel()
	res, err := chromedp.Call(ctx, accessibility.GetFullAXTree, accessibility.GetFullAXTreeParams{})
	if err != nil {
		t.Fatal(err)
	}
	str := func(v *accessibility.Value) string {
		if v == nil {
			return ""
		}
		var s string
		_ = json.Unmarshal([]byte(v.Value), &s)
		return s
	}
	controls := map[string]int{}
	for _, n := range res.Nodes {
		role := str(n.Role)
		switch role {
		case "radio", "checkbox", "button", "textbox", "radiogroup", "group", "timer":
		default:
			continue
		}
		if n.Ignored {
			continue
		}
		controls[role]++
		if strings.TrimSpace(str(n.Name)) == "" && role != "group" {
			t.Errorf("a %s has no accessible name", role)
		}
	}
	for _, role := range []string{"radio", "checkbox", "button", "textbox", "radiogroup", "timer"} {
		if controls[role] == 0 {
			t.Errorf("no %s in the accessibility tree (have %v)", role, controls)
		}
	}
}

// screenshot saves a PNG of the tab into ASKCTL_SCREENSHOTS, when set
// (make screenshots: the README's pictures).
func screenshot(t *testing.T, tab context.Context, name string) {
	t.Helper()
	dir := os.Getenv("ASKCTL_SCREENSHOTS")
	if dir == "" {
		return
	}
	ctx, cancel := context.WithTimeout(tab, 20*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// skipReason is the reason a built-in scenario's person skips with.
func skipReason(t *testing.T, name string) string {
	t.Helper()
	sc, err := scenarios.Builtin(name)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range sc.Steps {
		if st.User != nil && st.User.Skip != nil {
			return *st.User.Skip
		}
	}
	t.Fatalf("%s has no skip", name)
	return ""
}

// TestPageLogin: the login rules, over plain HTTP. A link works once and
// for a while, and hands the page a key (never the token); the key opens the
// WebSocket when offered as a subprotocol, and nothing else; a bridge with
// another token refuses it.
func TestPageLogin(t *testing.T) {
	pe := newPageEnv(t, bridge.Config{})
	get := func(path string) (*http.Response, string) {
		t.Helper()
		resp, err := http.Get(pe.srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	if r, body := get("/"); r.StatusCode != http.StatusOK || strings.Contains(body, "test-token") || !strings.Contains(r.Header.Get("Content-Security-Policy"), "default-src 'none'") || r.Header.Get("Referrer-Policy") != "no-referrer" {
		t.Errorf("/: %d, CSP %q, Referrer-Policy %q", r.StatusCode, r.Header.Get("Content-Security-Policy"), r.Header.Get("Referrer-Policy"))
	}
	link, _, err := pe.c.LoginURL(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	path := strings.TrimPrefix(link, pe.srv.URL)
	if strings.Contains(link, "test-token") {
		t.Errorf("the login link %s holds the token", link)
	}
	r, body := get(path)
	key := regexp.MustCompile(`<meta name="askctl-key" content="([^"]+)">`).FindStringSubmatch(body)
	if r.StatusCode != http.StatusOK || key == nil || strings.Contains(body, "test-token") || len(r.Cookies()) != 0 || r.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("login: %d, cookies %v, body %s", r.StatusCode, r.Cookies(), body)
	}
	if r, _ := get(path); r.StatusCode != http.StatusUnauthorized {
		t.Errorf("the same link again: %d, want 401", r.StatusCode)
	}
	dial := func(url string, protocols ...string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, _, err := websocket.Dial(ctx, strings.Replace(url, "http:", "ws:", 1)+"/ws", &websocket.DialOptions{Subprotocols: protocols, HTTPHeader: http.Header{"Origin": {url}}})
		if err == nil {
			if c.Subprotocol() != "askctl" {
				err = fmt.Errorf("the bridge chose subprotocol %q", c.Subprotocol())
			}
			c.CloseNow()
		}
		return err
	}
	if err := dial(pe.srv.URL, "askctl", "askctl.key."+key[1]); err != nil {
		t.Errorf("the socket with the key: %v", err)
	}
	if err := dial(pe.srv.URL, "askctl"); err == nil {
		t.Error("the socket without a key: accepted")
	}
	forged := key[1][:len(key[1])-4] + "0000"
	if err := dial(pe.srv.URL, "askctl", "askctl.key."+forged); err == nil {
		t.Error("the socket with a forged key: accepted")
	}
	// The key is no token: the JSON API refuses it.
	req, _ := http.NewRequest(http.MethodGet, pe.srv.URL+"/api/sessions", nil)
	req.Header.Set("Authorization", "Bearer "+key[1])
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the JSON API with the key as a token: %v %v", resp.StatusCode, err)
	}
	// Another token (a bridge whose token changed) refuses the key.
	other := &bridge.Server{B: pe.b, Token: "another-token"}
	ts := httptest.NewServer(other.Handler())
	defer ts.Close()
	if err := dial(ts.URL, "askctl", "askctl.key."+key[1]); err == nil {
		t.Error("a bridge with another token took the key")
	}
	// The key opens the page's socket only: not the control socket.
	dialControl := func(url string, protocols ...string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, _, err := websocket.Dial(ctx, strings.Replace(url, "http:", "ws:", 1)+"/control", &websocket.DialOptions{Subprotocols: protocols, HTTPHeader: http.Header{"Origin": {url}}})
		if err == nil {
			c.CloseNow()
		}
		return err
	}
	if err := dialControl(pe.srv.URL, "askctl", "askctl.key."+key[1]); err == nil {
		t.Error("the control socket took the page's key")
	}
	// Log out revokes the key on the server: it opens nothing after, even
	// to a bridge started again on the same database.
	logout := func(url, k string) int {
		t.Helper()
		resp, err := http.Post(url+"/api/logout", "application/json", strings.NewReader(`{"key":"`+k+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := logout(pe.srv.URL, key[1]); code != http.StatusNoContent {
		t.Errorf("log out: %d, want 204", code)
	}
	if err := dial(pe.srv.URL, "askctl", "askctl.key."+key[1]); err == nil {
		t.Error("the socket took a key that logged out")
	}
	if code := logout(pe.srv.URL, key[1]); code != http.StatusUnauthorized {
		t.Errorf("log out again: %d, want 401", code)
	}
	pe.b.Close()
	b2, err := bridge.New(pe.cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	again := httptest.NewServer((&bridge.Server{B: b2, Token: "test-token"}).Handler())
	defer again.Close()
	if err := dial(again.URL, "askctl", "askctl.key."+key[1]); err == nil {
		t.Error("a bridge started again took a key that logged out")
	}
	pe.server = &bridge.Server{B: b2, Token: "test-token"}
	// A link not used in time stops working.
	pe.server.LoginTTL = time.Nanosecond
	code, _ := pe.server.NewLogin()
	time.Sleep(time.Millisecond)
	if r, body := get("/login?code=" + code); r.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "used already, or it expired") {
		t.Errorf("an expired link: %d", r.StatusCode)
	}
	for _, f := range []string{"/page/app.js", "/page/login.js", "/page/style.css"} {
		if r, _ := get(f); r.StatusCode != http.StatusOK || r.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: %d", f, r.StatusCode)
		}
	}
}
