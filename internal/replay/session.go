package replay

import (
	"bufio"
	"bytes"
	"fmt"
	"sort"
	"strings"

	"github.com/askctl/askctl/internal/shape"
	"github.com/tidwall/gjson"
)

// The session file check: the rows each agent wrote to its session file
// (the CLI's projects/<cwd>/<session id>.jsonl), compared the way messages
// are — type and order, key sets, salient values (message content, tool
// results) — with ids, timestamps, paths and costs left out.

// Session file rows that hold the CLI's own system prompt, environment and
// API request bodies: no reader of the conversation uses them, and
// fakeclaude does not write them.
var sessionLeftOut = map[string]bool{
	"attachment": true, "api-request": true, "api-request-blob": true, "api-request-shape": true, "atis-latch": true,
}

// LeftOutRow reports whether a session file row of type typ is one of
// those, which the comparison (and learning) leaves out.
func LeftOutRow(typ string) bool { return sessionLeftOut[typ] }

// LeftOutSession is why those rows are left out of the comparison.
const LeftOutSession = "session file row with the CLI's own prompt, environment or API request (attachment, api-request*, atis-latch)"

// SessionRows splits the rows of session files into the conversation (user
// and assistant entries, in order) and the bookkeeping rows (queue
// operations, tools used, last prompt, cost state), and counts the rows
// left out. Files are taken in name order.
func SessionRows(files map[string][]byte) (conversation, bookkeeping []shape.Msg, leftOut int) {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var rows []gjson.Result
	for _, n := range names {
		sc := bufio.NewScanner(bytes.NewReader(files[n]))
		sc.Buffer(make([]byte, 64<<10), 64<<20)
		for sc.Scan() {
			rows = append(rows, gjson.ParseBytes(append([]byte(nil), sc.Bytes()...)))
		}
	}
	// The chain: every row's parent, and the conversation rows' places, so
	// a parentUuid or leafUuid compares as the conversation row it leads
	// to (through rows left out), not as an id.
	parent := map[string]gjson.Result{}
	place := map[string]int{}
	for _, r := range rows {
		if u := r.Get("uuid").String(); u != "" {
			parent[u] = r.Get("parentUuid")
			if t := r.Get("type").String(); t == "user" || t == "assistant" {
				place[u] = len(place)
			}
		}
	}
	resolve := func(ref gjson.Result) string {
		for i := 0; i < len(rows)+1; i++ {
			if ref.Type == gjson.Null || !ref.Exists() {
				return "none"
			}
			if k, ok := place[ref.String()]; ok {
				return fmt.Sprintf("conversation row %d", k+1)
			}
			next, ok := parent[ref.String()]
			if !ok {
				return "a row not in the file"
			}
			ref = next
		}
		return "a loop"
	}
	for _, r := range rows {
		typ := r.Get("type").String()
		if sessionLeftOut[typ] {
			leftOut++
			continue
		}
		m := shape.Of("session", []byte(r.Raw))
		if m.Values == nil {
			m.Values = map[string]string{}
		}
		switch typ {
		case "user", "assistant":
			m.Values["parent"] = resolve(r.Get("parentUuid"))
			if v := r.Get("toolUseResult"); v.Exists() {
				m.Values["toolUseResult"] = canonicalJSON([]byte(v.Raw))
			}
			if v := r.Get("permissionDecision"); v.Exists() {
				m.Values["permissionDecision"] = canonicalJSON([]byte(v.Raw))
			}
			conversation = append(conversation, m)
		default:
			switch typ {
			case "queue-operation":
				m.Subtype = r.Get("operation").String()
				m.Values["content"] = r.Get("content").String()
			case "last-prompt":
				m.Values["lastPrompt"] = r.Get("lastPrompt").String()
				// Saved on a timer: which row it names varies; that it names
				// one does not.
				m.Values["leaf"] = fmt.Sprint(strings.HasPrefix(resolve(r.Get("leafUuid")), "conversation row"))
			case "tools-used":
				m.Values["tools"] = r.Get("tools").Raw
			}
			if len(m.Values) == 0 {
				m.Values = nil
			}
			bookkeeping = append(bookkeeping, m)
		}
	}
	return conversation, bookkeeping, leftOut
}

// CompareSessions lists where fake's session files differ from real's.
func CompareSessions(real, fake map[string][]byte) []Diff {
	var diffs []Diff
	if len(real) != len(fake) {
		diffs = append(diffs, Diff{Text: fmt.Sprintf("session files: real wrote %d, fake %d", len(real), len(fake))})
	}
	rc, rb, _ := SessionRows(real)
	fc, fb, _ := SessionRows(fake)
	for _, d := range shape.Compare(rc, fc) {
		diffs = append(diffs, Diff{Text: "session file conversation row " + d.String()})
	}
	// Bookkeeping rows are written when the CLI gets to them (the last
	// prompt is saved on a timer): compared as a set, each kind once.
	for _, d := range shape.Compare(distinct(rb), distinct(fb)) {
		diffs = append(diffs, Diff{Text: "session file bookkeeping row " + d.String()})
	}
	return diffs
}

// distinct keeps the first of equal rows, ordered by type.
func distinct(ms []shape.Msg) []shape.Msg {
	seen := map[string]bool{}
	var out []shape.Msg
	for _, m := range ms {
		k := m.Label() + "\x00" + strings.Join(m.Keys, ",") + "\x00" + fmt.Sprint(m.Values)
		if !seen[k] {
			seen[k] = true
			out = append(out, m)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Label() < out[j].Label() })
	return out
}
