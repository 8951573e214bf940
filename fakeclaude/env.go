package fakeclaude

import (
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/askctl/askctl/claudecli"
)

// Environment variables fakeclaude reads. Bridges spawn it with their own
// arguments, so everything fakeclaude itself needs can come from the
// environment. Other packages set them through [Env], never by name.
const (
	EnvScenario      = "FAKECLAUDE_SCENARIO"        // built-in name or scenario file
	EnvTranscript    = "FAKECLAUDE_TRANSCRIPT"      // transcript file; {pid} is replaced by the process id
	EnvEvents        = "FAKECLAUDE_EVENTS"          // live events: unix:PATH or tcp:HOST:PORT to dial
	EnvTimeout       = "FAKECLAUDE_TIMEOUT"         // deadline of each wait, e.g. 30s (default 5m)
	EnvLinger        = "FAKECLAUDE_LINGER"          // wait for stdin to close after the last turn (default: the timeout)
	EnvNoSessionFile = "FAKECLAUDE_NO_SESSION_FILE" // 1: write no session file (as --no-session-persistence)
)

// EnvRunAs turns a multi-call binary (askctl, a test binary) into an agent
// when it holds a role: RoleFake is fakeclaude, RoleReal askctl's shim that
// runs the real CLI for a harness.
const EnvRunAs = "_ASKCTL_RUN_AS"

// Roles of EnvRunAs.
const (
	RoleFake = "fakeclaude"
	RoleReal = "realclaude"
)

// Env is fakeclaude's environment contract: what a caller that starts
// fakeclaude (a harness, askctl serve, a test) tells it. The zero value
// sets nothing; each field that is set becomes one variable.
type Env struct {
	// Scenario is a built-in scenario's name or a scenario file.
	Scenario string
	// Events is the address of a harness's event hub (unix:PATH or
	// tcp:HOST:PORT). With it and no Scenario, fakeclaude asks the harness
	// what to play, so Environ then writes an empty Scenario, overriding
	// one inherited from the caller's environment.
	Events string
	// Transcript is a transcript file to append to; {pid} becomes the
	// process id.
	Transcript string
	// Timeout bounds each of fakeclaude's waits on the SDK side.
	Timeout time.Duration
	// Linger is how long fakeclaude waits for stdin to close after its
	// last turn.
	Linger time.Duration
	// NoSessionFile writes no session file.
	NoSessionFile bool
	// RunAs is the role (RoleFake, RoleReal) of a multi-call binary.
	RunAs string
	// CLIVersion is the learned CLI release to play (claudecli.Releases);
	// empty plays the newest, or a recorded scenario's own.
	CLIVersion string
}

// Environ is e as "NAME=value" entries, to append to a command's
// environment.
func (e Env) Environ() []string {
	var out []string
	add := func(k, v string) { out = append(out, k+"="+v) }
	if e.RunAs != "" {
		add(EnvRunAs, e.RunAs)
	}
	if e.Scenario != "" || e.Events != "" {
		add(EnvScenario, e.Scenario)
	}
	if e.Events != "" {
		add(EnvEvents, e.Events)
	}
	if e.Transcript != "" {
		add(EnvTranscript, e.Transcript)
	}
	if e.Timeout > 0 {
		add(EnvTimeout, e.Timeout.String())
	}
	if e.Linger > 0 {
		add(EnvLinger, e.Linger.String())
	}
	if e.NoSessionFile {
		add(EnvNoSessionFile, "1")
	}
	if e.CLIVersion != "" {
		add(claudecli.EnvCLIVersion, e.CLIVersion)
	}
	return out
}

// IsEnv reports whether the "NAME=value" entry kv is one of fakeclaude's
// variables (or EnvRunAs): a program that starts other programs drops them
// so that they do not turn into fakeclaude too.
func IsEnv(kv string) bool {
	return strings.HasPrefix(kv, "FAKECLAUDE_") || strings.HasPrefix(kv, EnvRunAs+"=")
}

// Beside is the fakeclaude executable in the directory of exe (where make
// build puts it next to askctl), if there is one. A program that can run
// as fakeclaude itself (askctl, with EnvRunAs) runs that one instead: it
// starts faster.
func Beside(exe string) (string, bool) {
	p := filepath.Join(filepath.Dir(exe), "fakeclaude")
	st, err := os.Stat(p)
	return p, err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0
}
