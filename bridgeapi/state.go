package bridgeapi

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The state directory holds a bridge's database, its token, and where it
// listens, so askctl's commands find a running bridge with no flags:
//
//	$ASKCTL_STATE_DIR, else $XDG_STATE_HOME/askctl, else ~/.local/state/askctl
//	  bridge.db    the SQLite database (WAL)
//	  token        the API token, readable by the user only (0600)
//	  serve.json   {"url":"http://127.0.0.1:7474","pid":1234} of the running bridge

// EnvStateDir overrides the state directory.
const EnvStateDir = "ASKCTL_STATE_DIR"

// StateDir is the state directory for getenv's environment.
func StateDir(getenv func(string) string) (string, error) {
	if d := getenv(EnvStateDir); d != "" {
		return d, nil
	}
	if d := getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "askctl"), nil
	}
	home := getenv("HOME")
	if home == "" {
		var err error
		if home, err = os.UserHomeDir(); err != nil {
			return "", fmt.Errorf("no state directory: set %s: %w", EnvStateDir, err)
		}
	}
	return filepath.Join(home, ".local", "state", "askctl"), nil
}

// EnsureToken returns the token in dir, creating it (random, mode 0600) when
// there is none. A token file others can read is refused.
func EnsureToken(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	// A directory made before (by hand, or with a looser umask) is closed
	// to others too: it holds the database of people's answers. One that
	// holds more than askctl's own files (a home, /tmp) is not askctl's to
	// change: it is refused.
	if fi, err := os.Stat(dir); err == nil && fi.Mode().Perm()&0o077 != 0 {
		if !onlyOurs(dir) {
			return "", fmt.Errorf("state directory %s is open to others (mode %v) and holds other files: give askctl a directory of its own (%s)", dir, fi.Mode().Perm(), EnvStateDir)
		}
		if err := os.Chmod(dir, fi.Mode().Perm()&0o700); err != nil {
			return "", fmt.Errorf("state directory %s is open to others (mode %v) and cannot be closed: %w", dir, fi.Mode().Perm(), err)
		}
	}
	path := filepath.Join(dir, "token")
	if tok, err := ReadToken(dir); err == nil {
		return tok, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	tok := hex.EncodeToString(b[:])
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if _, err := f.WriteString(tok + "\n"); err != nil {
		return "", err
	}
	return tok, nil
}

// onlyOurs reports whether dir holds nothing but a state directory's own
// files.
func onlyOurs(dir string) bool {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range ents {
		name := e.Name()
		switch {
		case name == "token", name == "serve.json", name == "serve.json.tmp", name == "scenarios", strings.HasPrefix(name, "bridge.db"):
		default:
			return false
		}
	}
	return true
}

// ReadToken reads the token file in dir.
func ReadToken(dir string) (string, error) {
	path := filepath.Join(dir, "token")
	fi, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("%s is readable by others (mode %v): chmod 600 it", path, fi.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("%s is empty", path)
	}
	return tok, nil
}

// Endpoint says where a running bridge listens.
type Endpoint struct {
	URL string `json:"url"`
	PID int    `json:"pid"`
}

// WriteEndpoint records where the bridge listens.
func WriteEndpoint(dir string, e Endpoint) error {
	b, _ := json.Marshal(e)
	tmp := filepath.Join(dir, "serve.json.tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, "serve.json"))
}

// ReadEndpoint reads where the bridge of dir listens.
func ReadEndpoint(dir string) (Endpoint, error) {
	var e Endpoint
	b, err := os.ReadFile(filepath.Join(dir, "serve.json"))
	if err != nil {
		return e, err
	}
	if err := json.Unmarshal(b, &e); err != nil {
		return e, fmt.Errorf("%s: %w", filepath.Join(dir, "serve.json"), err)
	}
	return e, nil
}

// RemoveEndpoint removes the endpoint file if it still names pid.
func RemoveEndpoint(dir string, pid int) {
	if e, err := ReadEndpoint(dir); err == nil && e.PID == pid {
		os.Remove(filepath.Join(dir, "serve.json"))
	}
}
