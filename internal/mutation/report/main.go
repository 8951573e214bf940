// Command report scores a `make mutate` run from its reports: for each file,
// the mutants the conformance cases killed, those only the explorer killed,
// and those that lived, so one run with the explorer gives the score with
// it and without it. It joins gremlins' JSON (every mutant, with its status)
// with the oracle's ledger (what killed each mutant it judged), and lists
// the survivors.
//
//	go run ./internal/mutation/report [-prefix explore-] [-survivors] .mutate
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

type gremlinsReport struct {
	Files []struct {
		Name      string `json:"file_name"`
		Mutations []struct {
			Type   string `json:"type"`
			Status string `json:"status"`
			Line   int    `json:"line"`
			Column int    `json:"column"`
		} `json:"mutations"`
	} `json:"files"`
}

// mutant is one of gremlins' mutants, with the ledger's verdict if the
// oracle judged it.
type mutant struct {
	file, typ, status string
	line, col         int
	change, verdict   string // from the ledger: "a"→"b"; cases, explore, error, lived, explore-error
	detail            string
	// started: the ledger says the oracle's test binary built for it (a
	// ledger from before that line has none: then unknown).
	started bool
	// ledgerStarts: the group's ledger has started lines at all.
	ledgerStarts bool
}

// entry is one line of a ledger.
type entry struct {
	file            string
	line, col       int
	before, after   string
	change, verdict string
	detail          string
	used            bool
}

func main() {
	prefix := flag.String("prefix", "", "the reports' name prefix (explore- for a run with ASKCTL_MUTATE_EXPLORE)")
	survivors := flag.Bool("survivors", false, "list every mutant that lived")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: report [-prefix explore-] [-survivors] DIR\n\nScores the make mutate run whose reports are in DIR (.mutate).\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	ms, unmatched, err := load(flag.Arg(0), *prefix)
	if err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(1)
	}
	write(os.Stdout, ms, unmatched, *survivors)
}

func load(dir, prefix string) ([]*mutant, []*entry, error) {
	reports, err := filepath.Glob(filepath.Join(dir, prefix+"*.json"))
	if err != nil {
		return nil, nil, err
	}
	var ms []*mutant
	var unmatched []*entry
	n := 0
	for _, r := range reports {
		base := strings.TrimSuffix(filepath.Base(r), ".json")
		group := strings.TrimPrefix(base, prefix)
		if prefix == "" && strings.HasPrefix(base, "explore-") || strings.Contains(group, "-") {
			continue
		}
		n++
		var rep gremlinsReport
		b, err := os.ReadFile(r)
		if err != nil {
			return nil, nil, err
		}
		if err := json.Unmarshal(b, &rep); err != nil {
			return nil, nil, fmt.Errorf("%s: %v", r, err)
		}
		ledger := filepath.Join(dir, base+"-ledger.tsv")
		es, err := readLedger(ledger)
		if err != nil {
			return nil, nil, err
		}
		byPos, starts := map[string][]*entry{}, map[string][]*entry{}
		for _, e := range es {
			k := fmt.Sprintf("%s:%d:%d", e.file, e.line, e.col)
			if e.verdict == "started" {
				starts[k] = append(starts[k], e)
				e.used = true
				continue
			}
			byPos[k] = append(byPos[k], e)
		}
		for _, f := range rep.Files {
			for _, m := range f.Mutations {
				mu := &mutant{file: filepath.Base(f.Name), typ: m.Type, status: m.Status, line: m.Line, col: m.Column}
				k := fmt.Sprintf("%s:%d:%d", mu.file, mu.line, mu.col)
				match(mu, byPos[k])
				mu.started, mu.ledgerStarts = len(starts[k]) > 0, len(starts) > 0
				ms = append(ms, mu)
			}
		}
		for _, e := range es {
			if !e.used {
				unmatched = append(unmatched, e)
			}
		}
	}
	if n == 0 {
		return nil, nil, fmt.Errorf("no reports %s*.json in %s (run scripts/mutate.sh first)", prefix, dir)
	}
	sort.Slice(ms, func(i, j int) bool {
		a, b := ms[i], ms[j]
		if a.file != b.file {
			return a.file < b.file
		}
		if a.line != b.line {
			return a.line < b.line
		}
		return a.col < b.col
	})
	return ms, unmatched, nil
}

// match gives m the verdict of the ledger entry at its place whose change
// is m's mutator (two mutators may change one token).
func match(m *mutant, es []*entry) {
	var pick *entry
	for _, e := range es {
		if e.used {
			continue
		}
		if t := mutatorOf(e.before, e.after); t == m.typ || (t == "" && pick == nil) {
			pick = e
			if t == m.typ {
				break
			}
		}
	}
	if pick == nil {
		return
	}
	pick.used = true
	m.change, m.verdict, m.detail = pick.change, pick.verdict, pick.detail
}

// mutatorOf names the mutator that turns token a into b, where a token can
// be changed by more than one; "" where it cannot.
func mutatorOf(a, b string) string {
	negation := map[string]string{"<": ">=", "<=": ">", ">": "<=", ">=": "<", "==": "!=", "!=": "=="}
	boundary := map[string]string{"<": "<=", "<=": "<", ">": ">=", ">=": ">"}
	switch {
	case negation[a] == b:
		return "CONDITIONALS_NEGATION"
	case boundary[a] == b:
		return "CONDITIONALS_BOUNDARY"
	}
	return ""
}

