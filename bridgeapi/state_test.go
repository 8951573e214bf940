package bridgeapi_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/askctl/askctl/bridgeapi"
)

// TestEnsureTokenClosesTheStateDir: a state directory made before with a
// loose mode is closed to others when the token is made or read; the token
// file is the user's only.
func TestEnsureTokenClosesTheStateDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	tok, err := bridgeapi.EnsureToken(dir)
	if err != nil || tok == "" {
		t.Fatalf("EnsureToken: %q, %v", tok, err)
	}
	for path, want := range map[string]os.FileMode{dir: 0o700, filepath.Join(dir, "token"): 0o600} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", path, fi.Mode().Perm(), want)
		}
	}
	if again, err := bridgeapi.EnsureToken(dir); err != nil || again != tok {
		t.Errorf("a second EnsureToken: %q, %v; want the same token", again, err)
	}
}
