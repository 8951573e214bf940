// Package conformance is askctl's conformance suite: one testscript case
// per requirement (requirements.go, after REQUIREMENTS.md) that checks any
// bridge described by a profile.Profile, with fakeclaude as every agent and
// the harness's adapters as the person. It runs from go test
// ([Run], [Setup]) and from askctl conformance ([RunSuite]), with the cases
// embedded.
//
// It is public: another repository runs the suite against its bridge with Run
// (go test) or RunSuite.
package conformance

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/askctl/askctl/harness"
	"github.com/askctl/askctl/profile"
	_ "github.com/askctl/askctl/surface/browser" // profiles of kind browser (reference-browser)
	"github.com/rogpeppe/go-internal/testscript"
)

// Cases are the suite's hand-written cases, one per requirement ID;
// CaseScript adds each one's generated dimension rows.
//
//go:embed testdata/*.txtar
var Cases embed.FS

// Config says which bridge the suite checks and how.
type Config struct {
	Profile *profile.Profile
	// Askctl is the askctl executable the claude shim runs as fakeclaude
	// (fakeclaude.Env.RunAs; and ${ASKCTL} in profiles).
	Askctl string
	// AgentTimeout is each agent's deadline for every wait (default 20s):
	// longer than any case waits, so an agent left waiting ends by itself.
	AgentTimeout time.Duration
	// RealClaude, when set, makes the bridge spawn the real claude CLI
	// against askctl's fake model API instead of fakeclaude.
	RealClaude string
	// CLIVersion is the claude release the agents play or are: fakeclaude
	// plays it; with RealClaude, that is its release. Empty: the newest
	// learned.
	CLIVersion string
	// ClaimTimeout bounds the wait for the bridge to spawn a session's
	// agent (default 15s).
	ClaimTimeout time.Duration
	// Slow scales every wait of the suite and the harness (not a
	// requirement's own bounds): 2 doubles them, for a busy machine. 0
	// means ASKCTL_SLOW, else 1.
	Slow float64
	// OnCase receives each case's measured latencies when it ends.
	OnCase func(name string, lat []harness.Latency)

	ctx context.Context // RunSuite's: interrupting it ends the cases' waits
	// slowed is Profile once its timeout was scaled by Slow.
	slowed *profile.Profile
	// setupFailed hears of a case whose bridge could not be set up.
	setupFailed func(*harness.SetupError)
	// blocked hears of a precondition of the case that another
	// requirement owns and that failed; nil (go test) fails the case.
	blocked func(by, why string)
	// stopped hears that the case ended on such a precondition, unable to
	// go on without it: the case is BLOCKED, not failed.
	stopped func()
	// unsupported hears that the surface has no operation the case needs.
	unsupported func(why string)
	// rowSkipped hears that a generated dimension row was skipped for an
	// operation the surface lacks.
	rowSkipped func(row, why string)
	// row hears of a generated row's verdict as the case runs: "" when it
	// begins, then Fail, Blocked or Skip with why. Set, a row that fails
	// ends alone and the case goes on with its next row; nil (go test),
	// it ends the case.
	row func(name, status, why string)
}

func (c *Config) defaults() {
	if c.Slow <= 0 {
		c.Slow, _ = strconv.ParseFloat(os.Getenv(EnvSlow), 64)
	}
	if c.Slow < 1 {
		c.Slow = 1
	}
	if c.Profile != nil && c.Profile != c.slowed {
		// Once: the scaled profile is remembered.
		c.Profile = c.Profile.WithSlowTimeout(c.Slow)
		c.slowed = c.Profile
	}
	if c.AgentTimeout <= 0 {
		c.AgentTimeout = c.scaled(20 * time.Second)
	}
	// An agent must outlast the bridge's timeout: SDK-TIMEOUT waits for it.
	if c.Profile != nil {
		if min := c.Profile.Capabilities.Timeout.D() + 15*time.Second; c.AgentTimeout < min {
			c.AgentTimeout = min
		}
	}
}

