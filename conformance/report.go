package conformance

import (
	"bufio"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/askctl/askctl/harness"
	"github.com/askctl/askctl/internal/clip"
)

// WriteTable prints the report as a table by requirement, each case's
// rows counted in one cell, the failures' details after it, and a summary
// line.
func WriteTable(w io.Writer, r *Report) { WriteTableWith(w, r, TableOptions{}) }

// TableOptions tune WriteTableWith.
type TableOptions struct {
	// Rows lists every generated row under its case, with its verdict.
	Rows bool
}

// WriteTableWith is WriteTable, with every row listed when o.Rows.
func WriteTableWith(w io.Writer, r *Report, o TableOptions) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	ran := slices.ContainsFunc(r.Results, func(res Result) bool { return res.Status != NotRun })
	if ran {
		fmt.Fprintln(tw, "REQUIREMENT\tLEVEL\tRESULT\tROWS\tTIME\tLATENCY p50/p99")
	} else if len(r.Results) > 0 {
		// A table of NOT-RUN says nothing: why comes next, first.
		fmt.Fprintf(w, "no case ran:")
	}
	for _, res := range r.Results {
		if !ran {
			break
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", res.Case, res.Requirement.Level, res.Status, rowsCell(res.Rows), roundDur(res.Duration), latencyCell(res))
		if o.Rows {
			for _, row := range res.Rows {
				// In the last column, so that the rows' names do not widen
				// the table.
				line := "· " + row.Name
				if row.Detail != "" {
					line += ": " + firstLine(row.Detail, 100)
				}
				fmt.Fprintf(tw, "\t\t%s\t\t\t%s\n", row.Status, line)
			}
		}
	}
	tw.Flush()
	for _, res := range r.Results {
		switch res.Status {
		case Fail:
			fmt.Fprintf(w, "\n%s FAILED: %s\n  requirement: %s\n  observed: %s\n", res.Case, res.Requirement.Level, res.Requirement.Text, res.Detail)
			for _, row := range res.Rows {
				if (row.Status == Fail || row.Status == Blocked) && !strings.HasPrefix(res.Detail, fmt.Sprintf("row %q:", row.Name)) {
					fmt.Fprintf(w, "  row %q: %s: %s\n", row.Name, row.Status, firstLine(row.Detail, 300))
				}
			}
		case XFail:
			fmt.Fprintf(w, "\n%s failed, as expected (%s): %s\n", res.Case, res.Expected, res.Detail)
		case Blocked:
			fmt.Fprintf(w, "\n%s %s\n", res.Case, res.Detail)
		}
	}
	// Why cases did not run, once each reason: the causes first, then the
	// cases that did not run because of another's ("could not be set up in
	// case X"), a long list of them cut short.
	var notRun []string
	for _, res := range r.Results {
		if res.Status == NotRun && !slices.Contains(notRun, res.Detail) {
			notRun = append(notRun, res.Detail)
		}
	}
	sort.SliceStable(notRun, func(i, j int) bool {
		return !strings.HasPrefix(notRun[i], setUpInCase) && strings.HasPrefix(notRun[j], setUpInCase)
	})
	for _, why := range notRun {
		var cases []string
		for _, o := range r.Results {
			if o.Status == NotRun && o.Detail == why {
				cases = append(cases, o.Case)
			}
		}
		list := strings.Join(cases, ", ")
		if len(cases) > 4 {
			list = fmt.Sprintf("%d cases: %s, … %s", len(cases), strings.Join(cases[:2], ", "), cases[len(cases)-1])
		}
		if strings.HasPrefix(why, setUpInCase) {
			why += " (above)"
		}
		fmt.Fprintf(w, "\nNOT RUN (%s): %s\n", list, why)
	}
	// A pass that checked less than it says: a MUST case whose rows were
	// mostly skipped (an operation the surface lacks) passed on what was
	// left. Say what was not checked, and why, once each reason.
	for _, res := range r.Results {
		if res.Status != Pass || res.Requirement.Level != "MUST" || len(res.Rows) == 0 {
			continue
		}
		var skipped []RowResult
		for _, row := range res.Rows {
			if row.Status == Skip {
				skipped = append(skipped, row)
			}
		}
		if 2*len(skipped) <= len(res.Rows) {
			continue
		}
		var whys []string
		for _, row := range skipped {
			if why := firstLine(row.Detail, 120); why != "" && !slices.Contains(whys, why) {
				whys = append(whys, why)
			}
		}
		fmt.Fprintf(w, "\n%s passed on %d of its %d rows; %d were skipped, unchecked: %s\n", res.Case, len(res.Rows)-len(skipped), len(res.Rows), len(skipped), strings.Join(whys, "; "))
	}
	if len(r.Stale) > 0 {
		fmt.Fprintf(w, "\nstale expected failures (these pass now; take them off the list): %s\n", strings.Join(r.Stale, ", "))
	}
	n := map[string]int{}
	for _, res := range r.Results {
		n[res.Status]++
	}
	all := Latencies(r)
	fmt.Fprintf(w, "\n%s: %d passed, %d failed, %d skipped", plural(len(r.Results), "case"), n[Pass], n[Fail], n[Skip])
	if n[Blocked] > 0 {
		fmt.Fprintf(w, ", %d blocked by another requirement's failure", n[Blocked])
	}
	if n[NotRun] > 0 {
		fmt.Fprintf(w, ", %d not run", n[NotRun])
	}
	if n[Interrupted] > 0 {
		fmt.Fprintf(w, ", %d interrupted", n[Interrupted])
	}
	if n[XFail] > 0 {
		fmt.Fprintf(w, ", %d failed as expected (counted as passed)", n[XFail])
	}
	fmt.Fprintf(w, " in %s (%s", roundDur(r.Duration), r.Bridge)
	if r.CLI != "" {
		fmt.Fprintf(w, "; agents: claude %s", r.CLI)
	}
	fmt.Fprintf(w, ")\n")
	if len(all.Deliver) > 0 {
		fmt.Fprintf(w, "latency over %s: to the surface p50 %s p99 %s", plural(len(all.Deliver), "question"),
			roundDur(harness.Percentile(all.Deliver, 50)), roundDur(harness.Percentile(all.Deliver, 99)))
		if len(all.Answer) > 0 {
			fmt.Fprintf(w, "; over %s: to the agent p50 %s p99 %s", plural(len(all.Answer), "answer"),
				roundDur(harness.Percentile(all.Answer, 50)), roundDur(harness.Percentile(all.Answer, 99)))
		}
		fmt.Fprintln(w)
	}
}

