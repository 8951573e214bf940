//go:build !unix

package bridge

// lockDB is a no-op here: run one bridge per database.
func lockDB(string) (func(), error) { return func() {}, nil }

func fdLimit() int { return 1024 }
