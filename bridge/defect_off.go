//go:build !askctl_broken

package bridge

// defect is always false in askctl as shipped: the branches it guards are
// removed by the compiler. Tests build askctl with -tags askctl_broken to
// get bridges with one known defect each (defect_on.go), and prove the
// conformance suite catches them.
func defect(string) bool { return false }