// Setup makes p run conformance cases against cfg's bridge, keeping what p
// already sets up: it adds the custom commands, the conditions
// [cap:NAME], [crash:POINT], [surface:KIND], [policy:allow|deny], [agent:fake|real], and a lazily started
// bridge per case with its variables ($TIMEOUT, $TIMEOUT_GRACE: the
// declared timeout, and one second more).
func Setup(p *testscript.Params, cfg Config) error {
	if cfg.Profile == nil {
		return fmt.Errorf("conformance: no profile")
	}
	if cfg.Askctl == "" {
		return fmt.Errorf("conformance: Config.Askctl is empty: it must be an askctl executable (the claude shim runs it as fakeclaude, and ${ASKCTL} in profiles is it)")
	}
	cfg.defaults()
	origSetup, origCond := p.Setup, p.Condition
	if p.Cmds == nil {
		p.Cmds = map[string]func(*testscript.TestScript, bool, []string){}
	}
	for name, f := range commandFuncs() {
		if _, ok := p.Cmds[name]; ok {
			return fmt.Errorf("conformance: command %q is defined twice", name)
		}
		p.Cmds[name] = f
	}
	p.RequireExplicitExec, p.RequireUniqueNames = true, true
	p.Setup = func(env *testscript.Env) error {
		if origSetup != nil {
			if err := origSetup(env); err != nil {
				return err
			}
		}
		// This case's own: a case that waits for no timeout runs a bridge
		// whose timeout is long (where the profile sets it), so that slow
		// steps on a busy machine never meet a deadline the case does not
		// check.
		name := filepath.Base(env.WorkDir)
		c := cfg
		if script, ok := caseScript(p, caseName(name)); ok && !namesTimeout.MatchString(script) {
			c.Profile = c.Profile.WithTimeout(UnwaitedTimeout)
		}
		l := &lazyEnv{cfg: &c, work: filepath.Join(env.WorkDir, "bridge")}
		env.Values[keyEnv] = l
		env.Values[keyCfg] = &c
		t := c.Profile.Capabilities.Timeout.D()
		env.Setenv("TIMEOUT", profile.TimeoutVar(t))
		env.Setenv("TIMEOUT_GRACE", (t + time.Second).String())
		env.Setenv("TIMEOUT_WAIT", (t + 10*time.Second).String())
		// A resumed agent is a new process: the real CLI's start takes
		// seconds, and many at once on a busy machine (the end-to-end
		// tier) took past 20 s.
		resume := 20 * time.Second
		if c.RealClaude != "" {
			resume = time.Minute
		}
		env.Setenv("RESUME_WAIT", resume.String())
		env.Defer(func() {
			if l.env == nil {
				return
			}
			if cfg.OnCase != nil {
				cfg.OnCase(caseName(name), l.env.Latencies())
			}
			l.env.Close()
		})
		return nil
	}
	p.Condition = func(cond string) (bool, error) {
		kind, arg, ok := strings.Cut(cond, ":")
		if ok {
			switch kind {
			case "cap":
				if !slices.Contains(profile.CapabilityNames(), arg) {
					return false, fmt.Errorf("unknown capability %q", arg)
				}
				return cfg.Profile.Capabilities.Has(arg), nil
			case "crash":
				if !slices.Contains(profile.CrashPointNames(), arg) {
					return false, fmt.Errorf("unknown crash point %q (the points: %s)", arg, strings.Join(profile.CrashPointNames(), ", "))
				}
				return cfg.Profile.Capabilities.HasCrashPoint(arg), nil
			case "surface":
				return cfg.Profile.Surface.Kind == arg, nil
			case "agent":
				if arg != "fake" && arg != "real" {
					return false, fmt.Errorf("unknown agent %q", arg)
				}
				return (arg == "real") == (cfg.RealClaude != ""), nil
			case "policy":
				o := cfg.Profile.Policy.OtherTools
				if o == "" {
					o = "allow"
				}
				return o == arg, nil
			}
		}
		if origCond != nil {
			return origCond(cond)
		}
		return false, fmt.Errorf("unknown condition %q", cond)
	}
	return nil
}

// UnwaitedTimeout is the bridge's timeout in a case that names no $TIMEOUT
// (nor $TIMEOUT_GRACE, $TIMEOUT_WAIT), where the profile starts its bridge
// with ${TIMEOUT}: such a case waits for no deadline, so none may end a
// question while a busy machine plays its steps slowly. Cases that check
// timeouts, and every explored sequence that waits one out, name them and
// run with the declared timeout.
const UnwaitedTimeout = 10 * time.Minute

// namesTimeout matches a case's use of $TIMEOUT, $TIMEOUT_GRACE or
// $TIMEOUT_WAIT, braced or not.
var namesTimeout = regexp.MustCompile(`\$\{?TIMEOUT`)

// caseScript is the text of the case named name, from p's files or
// directory.
func caseScript(p *testscript.Params, name string) (string, bool) {
	files := p.Files
	if p.Dir != "" {
		files = append(slices.Clip(files), filepath.Join(p.Dir, name+".txtar"), filepath.Join(p.Dir, name+".txt"))
	}
	for _, f := range files {
		if b := filepath.Base(f); b == name+".txtar" || b == name+".txt" {
			if data, err := os.ReadFile(f); err == nil {
				return string(data), true
			}
		}
	}
	return "", false
}

// EnvSlow is the slow factor (Config.Slow) when none is given: what a busy
// CI machine sets once for every run.
const EnvSlow = "ASKCTL_SLOW"

// scaled is d times the slow factor: a wait of the suite's own.
func (c *Config) scaled(d time.Duration) time.Duration {
	if c.Slow <= 1 {
		return d
	}
	return time.Duration(float64(d) * c.Slow)
}

// caseName is the case a work directory belongs to (testscript names it
// script-NAME).
func caseName(dir string) string { return strings.TrimPrefix(dir, "script-") }

// WriteCases writes the embedded cases to dir and returns their paths,
// those whose name matches match (all when nil).
func WriteCases(dir string, match func(string) bool) ([]string, error) {
	var out []string
	err := fs.WalkDir(Cases, "testdata", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		name := strings.TrimSuffix(d.Name(), ".txtar")
		if match != nil && !match(name) {
			return nil
		}
		data, err := CaseScript(name)
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, d.Name())
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			return err
		}
		out = append(out, dst)
		return nil
	})
	return out, err
}

// CaseNames lists the embedded cases.
func CaseNames() []string {
	ents, _ := fs.ReadDir(Cases, "testdata")
	var out []string
	for _, e := range ents {
		out = append(out, strings.TrimSuffix(e.Name(), ".txtar"))
	}
	return out
}

// collector gathers per-case latencies.
type collector struct {
	mu  sync.Mutex
	lat map[string][]harness.Latency
}

func (c *collector) add(name string, l []harness.Latency) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lat[name] = append(c.lat[name], l...)
}

// Run runs every case against cfg's bridge as subtests of t (go test).
func Run(t *testing.T, cfg Config) {
	t.Helper()
	dir := t.TempDir()
	if _, err := WriteCases(dir, nil); err != nil {
		t.Fatal(err)
	}
	p := testscript.Params{Dir: dir}
	if err := Setup(&p, cfg); err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, p)
}
