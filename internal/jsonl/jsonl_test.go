package jsonl

import (
	"errors"
	"io"
	"strings"
	"testing"
)

func TestLine(t *testing.T) {
	in := "one\n" + strings.Repeat("x", 200<<10) + "\nthree\nlast"
	r := NewReader(strings.NewReader(in), 100<<10)
	want := []struct {
		line string
		err  error
		n    int
	}{{"one\n", nil, 1}, {"", ErrTooLong, 2}, {"three\n", nil, 3}, {"last", nil, 4}, {"", io.EOF, 4}}
	for _, w := range want {
		got, err := r.Line()
		if string(got) != w.line || !errors.Is(err, w.err) || r.N() != w.n {
			t.Errorf("Line() = %.20q, %v, N %d; want %q, %v, N %d", got, err, r.N(), w.line, w.err, w.n)
		}
	}
}
