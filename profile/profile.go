package profile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/askctl/askctl/surface"
	"github.com/tidwall/gjson"
)

// Profile says how to run and reach one bridge under test. It is one small
// JSON file:
//
//	{
//	  "name": "askctl serve over ws",
//	  "start": {"command": "${ASKCTL}", "args": ["serve", "--addr", "127.0.0.1:${PORT}", "--state", "${STATE}", "--claude", "${CLAUDE}", "--timeout", "1s"],
//	            "env": {"KEY": "value"}, "dir": "${WORK}"},
//	  "ready": {"url": "http://127.0.0.1:${PORT}/api/health", "timeout": "10s"},
//	  "claude": "arg",
//	  "surface": {"kind": "ws", "url": "ws://127.0.0.1:${PORT}/ws", "api": "http://127.0.0.1:${PORT}", "token_file": "${STATE}/token"},
//	  "capabilities": {"sdk": true, "timeout": "1s", "reconnect": true, "takeover": true, "persist": true},
//	  "policy": {"other_tools": "allow"},
//	  "limits": {"start": "15s", "reconnect": "10s", "op": "10s"},
//	  "mcp": {"config": {"mcpServers": {"askctl": {"command": "${ASKCTL}", "args": ["mcp", "--state", "${STATE}"]}}}}
//	}
//
// claude says how the bridge is made to spawn fakeclaude instead of claude:
// "arg" (the profile passes ${CLAUDE} itself, in start.args or start.env),
// "env:NAME" (the harness sets NAME to the path of the claude shim), or
// "path" (a directory holding an executable named claude goes first on
// PATH). The shim carries everything fakeclaude needs, so a bridge that
// passes its agents no environment still works.
//
// Strings may use ${NAME}: the harness's variables (WORK, STATE, PORT,
// CLAUDE, CLAUDE_DIR, ASKCTL, PROFILE_DIR) or, failing those, the
// environment. An unknown one is an error naming the field.
type Profile struct {
	Name         string       `json:"name"`
	Start        *Start       `json:"start,omitempty"`
	Ready        Ready        `json:"ready,omitzero"`
	Claude       string       `json:"claude,omitempty"`
	Surface      surface.Spec `json:"surface"`
	Capabilities Capabilities `json:"capabilities"`
	Policy       Policy       `json:"policy,omitzero"`
	// MCP is how the CLI reaches the bridge's ask_user server (route MCP).
	MCP *MCPSpec `json:"mcp,omitempty"`
	// Limits are how long the harness waits for the bridge.
	Limits surface.Limits `json:"limits,omitzero"`

	// File is where the profile was read from; Dir its directory.
	File string `json:"-"`
	Dir  string `json:"-"`
	raw  []byte
}

