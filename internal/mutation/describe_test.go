package mutation

import "testing"

func TestDescribeNamesTheOperator(t *testing.T) {
	for _, c := range []struct{ was, now, want string }{
		{"a\nif x == y {\n", "a\nif x != y {\n", `f.go:2:6	"=="→"!="`},
		{"if x <= y {", "if x < y {", `f.go:1:6	"<="→"<"`},
		{"if x < y {", "if x <= y {", `f.go:1:6	"<"→"<="`},
		{"\ti++\n", "\ti--\n", `f.go:1:3	"++"→"--"`},
	} {
		if got := describe("f.go", []byte(c.was), []byte(c.now)); got != c.want {
			t.Errorf("describe(%q, %q) = %s, want %s", c.was, c.now, got, c.want)
		}
	}
}
