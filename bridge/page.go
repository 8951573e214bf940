package bridge

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"fmt"
	"html"
	"io/fs"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/askctl/askctl/bridgeapi"
)

// The page is askctl's own person surface: one embedded HTML file, a script
// and a style sheet, served at / and /page/. It speaks only the WebSocket
// protocol (GET /ws) that any other UI would.
//
// A browser cannot send the token in a header on a WebSocket, and a token
// in a URL ends up in histories and pasted links. So a browser logs in
// once: POST /api/login (with the token) makes a one-time code, and GET
// /login?code=CODE spends it and hands the page a key, which the page keeps
// in its origin's localStorage and offers when it opens the socket, as a
// WebSocket subprotocol ("askctl.key.KEY"; the bridge answers "askctl").
// Not a cookie: browsers send a cookie to every port of the host, so
// another local server the browser visits would get it; localStorage is
// the bridge's origin's alone, and nothing sends it by itself (no CSRF).
// The key is signed with the token and holds its expiry (30 days), so it
// survives a restart of the bridge, and a new token voids it.

//go:embed page
var pageFiles embed.FS

// LoginTTL is how long a login code works, if nobody uses it first, unless
// Server.LoginTTL says otherwise.
const LoginTTL = 10 * time.Minute

type logins struct {
	mu    sync.Mutex
	codes map[string]time.Time // code → when it stops working
}

// NewLogin makes a one-time login code: GET /login?code=CODE logs a browser
// in, once, within LoginTTL.
func (s *Server) NewLogin() (code string, expires time.Time) {
	var b [16]byte
	_, _ = rand.Read(b[:])
	code = hex.EncodeToString(b[:])
	now := time.Now()
	expires = now.Add(s.loginTTL())
	s.logins.mu.Lock()
	defer s.logins.mu.Unlock()
	if s.logins.codes == nil {
		s.logins.codes = map[string]time.Time{}
	}
	for c, exp := range s.logins.codes {
		if now.After(exp) {
			delete(s.logins.codes, c)
		}
	}
	s.logins.codes[code] = expires
	return code, expires
}

func (s *Server) loginTTL() time.Duration {
	if s.LoginTTL > 0 {
		return s.LoginTTL
	}
	return LoginTTL
}

// takeLogin uses up a login code: true once for a code that still works.
func (s *Server) takeLogin(code string) bool {
	s.logins.mu.Lock()
	defer s.logins.mu.Unlock()
	exp, ok := s.logins.codes[code]
	delete(s.logins.codes, code)
	return ok && time.Now().Before(exp)
}

// KeyTTL is how long a page's key lasts.
const KeyTTL = 30 * 24 * time.Hour

// keyProtocol prefixes the key in the page's WebSocket subprotocols;
// PageProtocol is the one the bridge answers with.
const (
	keyProtocol  = "askctl.key."
	PageProtocol = "askctl"
)

// newKey makes a page key: its expiry and a nonce, signed with the token.
func (s *Server) newKey() string {
	var n [12]byte
	_, _ = rand.Read(n[:])
	body := fmt.Sprintf("%d.%s", time.Now().Add(KeyTTL).Unix(), hex.EncodeToString(n[:]))
	return body + "." + s.sign(body)
}

func (s *Server) sign(body string) string {
	m := hmac.New(sha256.New, []byte(s.Token))
	m.Write([]byte("askctl page key v1|" + body))
	return hex.EncodeToString(m.Sum(nil))
}

// validKey reports whether key was made by this bridge's token and has
// not expired.
func (s *Server) validKey(key string) bool {
	i := strings.LastIndexByte(key, '.')
	if s.Token == "" || i < 0 {
		return false
	}
	body, mac := key[:i], key[i+1:]
	if subtle.ConstantTimeCompare([]byte(mac), []byte(s.sign(body))) != 1 {
		return false
	}
	exp, nonce, _ := strings.Cut(body, ".")
	sec, err := strconv.ParseInt(exp, 10, 64)
	return err == nil && time.Now().Unix() < sec && (s.B == nil || !s.B.KeyRevoked(nonce))
}

