package harness

import "testing"

// TestFreePortIsNotHandedTwice: a port the kernel gives again before the
// first bridge told to listen on it has closed is not handed to a second
// bridge of the process (two tests' bridges on one port: one's ready
// check passed on the other's server); it is once released.
func TestFreePortIsNotHandedTwice(t *testing.T) {
	kernel := []int{40001, 40001, 40002, 40001}
	next := func() (int, error) { p := kernel[0]; kernel = kernel[1:]; return p, nil }
	a, _ := freePortFrom(next)
	b, _ := freePortFrom(next)
	if a != 40001 || b != 40002 {
		t.Errorf("handed %d, then %d; want 40001, then 40002 (the kernel gave 40001 again)", a, b)
	}
	releasePort(a)
	if c, _ := freePortFrom(next); c != 40001 {
		t.Errorf("after its release, 40001 was not handed again: %d", c)
	}
	releasePort(40001)
	releasePort(b)
}
