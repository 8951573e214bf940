package claudecli_test

import (
	"os"
	"testing"

	"github.com/askctl/askctl/claudecli"
)

// TestParseMCPConfig: files and inline JSON, servers in written order, a
// later one of the same name wins.
func TestParseMCPConfig(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/mcp.json"
	if err := os.WriteFile(path, []byte(`{"mcpServers":{"b":{"command":"x"},"a":{"type":"http","url":"http://127.0.0.1:1/mcp","headers":{"Authorization":"Bearer t"}}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := claudecli.ParseMCPConfig([]string{path, `{"mcpServers":{"b":{"command":"y","args":["--stdio"]}}}`})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Name != "b" || got[0].Command != "y" || got[1].Name != "a" || got[1].Headers["Authorization"] != "Bearer t" {
		t.Errorf("got %+v", got)
	}
	for _, bad := range []string{`{"mcpServers":[]}`, `{"mcpServers":{"a":{}}}`, `{"mcpServers":{"a":{"command":1}}}`, `{`} {
		if _, err := claudecli.ParseMCPConfig([]string{bad}); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}
