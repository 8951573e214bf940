// Package chromium finds the Chromium that askctl drives: the browser
// surface adapter (package harness) and the page's browser tests.
package chromium

import (
	"errors"
	"os"
	"os/exec"
)

// Env names a browser to use instead of the one on PATH.
const Env = "ASKCTL_CHROMIUM"

// ErrNotFound: no browser was named and none is on PATH.
var ErrNotFound = errors.New("no chromium found: install it (Debian: apt-get install chromium; make test runs scripts/install-chromium.sh), or set " + Env)

// Find returns named if it is set, else $ASKCTL_CHROMIUM, else chromium (or
// chromium-browser, google-chrome) on PATH.
func Find(named string) (string, error) {
	if named != "" {
		return named, nil
	}
	if p := os.Getenv(Env); p != "" {
		return p, nil
	}
	for _, n := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(n); err == nil {
			return p, nil
		}
	}
	return "", ErrNotFound
}
