package surface

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Spec is the user surface and how to reach it.
type Spec struct {
	// Kind is ws, control-ws, http, exec or browser.
	Kind string `json:"kind"`
	// URL is the WebSocket endpoint (ws, control-ws) or the API base (http).
	URL string `json:"url,omitempty"`
	// API is the HTTP API base that starts sessions, for ws and control-ws.
	API string `json:"api,omitempty"`
	// Token, or TokenFile to read it from when the surface is opened, is
	// sent as a bearer token.
	Token     string `json:"token,omitempty"`
	TokenFile string `json:"token_file,omitempty"`
	// Browser is the browser surface's map of the page (URL is the page,
	// with {session} for the session's id; API starts sessions).
	Browser *BrowserSpec `json:"browser,omitempty"`
	// Command and Args run the exec surface.
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	// SharedLink says the exec surface reaches the person over one link for
	// all sessions (one chat, one socket): its adapter demultiplexes it,
	// each open a view of one session on that link, and there is no second
	// connection to take a session over (capability takeover is refused).
	// The adapter is told ASKCTL_SHARED_LINK=1.
	SharedLink bool `json:"shared_link,omitempty"`
	// Slow scales the adapter's own waits (a reply to an operation, a
	// connection): 2 doubles them, for a busy machine. 0 means 1.
	Slow float64 `json:"-"`
	// Limits are the profile's (Profile.Limits).
	Limits Limits `json:"-"`
	// Log, when set, is a file the exec adapter's traffic is appended to:
	// each request and reply line, and its stderr (the harness keeps it
	// in the run's work directory as surface.log).
	Log string `json:"-"`
}

// ResumesStreams reports whether every connection of the surface can drop
// its event stream and resume it where it left off (a Resumer that always
// has the operation: SSE's Last-Event-ID), known before the surface is
// opened; an exec adapter may have it too, and says so when asked.
func (s Spec) ResumesStreams() bool { return s.Kind == "http" }

// GoesOffline reports whether the surface's connections are clients of
// their own that can lose the network and come back (an Offliner: a
// browser tab), known before the surface is opened; a page that holds no
// WebSocket says so when taken offline.
func (s Spec) GoesOffline() bool { return s.Kind == "browser" }

// Renders reports whether the surface reads questions as a page renders
// them (a browser tab): HTML folds runs of white space, and a person sees
// none at a text's edges, so a question's text is read with its white
// space folded. The answers the agent gets are still checked byte for byte.
func (s Spec) Renders() bool { return s.Kind == "browser" }

// Scaled is d times the slow factor.
func (s Spec) Scaled(d time.Duration) time.Duration { return Scale(d, s.Slow) }

// Limits are how long the harness waits for the bridge, each a profile may
// set for its bridge and each scaled by --slow. Zero: the default.
type Limits struct {
	// Start bounds the bridge's start-up: until its ready check passes
	// (ready.timeout, when given, is this limit), and its surface's first
	// answer (an exec adapter's first reply, a WebSocket's first
	// connection), which includes the adapter's own start. Default 15s.
	Start Duration `json:"start,omitzero"`
	// Reconnect bounds a person's reconnect (a chat bridge may take 25s to
	// notice a dropped link): the http surface's event stream coming back,
	// a second WebSocket or control connection to a session, a session's
	// page opened again in the browser, and an exec adapter's (told as
	// ASKCTL_LIMIT_RECONNECT). Default 10s.
	Reconnect Duration `json:"reconnect,omitzero"`
	// Op bounds the reply to each operation (answer, skip, open, …) once
	// the surface is up. Default 10s.
	Op Duration `json:"op,omitzero"`
}

// The default limits.
const (
	DefaultStartLimit     = 15 * time.Second
	DefaultReconnectLimit = 10 * time.Second
	DefaultOpLimit        = 10 * time.Second
)

// StartLimit, ReconnectLimit and OpLimit are the limits, defaults filled
// in and scaled by the slow factor.
func (s Spec) StartLimit() time.Duration {
	return s.Scaled(orDefault(s.Limits.Start.D(), DefaultStartLimit))
}
func (s Spec) ReconnectLimit() time.Duration {
	return s.Scaled(orDefault(s.Limits.Reconnect.D(), DefaultReconnectLimit))
}
func (s Spec) OpLimit() time.Duration { return s.Scaled(orDefault(s.Limits.Op.D(), DefaultOpLimit)) }

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// Scale is d times factor (a factor below 1 counts as 1).
func Scale(d time.Duration, factor float64) time.Duration {
	if factor <= 1 {
		return d
	}
	return time.Duration(float64(d) * factor)
}

