package surface_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestWhatEachLayerLinks keeps the package graph's layers: a person's
// surface (what askctl answer and a bridge author's scripts link) links no
// fake agent, fake model API, events hub, harness or browser driver; the
// harness links no browser driver (only the programs that import
// surface/browser do) and no reference bridge; nothing below the suite
// links the suite; the CLI's facts link no fake CLI.
func TestWhatEachLayerLinks(t *testing.T) {
	const mod = "github.com/askctl/askctl/"
	for _, tc := range []struct {
		pkg       string
		forbidden []string
	}{
		{"surface", []string{mod + "fakeclaude", mod + "internal/events", mod + "harness", mod + "bridge", mod + "conformance", mod + "internal/agent", "github.com/chromedp/"}},
		{"harness", []string{"github.com/chromedp/", mod + "bridge", mod + "conformance", mod + "surface/browser"}},
		{"surface/browser", []string{mod + "fakeclaude", mod + "internal/events", mod + "harness", mod + "bridge", mod + "conformance"}},
		// A profile is read without the harness (askctl answer --bridge).
		{"profile", []string{mod + "fakeclaude", mod + "internal/events", mod + "harness", mod + "bridge", mod + "conformance", "github.com/chromedp/"}},
		// The facts about the real CLI are below the fake that plays it.
		{"claudecli/mcpclient", []string{mod + "fakeclaude"}},
	} {
		out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", mod+tc.pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", tc.pkg, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, f := range tc.forbidden {
				// mod+"bridge" is the reference bridge, not bridgeapi.
				if dep == strings.TrimSuffix(f, "/") || strings.HasPrefix(dep, strings.TrimSuffix(f, "/")+"/") || strings.HasSuffix(f, "/") && strings.HasPrefix(dep, f) {
					t.Errorf("%s links %s", tc.pkg, dep)
				}
			}
		}
	}
}
