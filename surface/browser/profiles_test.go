//go:build unix

package browser

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// A profile directory outlives its process when the process ends before
// its browser's idle stop (a test binary, a command): the next process to
// start a browser removes those of ended processes, an hour after they
// last changed, and no other.
func TestSweepRemovesOnlyProfilesOfEndedProcesses(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	ended := exec.Command("true")
	if err := ended.Run(); err != nil {
		t.Fatal(err)
	}
	mk := func(name string) string {
		d := filepath.Join(os.TempDir(), name)
		if err := os.MkdirAll(filepath.Join(d, "Default"), 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	gone := mk(profilePrefix + strconv.Itoa(ended.Process.Pid) + "-123")
	old := time.Now().Add(-2 * time.Hour)
	keep := []string{
		mk(profilePrefix + strconv.Itoa(ended.Process.Pid) + "-124"), // of an ended pid, but changed a moment ago
		mk(profilePrefix + strconv.Itoa(os.Getpid()) + "-1"),         // this process's
		mk(profilePrefix + strconv.Itoa(os.Getppid()) + "-2"),        // a live one's
		mk(profilePrefix + "987654321"),                              // named before pids were
		mk("askctl-other-" + strconv.Itoa(ended.Process.Pid) + "-3"),
	}
	for _, d := range append([]string{gone}, keep[1:]...) {
		if err := os.Chtimes(d, old, old); err != nil {
			t.Fatal(err)
		}
	}
	sweepProfiles()
	if _, err := os.Stat(gone); !os.IsNotExist(err) {
		t.Errorf("%s, of an ended process, is still there (%v)", filepath.Base(gone), err)
	}
	for _, d := range keep {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s was removed: %v", filepath.Base(d), err)
		}
	}
}

// StopAll stops every browser of the process at once, the idle ones too,
// and forgets them.
func TestStopAllStopsEveryBrowserNow(t *testing.T) {
	stopped := 0
	idle := &sharedBrowser{key: "idle", stop: func() { stopped++ }}
	idle.idle = time.AfterFunc(time.Hour, func() { t.Error("the idle stop ran") })
	used := &sharedBrowser{key: "used", users: 1, stop: func() { stopped++ }}
	browsers.mu.Lock()
	browsers.m["idle"], browsers.m["used"] = idle, used
	browsers.mu.Unlock()
	StopAll()
	if stopped != 2 {
		t.Errorf("%d of 2 browsers stopped", stopped)
	}
	if idle.idle.Stop() {
		t.Error("the idle timer of a stopped browser still runs")
	}
	browsers.mu.Lock()
	defer browsers.mu.Unlock()
	if len(browsers.m) != 0 {
		t.Errorf("%d browsers still known after StopAll", len(browsers.m))
	}
}
