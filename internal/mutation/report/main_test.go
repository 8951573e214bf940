package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReportSplitsTheKills(t *testing.T) {
	dir := t.TempDir()
	json := `{"files":[{"file_name":"bridge/a.go","mutations":[
		{"type":"CONDITIONALS_NEGATION","status":"KILLED","line":3,"column":7},
		{"type":"CONDITIONALS_BOUNDARY","status":"LIVED","line":3,"column":7},
		{"type":"CONDITIONALS_NEGATION","status":"KILLED","line":9,"column":2},
		{"type":"ARITHMETIC_BASE","status":"NOT COVERED","line":12,"column":5},
		{"type":"INCREMENT_DECREMENT","status":"TIMED OUT","line":14,"column":3},
		{"type":"ARITHMETIC_BASE","status":"KILLED","line":20,"column":9}]}]}`
	ledger := "a.go:3:7\t\"<\"→\"<=\"\tstarted\n" +
		"a.go:3:7\t\"<\"→\">=\"\tstarted\n" +
		"a.go:9:2\t\"==\"→\"!=\"\tstarted\n" +
		"a.go:14:3\t\"++\"→\"--\"\tstarted\n" +
		"a.go:3:7\t\"<\"→\"<=\"\tlived\n" +
		"a.go:3:7\t\"<\"→\">=\"\tcases\tSDK-TIMEOUT FAIL: …\n" +
		"a.go:9:2\t\"==\"→\"!=\"\texplore\tseed 1: FAIL UI-STATUS\n" +
		"a.go:40:1\t\"==\"→\"!=\"\tlived\n"
	for name, s := range map[string]string{"explore-core.json": json, "explore-core-ledger.tsv": ledger} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ms, unmatched, err := load(dir, "explore-")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	write(&b, ms, unmatched, true)
	out := b.String()
	for _, want := range []string{
		"| **all** | 6 | 1 | 1 | 1 | 1 | 1 | 0 | 1 | 25 % | 75 % |",
		"- `a.go:20:9` ARITHMETIC_BASE built=false",
		"- `a.go:3:7` CONDITIONALS_BOUNDARY \"<\"→\"<=\"",
		"- `a.go:9:2` CONDITIONALS_NEGATION \"==\"→\"!=\": seed 1: FAIL UI-STATUS",
		"1 ledger line(s) matched no mutant",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if _, _, err := load(dir, ""); err == nil {
		t.Errorf("a directory with only explore- reports gave no error without the prefix")
	}
}