// Start is how to start the bridge. Without it the bridge is already
// running (askctl answer --bridge on a live bridge).
type Start struct {
	Command string            `json:"command"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	Dir     string            `json:"dir,omitempty"`
}

// Ready is how the harness knows the bridge is up: an HTTP GET of URL that
// answers 2xx, or a TCP address that accepts. Neither: at once.
type Ready struct {
	URL     string           `json:"url,omitempty"`
	TCP     string           `json:"tcp,omitempty"`
	Timeout surface.Duration `json:"timeout,omitzero"`
}

// MCPSpec is how the CLI reaches the bridge's MCP ask_user server: the
// harness runs the agent itself, in print mode (claude -p), with Config as
// --mcp-config and the tool pre-allowed (--allowedTools), and Env added to
// its environment (the server inherits it).
type MCPSpec struct {
	// Config is the --mcp-config JSON: {"mcpServers":{"<name>":{…}}}.
	Config json.RawMessage `json:"config"`
	// Server is the server's name in Config; default the only one.
	Server string `json:"server,omitempty"`
	// Tool is the ask_user tool's name on the server; default ask_user.
	Tool string            `json:"tool,omitempty"`
	Env  map[string]string `json:"env,omitempty"`
}

// ToolName is the tool as the CLI names it: mcp__<server>__<tool>.
func (m *MCPSpec) ToolName() string { return "mcp__" + m.Server + "__" + m.Tool }

// Capabilities are what the bridge claims; the cases of a capability it
// does not declare are skipped, never passed.
type Capabilities struct {
	SDK         bool             `json:"sdk"`
	MCP         bool             `json:"mcp"`
	Timeout     surface.Duration `json:"timeout,omitzero"` // the question timeout it declares; zero: none
	Reconnect   bool             `json:"reconnect"`
	Takeover    bool             `json:"takeover"`
	Persist     bool             `json:"persist"`
	Permissions bool             `json:"permissions"`
	// Crash, when set, says how the harness makes the bridge end itself
	// (kill -9, as a crash would) at a named point of its work, the first
	// time it gets there: the crash rows of UI-PERSIST check what the
	// restarted bridge keeps of what it had accepted.
	Crash *Crash `json:"crash,omitempty"`
}

// Crash is how a bridge is armed to crash: the harness starts it with the
// environment variable Env set to one of Points (the suite's names, below).
type Crash struct {
	Env    string   `json:"env"`
	Points []string `json:"points"`
}

// The crash points the suite knows: where a bridge has accepted something
// and not yet acted on it. A bridge declares those it can stop at.
const (
	CrashAskRead         = "ask-read"         // an agent's question read, not yet stored
	CrashAnswerCommitted = "answer-committed" // a person's answer stored, nothing written to the agent
	CrashAnswerWritten   = "answer-written"   // the answer written whole to the agent, not yet marked delivered
	CrashResumeCommitted = "resume-committed" // a late answer (its agent lost) stored, the session not yet resumed with it
	CrashSkipCommitted   = "skip-committed"   // a person's skip stored, nothing written to the agent
	CrashExpiryCommitted = "expiry-committed" // a timeout stored, nothing written to the agent
)

// CrashPointNames are the crash points the suite knows.
func CrashPointNames() []string {
	return []string{CrashAskRead, CrashAnswerCommitted, CrashAnswerWritten, CrashResumeCommitted, CrashSkipCommitted, CrashExpiryCommitted}
}

// HasCrashPoint reports whether the bridge can be made to crash at point.
func (c Capabilities) HasCrashPoint(point string) bool {
	return c.Crash != nil && slices.Contains(c.Crash.Points, point)
}

// Has reports whether the capability named is declared.
func (c Capabilities) Has(name string) bool {
	switch name {
	case "sdk":
		return c.SDK
	case "mcp":
		return c.MCP
	case "timeout":
		return c.Timeout > 0
	case "reconnect":
		return c.Reconnect
	case "takeover":
		return c.Takeover
	case "persist":
		return c.Persist
	case "permissions":
		return c.Permissions
	case "crash":
		return c.Crash != nil
	}
	return false
}

// CapabilityNames are the capabilities a profile can declare.
func CapabilityNames() []string {
	return []string{"sdk", "mcp", "timeout", "reconnect", "takeover", "persist", "permissions", "crash"}
}

// Policy is what the bridge claims to do where the requirements leave it a
// choice.
type Policy struct {
	// OtherTools is how can_use_tool for tools other than AskUserQuestion is
	// decided: allow or deny (default allow).
	OtherTools string `json:"other_tools,omitempty"`
}

// Load reads and checks a profile file.
func Load(path string) (*Profile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// Parse parses a profile; errors name file, line and field.
func Parse(file string, data []byte) (*Profile, error) {
	p := &Profile{File: file, Dir: filepath.Dir(file), raw: data}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(p); err != nil {
		return nil, p.decodeError(dec, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%s:%d: more than one JSON value", file, lineAt(data, int(dec.InputOffset())))
	}
	if abs, err := filepath.Abs(p.Dir); err == nil {
		p.Dir = abs
	}
	if err := p.check(); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *Profile) decodeError(dec *json.Decoder, err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Errorf("%s:%d: %v", p.File, lineAt(p.raw, int(se.Offset)), err)
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return fmt.Errorf("%s:%d: unexpected end of JSON input: a brace or bracket is not closed", p.File, lineAt(p.raw, len(p.raw)))
	case errors.As(err, &te):
		return fmt.Errorf("%s:%d: %s: want %s, got %s", p.File, lineAt(p.raw, int(te.Offset)), te.Field, te.Type, te.Value)
	}
	msg := err.Error()
	if f, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		f = strings.Trim(f, `"`)
		off := int(dec.InputOffset())
		if i := bytes.Index(p.raw, []byte(`"`+f+`"`)); i >= 0 {
			off = i
		}
		return fmt.Errorf("%s:%d: unknown field %q", p.File, lineAt(p.raw, off), f)
	}
	// Errors of our own UnmarshalJSON (durations) carry no offset: find the
	// field that failed by decoding the document loosely.
	if field, line := p.badDuration(); field != "" {
		return fmt.Errorf("%s:%d: %s: %v", p.File, line, field, err)
	}
	return fmt.Errorf("%s: %v", p.File, err)
}

