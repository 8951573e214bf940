//go:build unix

package bridge

import (
	"errors"
	"fmt"

	"github.com/askctl/askctl/bridgeapi"
	"github.com/askctl/askctl/internal/flock"
	"golang.org/x/sys/unix"
)

// lockDB takes an exclusive lock on path+".lock" for the bridge's life: two
// bridges on one database would each think the other's agents dead.
func lockDB(path string) (func(), error) {
	unlock, err := flock.Try(path + ".lock")
	if errors.Is(err, flock.ErrHeld) {
		return nil, fmt.Errorf("%w: another bridge is using the database %s", bridgeapi.ErrBusy, path)
	}
	return unlock, err
}

// fdLimit is the process's open-file limit (its soft limit).
func fdLimit() int {
	var r unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &r); err != nil || r.Cur > 1<<20 {
		return 1 << 20
	}
	return int(r.Cur)
}
