package mutation

import "testing"

func TestDescribeNamesTheToken(t *testing.T) {
	for _, c := range []struct{ was, now, want string }{
		{"package p\n\nfunc f() {\n\tif x == y {\n\t}\n}\n", "package p\n\nfunc f() {\n\tif x != y {\n\t}\n}\n", `f.go:4:7	"=="→"!="`},
		{"package p\nvar (\n\ta = 1 // one\n\tbb = 2\n)\nvar c = a <= bb\n", "package p\nvar (\n\ta  = 1 // one\n\tbb = 2\n)\nvar c = a < bb\n", `f.go:6:11	"<="→"<"`},
		{"package p\nfunc f() { i++ }\n", "package p\nfunc f() { i-- }\n", `f.go:2:13	"++"→"--"`},
		{"package p\nvar a = -1\n", "package p\nvar a = 1\n", `f.go:2:9	"-"→"1"`},
		{"package p\n// a comment\nvar a = 1\n", "package p\n\n// a comment, reflowed\nvar a =   1\n", ``},
	} {
		if got := describe("f.go", []byte(c.was), []byte(c.now)); got != c.want {
			t.Errorf("describe(%q, %q) = %s, want %s", c.was, c.now, got, c.want)
		}
	}
}
