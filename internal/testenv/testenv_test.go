package testenv

import (
	"os"
	"path/filepath"
	"testing"
)

type exitCode int

func (c exitCode) Run() int { return int(c) }

// A TestMain that hands m to testscript.Main, which exits, left its config
// directory behind, one a run: Cleaned removes it, and keeps the code.
func TestCleanedRemovesTheConfigDirectory(t *testing.T) {
	d := filepath.Join(t.TempDir(), isolatedPrefix+"1")
	if err := os.MkdirAll(filepath.Join(d, "projects"), 0o755); err != nil {
		t.Fatal(err)
	}
	old := isolated
	isolated = d
	defer func() { isolated = old }()
	if code := Cleaned(exitCode(3)).Run(); code != 3 {
		t.Errorf("the run's code is %d, want 3", code)
	}
	if _, err := os.Stat(d); !os.IsNotExist(err) {
		t.Errorf("the config directory is still there (%v)", err)
	}
}
