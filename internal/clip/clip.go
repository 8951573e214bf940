// Package clip bounds text that quotes input before it goes to a person:
// stderr lines, error messages, reports. Input can be anything a peer sends —
// megabytes on one line, control bytes, invalid UTF-8 — and a message about it
// must stay one short, printable line.
package clip

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// String returns s cut to at most n bytes of printable text: cut at a rune
// boundary with "…" appended when it was longer, control characters and
// invalid bytes escaped as Go does in a quoted string (\n, \x00, \u2028).
func String(s string, n int) string { return clip(s, n, false) }

// Quote is String in double quotes, with quotes and backslashes inside
// escaped as well, for a value inside a sentence.
func Quote(s string, n int) string { return `"` + clip(s, n, true) + `"` }

// Printable is s whole, with control characters and invalid bytes escaped as
// String escapes them: agent text bound for a terminal, where a raw escape
// sequence could clear the screen or retitle the window.
func Printable(s string) string { return clip(s, int(^uint(0)>>1), false) }

func clip(s string, n int, quoted bool) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		var piece string
		switch {
		case r == utf8.RuneError && size == 1:
			piece = `\x` + strconv.FormatUint(uint64(s[i]), 16)
			if s[i] < 0x10 {
				piece = `\x0` + strconv.FormatUint(uint64(s[i]), 16)
			}
		case quoted && (r == '"' || r == '\\'):
			piece = `\` + string(r)
		case unicode.IsPrint(r) || r == ' ':
			piece = s[i : i+size]
		default:
			q := strconv.QuoteRune(r) // 'x' with the escape inside
			piece = q[1 : len(q)-1]
		}
		if b.Len()+len(piece) > n {
			b.WriteString("…")
			return b.String()
		}
		b.WriteString(piece)
		i += size
	}
	return b.String()
}
