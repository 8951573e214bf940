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

// TestEnsureTokenRefusesAnOpenSharedDir: a loose directory that holds
// other files (a home, /tmp) is not askctl's to close: it is refused, and
// left as it was.
func TestEnsureTokenRefusesAnOpenSharedDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := bridgeapi.EnsureToken(dir); err == nil {
		t.Fatal("a shared open directory was taken as the state directory")
	}
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o755 {
		t.Errorf("its mode changed to %v", fi.Mode().Perm())
	}
}