func (p *Profile) badDuration() (string, int) {
	for _, f := range []string{"ready.timeout", "capabilities.timeout", "limits.start", "limits.reconnect", "limits.op"} {
		r := gjson.GetBytes(p.raw, f)
		if !r.Exists() {
			continue
		}
		var d surface.Duration
		if d.UnmarshalJSON([]byte(r.Raw)) != nil {
			return f, lineAt(p.raw, r.Index)
		}
	}
	return "", 0
}

// errAt is an error about field, at its line.
func (p *Profile) errAt(field, format string, args ...any) error {
	line := 1
	if r := gjson.GetBytes(p.raw, field); r.Exists() {
		line = lineAt(p.raw, r.Index)
	} else if parent, _, ok := cutLast(field); ok {
		if r := gjson.GetBytes(p.raw, parent); r.Exists() {
			line = lineAt(p.raw, r.Index)
		}
	}
	return fmt.Errorf("%s:%d: %s: %s", p.File, line, field, fmt.Sprintf(format, args...))
}

func cutLast(field string) (string, string, bool) {
	i := strings.LastIndex(field, ".")
	if i < 0 {
		return "", "", false
	}
	return field[:i], field[i+1:], true
}

func lineAt(data []byte, off int) int {
	if off > len(data) {
		off = len(data)
	}
	return bytes.Count(data[:off], []byte("\n")) + 1
}

var varRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

