package conformance_test

import (
	"bytes"
	"encoding/xml"
	"strings"
	"testing"

	"github.com/askctl/askctl/conformance"
)

// TestJUnitStatuses: a FAIL and a BLOCKED are failures, a SKIP is skipped,
// and a case the run did not check (NOT-RUN: the bridge could not be set
// up; INTERRUPTED) is an error, never a skip a CI would pass over.
func TestJUnitStatuses(t *testing.T) {
	rep := &conformance.Report{Bridge: "b", Results: []conformance.Result{
		{Case: "A", Status: conformance.Pass},
		{Case: "B", Status: conformance.Fail, Detail: "wrong"},
		{Case: "C", Status: conformance.Blocked, Detail: "BLOCKED by A"},
		{Case: "D", Status: conformance.Skip, Detail: "no skip button"},
		{Case: "E", Status: conformance.NotRun, Detail: "the bridge did not start"},
		{Case: "F", Status: conformance.Interrupted, Detail: "interrupted"},
	}}
	var b bytes.Buffer
	if err := conformance.WriteJUnit(&b, rep); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Errors   int `xml:"errors,attr"`
		Skipped  int `xml:"skipped,attr"`
		Cases    []struct {
			Name    string    `xml:"name,attr"`
			Failure *struct{} `xml:"failure"`
			Error   *struct{} `xml:"error"`
			Skipped *struct{} `xml:"skipped"`
		} `xml:"testcase"`
	}
	if err := xml.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	if got.Tests != 6 || got.Failures != 2 || got.Errors != 2 || got.Skipped != 1 {
		t.Errorf("tests %d failures %d errors %d skipped %d, want 6 2 2 1\n%s", got.Tests, got.Failures, got.Errors, got.Skipped, b.String())
	}
	want := map[string]string{"A": "", "B": "failure", "C": "failure", "D": "skipped", "E": "error", "F": "error"}
	for _, c := range got.Cases {
		is := ""
		switch {
		case c.Failure != nil:
			is = "failure"
		case c.Error != nil:
			is = "error"
		case c.Skipped != nil:
			is = "skipped"
		}
		if is != want[c.Name] {
			t.Errorf("case %s is %q in JUnit, want %q", c.Name, is, want[c.Name])
		}
	}
}

// TestNotRunCauseFirst: when no case ran, the report is the cause, first,
// not a table of NOT-RUN; the cases that did not run because of it follow,
// their long list cut short.
func TestNotRunCauseFirst(t *testing.T) {
	rep := &conformance.Report{Bridge: "b", Results: []conformance.Result{
		{Case: "A", Status: conformance.NotRun, Detail: "the bridge could not be set up in case C"},
		{Case: "B", Status: conformance.NotRun, Detail: "the bridge could not be set up in case C"},
		{Case: "C", Status: conformance.NotRun, Detail: "the bridge could not be set up: cannot bind"},
		{Case: "D", Status: conformance.NotRun, Detail: "the bridge could not be set up in case C"},
		{Case: "E", Status: conformance.NotRun, Detail: "the bridge could not be set up in case C"},
		{Case: "F", Status: conformance.NotRun, Detail: "the bridge could not be set up in case C"},
	}}
	var b bytes.Buffer
	conformance.WriteTable(&b, rep)
	out := b.String()
	cause, others := strings.Index(out, "cannot bind"), strings.Index(out, "NOT RUN (5 cases: A, B, … F)")
	if strings.Contains(out, "REQUIREMENT") || cause < 0 || others < 0 || cause > others {
		t.Errorf("want the cause first, no table, the others after it, cut short:\n%s", out)
	}
}

// TestPassOnFewRows: a MUST case that passed with most of its rows skipped
// says how little it checked, and why the rest was not.
func TestPassOnFewRows(t *testing.T) {
	rep := &conformance.Report{Bridge: "b", Results: []conformance.Result{
		{Case: "A", Status: conformance.Pass, Requirement: conformance.Requirement{Level: "MUST"}, Rows: []conformance.RowResult{
			{Name: "one", Status: conformance.Pass},
			{Name: "two", Status: conformance.Skip, Detail: "the surface has no drop operation"},
			{Name: "three", Status: conformance.Skip, Detail: "the surface has no drop operation"},
		}},
		{Case: "B", Status: conformance.Pass, Requirement: conformance.Requirement{Level: "MUST"}, Rows: []conformance.RowResult{
			{Name: "one", Status: conformance.Pass}, {Name: "two", Status: conformance.Skip, Detail: "no"},
		}},
	}}
	var b bytes.Buffer
	conformance.WriteTable(&b, rep)
	if out := b.String(); !strings.Contains(out, "A passed on 1 of its 3 rows; 2 were skipped, unchecked: the surface has no drop operation\n") || strings.Contains(out, "B passed on") {
		t.Errorf("want A's thin pass told, once its reason, and B's (half skipped) not:\n%s", out)
	}
}
