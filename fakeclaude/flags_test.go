package fakeclaude_test

import (
	"bytes"
	"github.com/askctl/askctl/claudecli"
	"strings"
	"testing"

	"github.com/askctl/askctl/fakeclaude"
	"github.com/google/go-cmp/cmp"
)

func TestParseArgsAcceptsWhatTheSDKsPass(t *testing.T) {
	tests := []struct {
		name string
		args []string
	}{
		{"typescript", []string{"--output-format=stream-json", "--verbose", "--input-format=stream-json", "--model=default", "--permission-prompt-tool=stdio",
			"--mcp-config", `{"mcpServers":{}}`, "--setting-sources=", "--max-turns=5", "--permission-mode=default", "--include-partial-messages", "--allowedTools=Read,AskUserQuestion"}},
		{"python", []string{"--output-format", "stream-json", "--verbose", "--system-prompt", "", "--permission-prompt-tool", "stdio", "--model", "claude-sonnet-4-5",
			"--resume=abc", "--setting-sources=user,project", "--disallowedTools", "Bash", "--input-format", "stream-json"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := fakeclaude.ParseArgs(tt.args)
			if err != nil {
				t.Fatalf("ParseArgs: %v", err)
			}
			if f.PermissionPromptTool != "stdio" || f.InputFormat != "stream-json" || f.OutputFormat != "stream-json" || !f.Verbose {
				t.Errorf("flags = %+v", f)
			}
			if len(f.Unknown) != 0 {
				t.Errorf("Unknown = %v, want none", f.Unknown)
			}
		})
	}
}

func TestParseArgsKeepsUnknownFlags(t *testing.T) {
	f, err := fakeclaude.ParseArgs([]string{"--brand-new-flag", "value", "--other=1", "--verbose", "--future-bool", "--model", "m"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"--brand-new-flag value", "--other=1", "--future-bool"}, f.Unknown); diff != "" {
		t.Errorf("Unknown (-want +got):\n%s", diff)
	}
	if f.Model != "m" || !f.Verbose {
		t.Errorf("known flags after unknown ones were lost: %+v", f)
	}
}

func TestUnknownFlagIsNotedNotFatal(t *testing.T) {
	s := start(t, "ask-skip", append([]string{"--brand-new-flag=1"}, sdk...), fakeclaude.Options{})
	s.init()
	id := s.until("control_request/can_use_tool").Get("request_id").String()
	s.send(respond(id, `{"behavior":"deny","message":"skipped"}`))
	s.until("result")
	if o := s.finish(); o.Code != 0 {
		t.Errorf("exit %d, want 0: %v", o.Code, o.Failures)
	}
}

func TestHelpAndVersion(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := fakeclaude.Command([]string{"--help"}, func(string) string { return "" }, strings.NewReader(""), &out, &errOut); code != 0 {
		t.Fatalf("--help exit %d", code)
	}
	for _, w := range []string{"FAKECLAUDE_SCENARIO", "FAKECLAUDE_TRANSCRIPT", "FAKECLAUDE_EVENTS", "FAKECLAUDE_TIMEOUT", "Exit status:", "6    stdin closed, or the SDK side closed its end of stdout", "ask-multi"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("--help lacks %q", w)
		}
	}
	out.Reset()
	// The Python SDK probes the version with -v.
	if code := fakeclaude.Command([]string{"-v"}, func(string) string { return "" }, strings.NewReader(""), &out, &errOut); code != 0 || out.String() != claudecli.Newest()+" (Claude Code)\n" {
		t.Errorf("-v = %d %q, want the newest learned release's %q", code, out.String(), claudecli.Newest()+" (Claude Code)\n")
	}
	out.Reset()
	if code := fakeclaude.Command(nil, func(string) string { return "" }, strings.NewReader(""), &out, &errOut); code != fakeclaude.ExitUsage || !strings.Contains(errOut.String(), "no scenario given") {
		t.Errorf("no scenario: exit %d stderr %q", code, errOut.String())
	}
	// The CLI's own commands start no session: nothing to play, and no
	// harness is asked (none listens here).
	noHarness := func(k string) string {
		if k == fakeclaude.EnvEvents {
			return "unix:/nonexistent/events.sock"
		}
		return ""
	}
	for _, sub := range [][]string{{"doctor"}, {"mcp", "list"}, {"update"}} {
		errOut.Reset()
		if code := fakeclaude.Command(sub, noHarness, strings.NewReader(""), &out, &errOut); code != 0 || !strings.Contains(errOut.String(), "starts no session") {
			t.Errorf("claude %v: exit %d, %q", sub, code, errOut.String())
		}
	}
}

// TestCLIFlagsAreKnown: every flag claude 2.1.330's --help lists (and the
// hidden ones the SDKs pass) parses as known: none is noted as unknown.
func TestCLIFlagsAreKnown(t *testing.T) {
	bools := []string{"--allow-dangerously-skip-permissions", "--ax-screen-reader", "--bare", "--bg", "--brief", "--chrome", "--continue", "-c",
		"--dangerously-skip-permissions", "--desktop", "--disable-slash-commands", "--exclude-dynamic-system-prompt-sections", "--fork-session",
		"--forward-subagent-text", "--ide", "--include-hook-events", "--include-partial-messages", "--no-chrome", "--no-session-persistence",
		"--print", "-p", "--replay-user-messages", "--restricted", "--safe-mode", "--strict-mcp-config", "--tmux", "--verbose"}
	values := []string{"--add-dir", "--agent", "--agents", "--allowedTools", "--allowed-tools", "--append-system-prompt", "--append-system-prompt-file",
		"--autocompact", "--betas", "--debug-file", "--disallowedTools", "--disallowed-tools", "--effort", "--environment", "--fallback-model", "--file",
		"--input-format", "--json-schema", "--max-budget-usd", "--mcp-config", "--model", "--name", "-n", "--output-format", "--permission-mode",
		"--permission-prompts", "--permission-prompt-tool", "--plugin-dir", "--plugin-url", "--remote-control-session-name-prefix", "--session-id",
		"--setting-sources", "--settings", "--system-prompt", "--system-prompt-file", "--system-prompt-snapshot", "--tools", "--max-turns"}
	optional := []string{"--cloud", "--debug", "-d", "--from-pr", "--prompt-suggestions", "--remote-control", "--resume", "-r", "--teleport", "--worktree", "-w"}
	for _, f := range bools {
		if got, err := fakeclaude.ParseArgs([]string{f}); err != nil || len(got.Unknown) > 0 {
			t.Errorf("%s: %v, unknown %v", f, err, got.Unknown)
		}
	}
	for _, f := range values {
		if got, err := fakeclaude.ParseArgs([]string{f, "v", "--verbose"}); err != nil || len(got.Unknown) > 0 || !got.Verbose {
			t.Errorf("%s v: %v, unknown %v", f, err, got.Unknown)
		}
	}
	for _, f := range optional {
		for _, args := range [][]string{{f}, {f, "v"}, {f, "--verbose"}} {
			if got, err := fakeclaude.ParseArgs(args); err != nil || len(got.Unknown) > 0 {
				t.Errorf("%v: %v, unknown %v", args, err, got.Unknown)
			}
		}
	}
	if got, _ := fakeclaude.ParseArgs([]string{"--resume", "abc", "-p"}); got.Resume != "abc" || !got.Print {
		t.Errorf("--resume abc -p: %+v", got)
	}
}