func readLedger(path string) ([]*entry, error) {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil, nil // a run from before the ledger: no verdicts
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var es []*entry
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		cols := strings.SplitN(sc.Text(), "\t", 4)
		if len(cols) < 3 {
			return nil, fmt.Errorf("%s:%d: want place, change, verdict (tab-separated)", path, n)
		}
		place := strings.Split(cols[0], ":")
		if len(place) != 3 {
			return nil, fmt.Errorf("%s:%d: place %q: want file:line:col", path, n, cols[0])
		}
		line, err1 := strconv.Atoi(place[1])
		col, err2 := strconv.Atoi(place[2])
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%s:%d: place %q: want file:line:col", path, n, cols[0])
		}
		before, after, ok := strings.Cut(cols[1], "→")
		if !ok {
			return nil, fmt.Errorf("%s:%d: change %q: want \"a\"→\"b\"", path, n, cols[1])
		}
		before, _ = strconv.Unquote(before)
		after, _ = strconv.Unquote(after)
		e := &entry{file: place[0], line: line, col: col, before: before, after: after, change: cols[1], verdict: cols[2]}
		if len(cols) == 4 {
			e.detail = cols[3]
		}
		es = append(es, e)
	}
	return es, sc.Err()
}

type counts struct {
	total, notCovered, timedOut, other, cases, explore, lived int
	// unbuilt: killed with no verdict, as the test binary did not build
	// (a string's + made -); unknown: killed with no verdict after it
	// built (a timeout or a crash of the test), or with no ledger at all.
	unbuilt, unknown int
}

func (c *counts) add(m *mutant) {
	c.total++
	switch {
	case m.status == "NOT COVERED":
		c.notCovered++
	case m.status == "TIMED OUT":
		c.timedOut++
	case m.status == "LIVED":
		c.lived++
	case m.status != "KILLED":
		c.other++
	case m.verdict == "explore":
		c.explore++
	case m.verdict == "cases" || m.verdict == "error":
		c.cases++
	case m.verdict == "" && !m.started && m.ledgerStarts:
		c.unbuilt++
	default:
		c.unknown++ // killed, with no verdict (or an explorer error)
	}
}

func pct(a, b int) string {
	if b == 0 {
		return "–"
	}
	return fmt.Sprintf("%d %%", (200*a+b)/(2*b))
}

func write(w io.Writer, ms []*mutant, unmatched []*entry, survivors bool) {
	files := map[string]*counts{}
	var names []string
	var all counts
	for _, m := range ms {
		c := files[m.file]
		if c == nil {
			c = &counts{}
			files[m.file] = c
			names = append(names, m.file)
		}
		c.add(m)
		all.add(m)
	}
	fmt.Fprintln(w, "| file | mutants | not covered | did not build | timed out | killed by the cases | killed by the explorer only | killed, no verdict | lived | killed without the explorer | with it |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|")
	row := func(name string, c *counts) {
		// Of the mutants the oracle ran: the timed out and those killed
		// with no verdict count as killed, by which half unknown.
		judged := c.cases + c.explore + c.unknown + c.timedOut + c.lived
		fmt.Fprintf(w, "| %s | %d | %d | %d | %d | %d | %d | %d | %d | %s | %s |\n", name, c.total, c.notCovered, c.unbuilt, c.timedOut, c.cases, c.explore, c.unknown, c.lived,
			pct(c.cases, judged), pct(judged-c.lived, judged))
	}
	for _, n := range names {
		row("`"+n+"`", files[n])
	}
	row("**all**", &all)
	if survivors {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "Survivors:")
		for _, m := range ms {
			if m.status == "LIVED" {
				fmt.Fprintf(w, "- `%s:%d:%d` %s %s\n", m.file, m.line, m.col, m.typ, m.change)
			}
		}
		fmt.Fprintln(w)
		fmt.Fprintln(w, "Killed with no verdict (did not build, or the test ended some other way):")
		for _, m := range ms {
			if m.status == "KILLED" && (m.verdict == "" || m.verdict == "explore-error") {
				fmt.Fprintf(w, "- `%s:%d:%d` %s built=%v\n", m.file, m.line, m.col, m.typ, m.started)
			}
		}
		fmt.Fprintln(w)
		fmt.Fprintln(w, "Killed by the explorer only:")
		for _, m := range ms {
			if m.status == "KILLED" && m.verdict == "explore" {
				fmt.Fprintf(w, "- `%s:%d:%d` %s %s: %s\n", m.file, m.line, m.col, m.typ, m.change, m.detail)
			}
		}
	}
	if len(unmatched) > 0 {
		fmt.Fprintf(w, "\n%d ledger line(s) matched no mutant of the reports:\n", len(unmatched))
		for _, e := range unmatched {
			fmt.Fprintf(w, "- %s:%d:%d %s %s\n", e.file, e.line, e.col, e.change, e.verdict)
		}
	}
}
