// Package learn derives a CLI release's data (claudecli.Release) from
// sessions played by that release and by fakeclaude playing the base with
// no data: the keys the release writes that the base does not, and the
// reverse, per kind of message. What keys cannot say (a message more or
// less, a different text, a key on some messages of a kind and not others,
// a value that changes in no way it can name) is reported, never written.
package learn

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/askctl/askctl/claudecli"
	"github.com/askctl/askctl/internal/clip"
	"github.com/askctl/askctl/internal/replay"
	"github.com/askctl/askctl/internal/shape"
	"github.com/askctl/askctl/transcript"
	"github.com/tidwall/gjson"
)

// Session is one scenario played by both: the real release's messages and
// session file rows, and fakeclaude's.
type Session struct {
	Scenario   string
	Real, Fake []transcript.Record // the agent's messages, as compared (replay.Kept)
	RealRows   map[string][]byte   // session files by name
	FakeRows   map[string][]byte
}

// Result is what was learned.
type Result struct {
	Release *claudecli.Release
	// Unexpressed lists the differences data cannot say, each named.
	Unexpressed []string
}

// msg is one message or row with its kind and shape.
type msg struct {
	kind  string
	shape shape.Msg
	raw   []byte
	where string // scenario and position, for reports
}

// pair is a real message and fakeclaude's of the same kind, in the same
// place.
type pair struct{ real, fake msg }

