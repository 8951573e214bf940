//go:build !mutation

package bridge

// FailWrites makes the bridge's database writes fail as fault says (nil:
// no more failures), as a full disk would.
func (b *Bridge) FailWrites(fault func(op string) error) { b.st.fault.Store(&fault) }