// logout is POST /api/logout {"key": KEY}: the page's "log out". The key
// stops working on the server (the bridge keeps its nonce until it would
// have expired), not only in the browser that forgets it. Holding the key
// is what it takes.
func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Key string `json:"key"`
	}
	if err := decode(w, r, &req); err != nil {
		fail(w, err)
		return
	}
	if !s.validKey(req.Key) {
		w.Header().Set("Connection", "close")
		writeError(w, http.StatusUnauthorized, "unauthorized", "not a key this bridge gave, or it expired or was revoked")
		return
	}
	body := req.Key[:strings.LastIndexByte(req.Key, '.')]
	exp, nonce, _ := strings.Cut(body, ".")
	sec, _ := strconv.ParseInt(exp, 10, 64)
	if err := s.B.RevokeKey(r.Context(), nonce, time.Unix(sec, 0)); err != nil {
		fail(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// pageKey reports whether r is a WebSocket upgrade that offers a valid page
// key among its subprotocols.
func (s *Server) pageKey(r *http.Request) bool {
	for _, h := range r.Header.Values("Sec-WebSocket-Protocol") {
		for _, p := range strings.Split(h, ",") {
			if k, ok := strings.CutPrefix(strings.TrimSpace(p), keyProtocol); ok && s.validKey(k) {
				return true
			}
		}
	}
	return false
}

// apiLogin is POST /api/login: a one-time login link for the page.
func (s *Server) apiLogin(w http.ResponseWriter, r *http.Request) {
	code, exp := s.NewLogin()
	writeJSON(w, http.StatusCreated, bridgeapi.Login{Path: "/login?code=" + code, ExpiresAt: exp})
}

// login is GET /login?code=CODE: it spends the code and hands the page its
// key, which login.js keeps in localStorage before it goes on to /.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	if !s.takeLogin(r.URL.Query().Get("code")) {
		s.loginPage(w, http.StatusUnauthorized, fmt.Sprintf("This login link was used already, or it expired (a link works once, within %v).", s.loginTTL()))
		return
	}
	securePage(w)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprintf(w, `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="askctl-key" content="%s"><title>askctl: logging in</title><script src="/page/login.js"></script></head><body><p>Logging in…</p></body></html>
`, html.EscapeString(s.newKey()))
}

// page is GET /: the page. It holds no secret; without a key it says how
// to log in.
func (s *Server) page(w http.ResponseWriter, r *http.Request) {
	securePage(w)
	data, _ := pageFiles.ReadFile("page/index.html")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(data)
}

// loginPage tells a browser that is not logged in how to log in.
func (s *Server) loginPage(w http.ResponseWriter, status int, why string) {
	securePage(w)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	fmt.Fprintf(w, `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>askctl: log in</title><link rel="stylesheet" href="/page/style.css"></head>
<body><main class="login"><h1>askctl</h1><p>%s</p><p>Run <code>askctl login</code> on the machine the bridge runs on, and open the link it prints. (<code>askctl serve</code> prints one when it starts.)</p></main></body></html>
`, html.EscapeString(why))
}

// securePage sets the headers every page response carries: only the
// bridge's own script and socket, no framing, no referrer (a login link
// never leaks).
func securePage(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
}

// assets serves the page's script and style sheet (no secret in them, so no
// login needed).
func (s *Server) assets() http.Handler {
	sub, _ := fs.Sub(pageFiles, "page")
	files := http.StripPrefix("/page/", http.FileServerFS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		securePage(w)
		if data, ok, err := pageEdited(strings.TrimPrefix(r.URL.Path, "/page/")); err != nil || ok {
			// A broken page (-tags askctl_broken only).
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
			_, _ = w.Write(data)
			return
		}
		files.ServeHTTP(w, r)
	})
}
