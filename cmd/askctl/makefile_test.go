package main

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// TestMakeHelpComplete: make help lists every target the Makefile declares
// phony, each with what it does, the descriptions in one column.
func TestMakeHelpComplete(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make here")
	}
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\.PHONY:(.*)$`).FindSubmatch(mk)
	if m == nil {
		t.Fatal("the Makefile declares no .PHONY targets")
	}
	targets := strings.Fields(string(m[1]))
	out, err := exec.Command("make", "-s", "-C", "../..", "help").Output()
	if err != nil {
		t.Fatalf("make help: %v", err)
	}
	listed := map[string]string{}
	column := -1
	for _, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		name, rest, _ := strings.Cut(strings.TrimPrefix(line, "  "), " ")
		desc := strings.TrimLeft(rest, " ")
		listed[name] = desc
		at := len(line) - len(desc)
		if column == -1 {
			column = at
		} else if at != column {
			t.Errorf("make help: %q's description starts at column %d, the first one's at %d", name, at, column)
		}
	}
	for _, target := range targets {
		if listed[target] == "" {
			t.Errorf("make help does not list %s (with a ## description in the Makefile)", target)
		}
	}
}