// Derive learns release version from sessions fakeclaude played as the
// base. now dates the generated values (a time in milliseconds is told
// from a constant by being near it).
func Derive(version string, sessions []Session, now time.Time) Result {
	var pairs []pair
	var res Result
	for _, s := range sessions {
		pairs = append(pairs, align(stdout(s.Scenario, s.Real), stdout(s.Scenario, s.Fake))...)
		rc, rb := rows(s.Scenario, s.RealRows)
		fc, fb := rows(s.Scenario, s.FakeRows)
		pairs = append(pairs, align(rc, fc)...)
		pairs = append(pairs, byKind(rb, fb)...)
	}
	rel := &claudecli.Release{Version: version, Messages: map[string]*claudecli.Patch{}}
	kinds := map[string][]pair{}
	for _, p := range pairs {
		kinds[p.real.kind] = append(kinds[p.real.kind], p)
	}
	for _, kind := range sortedKeys(kinds) {
		ps := kinds[kind]
		patch, problems := learnKind(kind, ps, now)
		res.Unexpressed = append(res.Unexpressed, problems...)
		if len(patch.Drop)+len(patch.Add) > 0 {
			rel.Messages[kind] = patch
		}
	}
	if len(rel.Messages) == 0 {
		rel.Messages = nil
	}
	res.Release = rel
	return res
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

func stdout(scenario string, recs []transcript.Record) []msg {
	var out []msg
	for i, r := range recs {
		out = append(out, msg{kind: claudecli.Kind(r.Msg), shape: shape.Of(r.Dir, r.Msg), raw: r.Msg, where: fmt.Sprintf("%s message %d", scenario, i+1)})
	}
	return out
}

// rows splits session files into conversation rows and bookkeeping rows.
func rows(scenario string, files map[string][]byte) (conv, book []msg) {
	for _, name := range sortedKeys(files) {
		sc := bufio.NewScanner(bytes.NewReader(files[name]))
		sc.Buffer(make([]byte, 64<<10), 64<<20)
		n := 0
		for sc.Scan() {
			n++
			raw := append([]byte(nil), sc.Bytes()...)
			typ := gjson.GetBytes(raw, "type").String()
			if replay.LeftOutRow(typ) { // rows fakeclaude does not write
				continue
			}
			m := msg{kind: claudecli.SessionKind(raw), shape: shape.Of("session", raw), raw: raw, where: fmt.Sprintf("%s session row %d", scenario, n)}
			if typ == "user" || typ == "assistant" {
				conv = append(conv, m)
			} else {
				book = append(book, m)
			}
		}
	}
	return conv, book
}

// align pairs messages in order, by label and kind.
func align(real, fake []msg) []pair {
	rs, fs := make([]shape.Msg, len(real)), make([]shape.Msg, len(fake))
	for i := range real {
		rs[i] = real[i].shape
		rs[i].Type += "\x00" + real[i].kind // pair only the same kind
	}
	for i := range fake {
		fs[i] = fake[i].shape
		fs[i].Type += "\x00" + fake[i].kind
	}
	var out []pair
	for _, p := range shape.Align(rs, fs, func(int, int) int { return 0 }) {
		if p.W >= 0 && p.G >= 0 {
			out = append(out, pair{real[p.W], fake[p.G]})
		}
	}
	return out
}

// byKind pairs bookkeeping rows of each kind in order (they are written
// when the CLI gets to them, not in a fixed place).
func byKind(real, fake []msg) []pair {
	fk := map[string][]msg{}
	for _, m := range fake {
		fk[m.kind] = append(fk[m.kind], m)
	}
	var out []pair
	seen := map[string]int{}
	for _, m := range real {
		i := seen[m.kind]
		if i < len(fk[m.kind]) {
			out = append(out, pair{m, fk[m.kind][i]})
			seen[m.kind]++
		}
	}
	return out
}

// learnKind learns one kind's patch from its pairs.
func learnKind(kind string, ps []pair, now time.Time) (*claudecli.Patch, []string) {
	type count struct{ real, fake, realOnly, fakeOnly, lacking int }
	counts := map[string]*count{}
	get := func(k string) *count {
		if counts[k] == nil {
			counts[k] = &count{}
		}
		return counts[k]
	}
	for _, p := range ps {
		rk, fk := set(p.real.shape.Keys), set(p.fake.shape.Keys)
		for k := range rk {
			get(k).real++
			if !fk[k] {
				get(k).realOnly++
			}
		}
		for k := range fk {
			get(k).fake++
			if !rk[k] {
				get(k).fakeOnly++
			}
		}
	}
	// Where the base writes k's parent, the release must write k every
	// time for k to be data: count the messages where it does not.
	for _, p := range ps {
		fk, rk := set(p.fake.shape.Keys), set(p.real.shape.Keys)
		for k, c := range counts {
			if parentIn(k, fk) && !rk[k] {
				c.lacking++
			}
		}
	}
	patch := &claudecli.Patch{}
	var problems []string
	var added, dropped []string
	under := func(k string, roots []string) bool {
		for _, r := range roots {
			if strings.HasPrefix(k, r+".") || strings.HasPrefix(k, r+"[]") {
				return true
			}
		}
		return false
	}
	for _, k := range sortedKeys(counts) {
		c := counts[k]
		if c.realOnly == 0 && c.fakeOnly == 0 || under(k, added) || under(k, dropped) {
			continue
		}
		switch {
		case c.fakeOnly > 0 && c.real == 0:
			patch.Drop = append(patch.Drop, k)
			dropped = append(dropped, k)
		case c.realOnly > 0 && c.fake == 0 && parentOf(k) != "" && counts[parentOf(k)] != nil && counts[parentOf(k)].realOnly > 0:
			// Its parent is new too: learned with it.
		case c.realOnly > 0 && c.fake == 0 && c.lacking == 0:
			a, problem := addition(kind, k, ps, now)
			if problem != "" {
				problems = append(problems, problem)
				continue
			}
			patch.Add = append(patch.Add, a)
			added = append(added, k)
		default:
			problems = append(problems, fmt.Sprintf("%s: key %s is on %d of %d messages of the release and %d of fakeclaude's: which ones takes more than the kind of message to say (%s)",
				kind, k, c.real, len(ps), c.fake, examples(k, ps)))
		}
	}
	return patch, problems
}

// examples names a message that has k and one that lacks it.
func examples(k string, ps []pair) string {
	var has, lacks string
	for _, p := range ps {
		if set(p.real.shape.Keys)[k] {
			if has == "" {
				has = "the release writes it in " + p.real.where
			}
		} else if lacks == "" {
			lacks = "not in " + p.real.where
		}
	}
	return strings.Trim(has+"; "+lacks, "; ")
}

func set(ks []string) map[string]bool {
	m := make(map[string]bool, len(ks))
	for _, k := range ks {
		m[k] = true
	}
	return m
}

// parentIn reports whether keys (a message's) hold the object key path k
// would be a key of: its parent object, or for a key of an array's
// elements ("a[].k") at least one element.
func parentIn(k string, keys map[string]bool) bool {
	i := strings.LastIndex(k, ".")
	if i < 0 {
		return true
	}
	p := k[:i]
	if !strings.HasSuffix(p, "[]") {
		return keys[p]
	}
	for key := range keys {
		if strings.HasPrefix(key, p+".") {
			return true
		}
	}
	return false
}

// parentOf is the path of the object k is a key of, "" at the top.
func parentOf(k string) string {
	i := strings.LastIndex(k, ".")
	if i < 0 {
		return ""
	}
	return strings.TrimSuffix(k[:i], "[]")
}

var (
	uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	timeRE = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$`)
)

// addition is the Addition of key k to kind, from the values the release
// wrote, or why there is none.
func addition(kind, k string, ps []pair, now time.Time) (claudecli.Addition, string) {
	gpath := gjsonPath(k)
	var vals []gjson.Result
	a := claudecli.Addition{Key: k}
	for _, p := range ps {
		vals = append(vals, values(gjson.ParseBytes(p.real.raw), gpath)...)
		if a.After == "" && len(vals) > 0 {
			a.After = before(gjson.ParseBytes(p.real.raw), k)
		}
	}
	if len(vals) == 0 {
		return a, fmt.Sprintf("%s: key %s: no value seen", kind, k)
	}
	distinct := map[string]bool{}
	for _, v := range vals {
		distinct[canonical(v.Raw)] = true
	}
	all := func(ok func(gjson.Result) bool) bool {
		for _, v := range vals {
			if !ok(v) {
				return false
			}
		}
		return true
	}
	nowMS := float64(now.UnixMilli())
	isUUID := func(v gjson.Result) bool { return v.Type == gjson.String && uuidRE.MatchString(v.String()) }
	isTime := func(v gjson.Result) bool { return v.Type == gjson.String && timeRE.MatchString(v.String()) }
	isNowMS := func(v gjson.Result) bool {
		return v.Type == gjson.Number && v.Float() > nowMS-7*24*3600e3 && v.Float() < nowMS+7*24*3600e3
	}
	switch {
	case all(isUUID):
		a.Gen = claudecli.GenUUID
	case all(isTime):
		a.Gen = claudecli.GenTimestamp
	case all(isNowMS):
		a.Gen = claudecli.GenNowMillis
	case len(distinct) == 1:
		a.Value = json.RawMessage(canonical(vals[0].Raw))
	default:
		var ex []string
		for v := range distinct {
			ex = append(ex, clip.String(v, 60))
		}
		sort.Strings(ex)
		if len(ex) > 3 {
			ex = ex[:3]
		}
		return a, fmt.Sprintf("%s: key %s takes %d different values (%s) that are neither the same each time nor a uuid, a time in milliseconds or a timestamp", kind, k, len(distinct), strings.Join(ex, ", "))
	}
	return a, ""
}

// gjsonPath turns a key path "a[].b" into its parts.
func gjsonPath(k string) []string { return strings.Split(k, ".") }

// values collects the values at path in r, stepping into arrays at "[]".
func values(r gjson.Result, path []string) []gjson.Result {
	key, each := strings.TrimSuffix(path[0], "[]"), strings.HasSuffix(path[0], "[]")
	v := r.Get(gjson.Escape(key))
	if !v.Exists() {
		return nil
	}
	if len(path) == 1 {
		return []gjson.Result{v}
	}
	if !each {
		return values(v, path[1:])
	}
	var out []gjson.Result
	for _, e := range v.Array() {
		out = append(out, values(e, path[1:])...)
	}
	return out
}

// before is the key that comes before k's last element in its object, in
// the release's own order ("" when it is first).
func before(r gjson.Result, k string) string {
	path := gjsonPath(k)
	obj := r
	for _, el := range path[:len(path)-1] {
		key, each := strings.TrimSuffix(el, "[]"), strings.HasSuffix(el, "[]")
		obj = obj.Get(gjson.Escape(key))
		if each {
			obj = obj.Get("0")
		}
	}
	prev := ""
	last := path[len(path)-1]
	found := ""
	obj.ForEach(func(key, _ gjson.Result) bool {
		if key.String() == last {
			found = prev
			return false
		}
		prev = key.String()
		return true
	})
	return found
}

func canonical(raw string) string {
	var v any
	if json.Unmarshal([]byte(raw), &v) != nil {
		return raw
	}
	b, _ := json.Marshal(v)
	return string(b)
}
