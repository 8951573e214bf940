//go:build unix

package bridge

import (
	"errors"
	"fmt"
	"os"

	"github.com/askctl/askctl/bridgeapi"
	"golang.org/x/sys/unix"
)

// lockDB takes an exclusive lock on path+".lock" for the bridge's life: two
// bridges on one database would each think the other's agents dead.
func lockDB(path string) (func(), error) {
	f, err := os.OpenFile(path+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: another bridge is using the database %s", bridgeapi.ErrBusy, path)
		}
		return nil, err
	}
	return func() { f.Close() }, nil
}

// fdLimit is the process's open-file limit (its soft limit).
func fdLimit() int {
	var r unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &r); err != nil || r.Cur > 1<<20 {
		return 1 << 20
	}
	return int(r.Cur)
}
