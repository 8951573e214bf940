package uuid

import "testing"

func TestNewIsValid(t *testing.T) {
	for range 100 {
		if u := New(); !Valid(u) || u[14] != '4' {
			t.Fatalf("%q: not a version-4 UUID", u)
		}
	}
	for _, bad := range []string{"", "../../x", "0f6c8e2e-1111-4222-8333-44445555666", "0f6c8e2e_1111-4222-8333-444455556666", "0f6c8e2e-1111-4222-8333-44445555666g"} {
		if Valid(bad) {
			t.Errorf("%q is valid", bad)
		}
	}
}