// Duration is a time.Duration written as "1.5s" in JSON.
type Duration time.Duration

func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return errors.New("want a duration such as \"2s\"")
	}
	v, err := time.ParseDuration(s)
	if err != nil || v < 0 {
		return fmt.Errorf("want a duration such as \"2s\", got %q", s)
	}
	*d = Duration(v)
	return nil
}

func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// D is d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// Kinds are the adapters the harness has.
func Kinds() []string { return []string{"ws", "control-ws", "http", "exec", "browser"} }

// BrowserSpec is the browser surface's part of a profile (surface.browser).
type BrowserSpec struct {
	// Login "api" logs the browser in first: POST {api}/api/login with the
	// token, then open the one-time link it returns (the reference page).
	// "" opens the page as it is.
	Login string `json:"login,omitempty"`
	// Chromium is the browser; default ASKCTL_CHROMIUM, else chromium on
	// PATH. Flags are more of its command-line flags.
	Chromium string     `json:"chromium,omitempty"`
	Flags    []string   `json:"chromium_flags,omitempty"`
	Map      BrowserMap `json:"map"`
}

// BrowserMap says where a web UI shows what. Names are regexps matched
// against accessible names.
type BrowserMap struct {
	Request       string            `json:"request"`                // CSS: one request (1-4 questions answered together)
	ID            string            `json:"id"`                     // the request's attribute that holds the question id
	State         string            `json:"state"`                  // the request's attribute that holds its state
	States        map[string]string `json:"states"`                 // state → pending, sending, answered, skipped, expired, withdrawn, taken, late, error, gone
	Ended         string            `json:"ended,omitempty"`        // the request's attribute that says how it ended (answered, skipped, expired, withdrawn)
	AskedAt       string            `json:"asked_at,omitempty"`     // the request's attribute with the bridge's time of the question (RFC 3339), if the page keeps it
	EndedAt       string            `json:"ended_at,omitempty"`     // … and of its end
	SessionAttr   string            `json:"session_attr,omitempty"` // the request's attribute that holds its session id
	QuestionRoles []string          `json:"question_roles"`         // ARIA roles of one question within a request
	Text          string            `json:"text"`                   // CSS within a question: its text
	Header        string            `json:"header,omitempty"`       // CSS within a question: its header chip
	Status        string            `json:"status,omitempty"`       // CSS within a request: what the page says about it
	Send          string            `json:"send"`                   // the button that sends the answers
	Skip          string            `json:"skip,omitempty"`         // the button that skips
	Reason        string            `json:"reason,omitempty"`       // the field for a skip's reason
	Other         string            `json:"other,omitempty"`        // the choice for one's own words
	Ready         string            `json:"ready"`                  // "SELECTOR@ATTRIBUTE", set (anew) once the page has the bridge's replay
	Taken         string            `json:"taken,omitempty"`        // CSS that matches once another tab took the session over
	Reclaim       string            `json:"reclaim,omitempty"`      // the button that takes the session back on a page taken over
	Sessions      string            `json:"sessions,omitempty"`     // CSS of a session entry (data-session, data-status, data-waiting, data-pending)
}

// browserStates are the states a map may name.
var browserStates = map[string]bool{"pending": true, "sending": true, "answered": true, "skipped": true, "expired": true, "withdrawn": true, "taken": true, "late": true, "error": true, "gone": true}

// Check checks a profile's surface.browser; errAt makes an error that
// names the field.
func (s *BrowserSpec) Check(errAt func(field, format string, args ...any) error) error {
	m := s.Map
	for _, f := range []struct{ field, v string }{{"request", m.Request}, {"id", m.ID}, {"state", m.State}, {"text", m.Text}, {"send", m.Send}, {"ready", m.Ready}} {
		if f.v == "" {
			return errAt("surface.browser.map."+f.field, "missing")
		}
	}
	if len(m.QuestionRoles) == 0 {
		return errAt("surface.browser.map.question_roles", "missing: the ARIA roles of one question (e.g. radiogroup, group)")
	}
	if !strings.Contains(m.Ready, "@") {
		return errAt("surface.browser.map.ready", "want SELECTOR@ATTRIBUTE, got %q", m.Ready)
	}
	for k, v := range m.States {
		if !browserStates[v] {
			return errAt("surface.browser.map.states."+k, "want one of pending, sending, answered, skipped, expired, withdrawn, taken, late, error, gone; got %q", v)
		}
	}
	if s.Login != "" && s.Login != "api" {
		return errAt("surface.browser.login", `want "api" or nothing, got %q`, s.Login)
	}
	return nil
}