// LatencySet is every measured latency of a run.
type LatencySet struct{ Deliver, Answer []time.Duration }

// Latencies gathers the latencies of every case.
func Latencies(r *Report) LatencySet {
	var all []harness.Latency
	for _, res := range r.Results {
		all = append(all, res.Latencies...)
	}
	return latencySet(all)
}

// latencySet splits measured latencies by kind, leaving out the unmeasured.
func latencySet(ls []harness.Latency) LatencySet {
	var s LatencySet
	for _, l := range ls {
		if l.Deliver > 0 {
			s.Deliver = append(s.Deliver, l.Deliver)
		}
		if l.Answer > 0 {
			s.Answer = append(s.Answer, l.Answer)
		}
	}
	return s
}

func latencyCell(res Result) string {
	s := latencySet(res.Latencies)
	var parts []string
	if len(s.Deliver) > 0 {
		parts = append(parts, "deliver "+roundDur(harness.Percentile(s.Deliver, 50))+"/"+roundDur(harness.Percentile(s.Deliver, 99)))
	}
	if len(s.Answer) > 0 {
		parts = append(parts, "answer "+roundDur(harness.Percentile(s.Answer, 50))+"/"+roundDur(harness.Percentile(s.Answer, 99)))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

func roundDur(d time.Duration) string {
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	}
	return d.Round(time.Microsecond).String()
}

// WriteJUnit writes the report as JUnit XML, one testcase per case.
func WriteJUnit(w io.Writer, r *Report) error {
	type failure struct {
		Message string `xml:"message,attr"`
		Text    string `xml:",chardata"`
	}
	type skipped struct {
		Message string `xml:"message,attr"`
	}
	type testcase struct {
		Name      string   `xml:"name,attr"`
		Classname string   `xml:"classname,attr"`
		Time      string   `xml:"time,attr"`
		Failure   *failure `xml:"failure,omitempty"`
		Error     *failure `xml:"error,omitempty"`
		Skipped   *skipped `xml:"skipped,omitempty"`
	}
	type suite struct {
		XMLName  xml.Name   `xml:"testsuite"`
		Name     string     `xml:"name,attr"`
		Tests    int        `xml:"tests,attr"`
		Failures int        `xml:"failures,attr"`
		Errors   int        `xml:"errors,attr"`
		Skipped  int        `xml:"skipped,attr"`
		Time     string     `xml:"time,attr"`
		Cases    []testcase `xml:"testcase"`
	}
	s := suite{Name: "askctl conformance: " + r.Bridge, Tests: len(r.Results), Time: secs(r.Duration)}
	for _, res := range r.Results {
		tc := testcase{Name: res.Case, Classname: "conformance." + res.Requirement.Level, Time: secs(res.Duration)}
		switch res.Status {
		case Fail, Blocked:
			s.Failures++
			tc.Failure = &failure{Message: res.Detail, Text: res.Requirement.Text + "\n\n" + res.Log}
		case NotRun, Interrupted:
			// Not a verdict, and not a skip a CI may pass over: the run
			// did not check this case (the bridge could not be set up, or
			// the run was cut short).
			s.Errors++
			tc.Error = &failure{Message: res.Status + ": " + res.Detail, Text: res.Log}
		case Skip:
			s.Skipped++
			tc.Skipped = &skipped{Message: res.Status + ": " + res.Detail}
		}
		s.Cases = append(s.Cases, tc)
		// Each generated row is a test case of its own, "CASE/row": a CI
		// lists which rows failed, and which ran.
		for _, row := range res.Rows {
			rc := testcase{Name: res.Case + "/" + row.Name, Classname: "conformance." + res.Requirement.Level + "." + res.Case, Time: "0"}
			switch row.Status {
			case Fail, Blocked:
				s.Failures++
				rc.Failure = &failure{Message: row.Status + ": " + firstLine(row.Detail, 300), Text: row.Detail}
			case Skip:
				s.Skipped++
				rc.Skipped = &skipped{Message: row.Detail}
			}
			s.Tests++
			s.Cases = append(s.Cases, rc)
		}
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(s); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func secs(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }

// ReadExpectedFailures reads a file of cases known to fail, one a line:
//
//	# comments and blank lines are ignored
//	UI-TAKEOVER   our surface has one connection per user; see #12
//
// Each case must exist; the reason is required.
func ReadExpectedFailures(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	known := map[string]bool{}
	for _, c := range CaseNames() {
		known[c] = true
	}
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, reason, _ := strings.Cut(line, " ")
		name, reason = strings.TrimSpace(name), strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(reason), "#"))
		if !known[name] {
			names := CaseNames()
			sort.Strings(names)
			return nil, fmt.Errorf("%s:%d: %q is not a case (cases: %s)", path, n, name, strings.Join(names, ", "))
		}
		if reason == "" {
			return nil, fmt.Errorf("%s:%d: %s: say why it is expected to fail", path, n, name)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("%s:%d: %s is listed twice", path, n, name)
		}
		out[name] = reason
	}
	return out, sc.Err()
}

// rowsCell counts a case's rows by verdict: "6/7 passed, 1 FAIL".
func rowsCell(rows []RowResult) string {
	if len(rows) == 0 {
		return "-"
	}
	n := map[string]int{}
	for _, r := range rows {
		n[r.Status]++
	}
	out := fmt.Sprintf("%d/%d passed", n[Pass], len(rows))
	for _, st := range []string{Fail, Blocked, Skip} {
		if n[st] > 0 {
			out += fmt.Sprintf(", %d %s", n[st], st)
		}
	}
	return out
}

// firstLine is s's first line, cut to about n bytes; a first line that
// only introduces the next ("the agent … reported:") takes it along.
func firstLine(s string, n int) string {
	first, rest, _ := strings.Cut(s, "\n")
	if next, _, _ := strings.Cut(rest, "\n"); strings.HasSuffix(first, ":") && strings.TrimSpace(next) != "" {
		first += " " + strings.TrimSpace(next)
	}
	return clip.String(first, n)
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
