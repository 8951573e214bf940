// Package flock takes an exclusive lock on a file that the kernel releases
// with its holder, however the holder ends: the bridge's on its database,
// the real CLI's shim's on a session's HOME.
package flock

import "errors"

// ErrHeld: another open file description holds the lock.
var ErrHeld = errors.New("flock: held by another")

// Try takes the lock on path (created if missing) without waiting; unlock
// releases it. Where another holds it, the error is ErrHeld.
func Try(path string) (unlock func(), err error) { return try(path) }
