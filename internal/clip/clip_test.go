package clip

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestString(t *testing.T) {
	tests := []struct {
		name, in string
		n        int
		want     string
	}{
		{"short", "hello", 10, "hello"},
		{"cut", "hello world", 5, "hello…"},
		{"rune boundary", "héllo", 2, "h…"},
		{"newline escaped", "a\nb", 10, `a\nb`},
		{"nul escaped", "a\x00b", 10, `a\x00b`},
		{"invalid byte", "a\xffb", 10, `a\xffb`},
		{"escape counts toward n", "\n\n\n", 4, `\n\n…`},
		{"line separator", "a\u2028b", 20, `a\u2028b`},
		{"emoji kept", "ok 👍", 10, "ok 👍"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := String(tt.in, tt.n); got != tt.want {
				t.Errorf("String(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
			}
		})
	}
}

func TestStringBounded(t *testing.T) {
	in := strings.Repeat("\xff\x01é", 1<<20) // 4 MiB of the worst input
	got := String(in, 200)
	if len(got) > 200+len("…") || !utf8.ValidString(got) || strings.Contains(got, "\x01") || strings.Contains(got, "\xff") {
		t.Errorf("String of 4 MiB = %d bytes, valid UTF-8 %v: %q", len(got), utf8.ValidString(got), got)
	}
}

func TestQuote(t *testing.T) {
	if got, want := Quote(`say "hi" \ now`+"\n", 40), `"say \"hi\" \\ now\n"`; got != want {
		t.Errorf("Quote = %s, want %s", got, want)
	}
}
