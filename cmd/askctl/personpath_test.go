package main

import (
	"go/parser"
	"go/token"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// TestPersonPathLinks: what askctl answer, skip, pending and watch are
// built of (their files' imports, and everything those link) has no fake
// agent, fake model API, events hub, harness, suite or browser driver: a
// person's commands stand on package surface (and profile, to read
// --bridge), not on the test harness.
func TestPersonPathLinks(t *testing.T) {
	imports := map[string]bool{}
	for _, f := range []string{"answer.go", "skip.go", "pending.go", "watch.go", "person.go"} {
		file, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, im := range file.Imports {
			path, _ := strconv.Unquote(im.Path.Value)
			imports[path] = true
		}
	}
	args := []string{"list", "-deps", "-f", "{{.ImportPath}}"}
	for path := range imports {
		args = append(args, path)
	}
	out, err := exec.Command("go", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	const mod = "github.com/askctl/askctl/"
	forbidden := []string{mod + "fakeclaude", mod + "internal/events", mod + "harness", mod + "conformance", mod + "bench", mod + "bridge/", "github.com/chromedp/"}
	for _, dep := range strings.Fields(string(out)) {
		for _, f := range forbidden {
			if strings.HasPrefix(dep+"/", f) || strings.HasPrefix(dep, f) && strings.HasSuffix(f, "/") {
				t.Errorf("the person's commands link %s", dep)
			}
		}
	}
	if !imports[mod+"surface"] {
		t.Error("the person's commands do not use package surface")
	}
}