func (p *Profile) checkCrash(c *Crash) error {
	if p.Start == nil {
		return p.errAt("capabilities.crash", "the harness arms a crash by starting the bridge: the profile needs a start")
	}
	if !p.Capabilities.Persist {
		return p.errAt("capabilities.crash", "crash rows check what a restarted bridge kept: declare persist too")
	}
	if !regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`).MatchString(c.Env) {
		return p.errAt("capabilities.crash.env", "want the name of the environment variable that arms a crash point, got %q", c.Env)
	}
	if len(c.Points) == 0 {
		return p.errAt("capabilities.crash.points", "missing: name the points the bridge can crash at (of %s)", strings.Join(CrashPointNames(), ", "))
	}
	for i, pt := range c.Points {
		if !slices.Contains(CrashPointNames(), pt) {
			return p.errAt(fmt.Sprintf("capabilities.crash.points[%d]", i), "unknown point %q: want one of %s", pt, strings.Join(CrashPointNames(), ", "))
		}
	}
	return nil
}

func (p *Profile) check() error {
	if strings.TrimSpace(p.Name) == "" {
		return p.errAt("name", "missing: name the bridge")
	}
	if p.Start != nil && p.Start.Command == "" {
		return p.errAt("start.command", "missing")
	}
	switch {
	case p.Claude == "", p.Claude == "arg", p.Claude == "path":
	case strings.HasPrefix(p.Claude, "env:") && len(p.Claude) > 4:
	default:
		return p.errAt("claude", "want arg, path or env:NAME, got %q", p.Claude)
	}
	if p.Start != nil && p.Claude == "" {
		return p.errAt("claude", "missing: say how the bridge is made to spawn fakeclaude (arg, path or env:NAME)")
	}
	if p.Claude == "arg" && p.Start != nil && !strings.Contains(string(p.raw), "${CLAUDE}") {
		return p.errAt("claude", `"arg" but no start.args or start.env uses ${CLAUDE}`)
	}
	s := p.Surface
	switch s.Kind {
	case "ws", "control-ws":
		if s.URL == "" {
			return p.errAt("surface.url", "missing: the WebSocket endpoint, e.g. ws://127.0.0.1:${PORT}/ws")
		}
		if s.API == "" {
			return p.errAt("surface.api", "missing: the HTTP API base that starts sessions")
		}
	case "http":
		if s.URL == "" {
			return p.errAt("surface.url", "missing: the API base, e.g. http://127.0.0.1:${PORT}")
		}
	case "browser":
		if s.URL == "" {
			return p.errAt("surface.url", "missing: the page, with {session} where a session's id goes, e.g. http://127.0.0.1:${PORT}/#session={session}")
		}
		if s.API == "" {
			return p.errAt("surface.api", "missing: the HTTP API base that starts sessions")
		}
		if s.Browser == nil {
			return p.errAt("surface.browser", "missing: the map of the page (see conformance/README.md)")
		}
		if err := s.Browser.Check(p.errAt); err != nil {
			return err
		}
	case "exec":
		if s.Command == "" {
			return p.errAt("surface.command", "missing: the command that speaks the exec contract")
		}
		if s.SharedLink && p.Capabilities.Takeover {
			return p.errAt("capabilities.takeover", "a surface with one shared link for all sessions has no second connection to take a session over: leave takeover out")
		}
	case "":
		return p.errAt("surface.kind", "missing: want one of %s", strings.Join(surface.Kinds(), ", "))
	default:
		return p.errAt("surface.kind", "want one of %s, got %q", strings.Join(surface.Kinds(), ", "), s.Kind)
	}
	if s.SharedLink && s.Kind != "exec" {
		return p.errAt("surface.shared_link", "only for an exec surface, whose adapter demultiplexes the link; a %s surface has a connection per session", s.Kind)
	}
	if err := p.checkMCP(); err != nil {
		return err
	}
	if !p.Capabilities.SDK && !p.Capabilities.MCP {
		return p.errAt("capabilities", "declares neither sdk nor mcp: which route does the bridge serve?")
	}
	if c := p.Capabilities.Crash; c != nil {
		if err := p.checkCrash(c); err != nil {
			return err
		}
	}
	if o := p.Policy.OtherTools; o != "" && o != "allow" && o != "deny" {
		return p.errAt("policy.other_tools", "want allow or deny, got %q", o)
	}
	// Every ${NAME} must be known now or when run: harness variables, or the
	// environment.
	known := map[string]bool{}
	for _, v := range VarNames() {
		known[v] = true
	}
	var unknown []string
	for _, m := range varRef.FindAllSubmatch(p.raw, -1) {
		n := string(m[1])
		if !known[n] && os.Getenv(n) == "" {
			unknown = append(unknown, n)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		i := bytes.Index(p.raw, []byte("${"+unknown[0]+"}"))
		return fmt.Errorf("%s:%d: ${%s}: not a harness variable (%s) nor set in the environment", p.File, lineAt(p.raw, i), unknown[0], strings.Join(VarNames(), ", "))
	}
	return nil
}

func (p *Profile) checkMCP() error {
	m := p.MCP
	if m == nil {
		if p.Capabilities.MCP {
			return p.errAt("mcp", `missing: capability mcp needs "mcp": {"config": <the --mcp-config that reaches the bridge's ask_user server>}`)
		}
		return nil
	}
	if !json.Valid(m.Config) || !gjson.GetBytes(m.Config, "mcpServers").IsObject() {
		return p.errAt("mcp.config", `want {"mcpServers":{"<name>":{…}}}, the JSON claude --mcp-config takes`)
	}
	var names []string
	gjson.GetBytes(m.Config, "mcpServers").ForEach(func(k, _ gjson.Result) bool {
		names = append(names, k.String())
		return true
	})
	switch {
	case len(names) == 0:
		return p.errAt("mcp.config", "mcpServers is empty: name the bridge's ask_user server there")
	case m.Server == "" && len(names) == 1:
		m.Server = names[0]
	case m.Server == "":
		return p.errAt("mcp.server", "missing: mcp.config has %d servers (%s); name the one with ask_user", len(names), strings.Join(names, ", "))
	case !slices.Contains(names, m.Server):
		return p.errAt("mcp.server", "%q is not a server of mcp.config (%s)", m.Server, strings.Join(names, ", "))
	}
	if m.Tool == "" {
		m.Tool = "ask_user"
	}
	return nil
}

// VarNames are the variables the harness defines for a profile. TIMEOUT is
// capabilities.timeout: a profile that starts its bridge with it (the
// reference profiles: --timeout ${TIMEOUT}) lets --slow scale the bridge's
// timeout with the rest (WithSlowTimeout).
func VarNames() []string {
	return []string{"WORK", "STATE", "PORT", "CLAUDE", "CLAUDE_DIR", "ASKCTL", "PROFILE_DIR", "TIMEOUT"}
}

// TimeoutVar is d as ${TIMEOUT} gives it: whole seconds as "600s" (a
// bridge that reads "Ns" reads it), else a Go duration ("1.5s").
func TimeoutVar(d time.Duration) string {
	if d%time.Second == 0 {
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	}
	return d.String()
}

// SetsTimeout reports whether the profile starts its bridge with the
// declared timeout, ${TIMEOUT}: the harness then sets the bridge's timeout.
func (p *Profile) SetsTimeout() bool {
	if p.Start == nil || p.Capabilities.Timeout <= 0 {
		return false
	}
	uses := func(s string) bool { return strings.Contains(s, "${TIMEOUT}") }
	for _, a := range p.Start.Args {
		if uses(a) {
			return true
		}
	}
	for _, v := range p.Start.Env {
		if uses(v) {
			return true
		}
	}
	return false
}

// WithSlowTimeout is p with its declared timeout scaled by slow, where the
// harness sets the bridge's timeout (SetsTimeout): on a busy machine the
// bridge's deadline grows with the suite's waits, and every bound the
// requirements put on it is read from the timeout declared, so none is
// loosened. Otherwise p itself.
func (p *Profile) WithSlowTimeout(slow float64) *Profile {
	if slow <= 1 {
		return p
	}
	return p.WithTimeout(time.Duration(float64(p.Capabilities.Timeout) * slow).Round(time.Millisecond))
}

// WithTimeout is p with the declared timeout d, where the harness sets the
// bridge's timeout (SetsTimeout): the bridge is started with d, and every
// rule on its deadline reads d. Otherwise p itself.
func (p *Profile) WithTimeout(d time.Duration) *Profile {
	if !p.SetsTimeout() || d == p.Capabilities.Timeout.D() {
		return p
	}
	q := *p
	q.Capabilities.Timeout = surface.Duration(d)
	return &q
}

// expand replaces ${NAME} in s from vars, then the environment.
func expand(s string, vars map[string]string) string {
	return varRef.ReplaceAllStringFunc(s, func(m string) string {
		n := m[2 : len(m)-1]
		if v, ok := vars[n]; ok {
			return v
		}
		return os.Getenv(n)
	})
}

// Expanded returns a copy of p with every ${NAME} replaced.
func (p *Profile) Expanded(vars map[string]string) *Profile {
	q := *p
	x := func(s string) string { return expand(s, vars) }
	xs := func(ss []string) []string {
		out := make([]string, len(ss))
		for i, s := range ss {
			out[i] = x(s)
		}
		return out
	}
	xm := func(m map[string]string) map[string]string {
		if m == nil {
			return nil
		}
		out := map[string]string{}
		for k, v := range m {
			out[k] = x(v)
		}
		return out
	}
	// A relative command path is from the profile's directory; a bare
	// name is looked up on PATH.
	rel := func(cmd string) string {
		if strings.Contains(cmd, "/") && !filepath.IsAbs(cmd) && p.Dir != "" {
			return filepath.Join(p.Dir, cmd)
		}
		return cmd
	}
	if p.Start != nil {
		st := *p.Start
		st.Command, st.Args, st.Env, st.Dir = rel(x(st.Command)), xs(st.Args), xm(st.Env), x(st.Dir)
		q.Start = &st
	}
	q.Ready.URL, q.Ready.TCP = x(p.Ready.URL), x(p.Ready.TCP)
	s := p.Surface
	s.URL, s.API, s.Token, s.TokenFile, s.Command, s.Args, s.Env = x(s.URL), x(s.API), x(s.Token), x(s.TokenFile), rel(x(s.Command)), xs(s.Args), xm(s.Env)
	q.Surface = s
	if p.MCP != nil {
		m := *p.MCP
		m.Config, m.Env = json.RawMessage(x(string(p.MCP.Config))), xm(p.MCP.Env)
		q.MCP = &m
	}
	return &q
}

// SurfaceUnset lists the ${NAME}s of the surface's fields that neither vars
// nor the environment set: a profile used on a running bridge (askctl
// answer --bridge) has no harness to set them.
func (p *Profile) SurfaceUnset(vars map[string]string) []string {
	sp := p.Surface
	fields := append([]string{sp.URL, sp.API, sp.Token, sp.TokenFile, sp.Command}, sp.Args...)
	for _, v := range sp.Env {
		fields = append(fields, v)
	}
	seen := map[string]bool{}
	var out []string
	for _, f := range fields {
		for _, m := range varRef.FindAllStringSubmatch(f, -1) {
			n := m[1]
			if _, ok := vars[n]; ok || os.Getenv(n) != "" || seen[n] {
				continue
			}
			seen[n] = true
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}
