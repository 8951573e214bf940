package fakeclaude_test

import (
	"bytes"
	"context"
	"github.com/askctl/askctl/claudecli"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/askctl/askctl/internal/testenv"
	"github.com/askctl/askctl/transcript"
	"github.com/tidwall/gjson"
)

// TestTypeScriptSDKDrivesFakeclaude runs the official TypeScript Agent SDK's
// query() with pathToClaudeCodeExecutable pointing at fakeclaude (this test
// binary, re-executed) and a canUseTool that answers the ask-multi questions.
// The SDK must see the tool_result text the real CLI produced in the capture.
func TestTypeScriptSDKDrivesFakeclaude(t *testing.T) {
	tr := filepath.Join(t.TempDir(), "transcript.jsonl")
	out, stderr := driveSDK(t, "FAKECLAUDE_TRANSCRIPT="+tr)
	if e := out.Get("error"); e.Type != gjson.Null {
		t.Fatalf("the SDK reported an error: %s\nstderr:\n%s", e.String(), stderr)
	}
	var types []string
	for _, m := range out.Get("messages").Array() {
		types = append(types, m.Get("type").String()+"/"+m.Get("subtype").String())
	}
	wantTypes := []string{"system/init", "assistant/", "user/", "assistant/", "result/success"}
	if !equal(types, wantTypes) {
		t.Errorf("SDK messages = %v, want %v", types, wantTypes)
	}
	if got := out.Get("seen.#").Int(); got != 1 {
		t.Fatalf("canUseTool called %d times, want 1", got)
	}
	// The SDK saw the release fakeclaude plays (scripts/sdk-releases.sh
	// runs this with each learned release's own SDK).
	wantCLI := os.Getenv(claudecli.EnvCLIVersion)
	if wantCLI == "" {
		wantCLI = claudecli.Newest()
	}
	if got := out.Get(`messages.#(type=="system").claude_code_version`).String(); got != wantCLI {
		t.Errorf("the SDK saw claude_code_version %q, want %q", got, wantCLI)
	}
	if got := out.Get("seen.0.toolName").String(); got != "AskUserQuestion" {
		t.Errorf("canUseTool toolName = %q, want AskUserQuestion", got)
	}
	if got := out.Get("seen.0.toolUseID").String(); got != "toolu_01A" {
		t.Errorf("canUseTool toolUseID = %q, want toolu_01A", got)
	}
	if got := out.Get("seen.0.requiresUserInteraction").Bool(); !got {
		t.Errorf("canUseTool requiresUserInteraction = false, want true")
	}
	got := out.Get(`messages.#(type=="user").message.content.0.content`).String()
	want := captureToolResult(t, "sdk-ask-allow.jsonl")
	if got != want {
		t.Errorf("the SDK saw tool_result\n%s\nthe real CLI produced\n%s", got, want)
	}
	// The transcript shows what fakeclaude got, with the SDK's own flags.
	recs, err := transcript.ReadFile(tr)
	if err != nil {
		t.Fatal(err)
	}
	var exit *int
	sawAllow := false
	for _, r := range recs {
		if r.Event == transcript.EventExit {
			exit = r.Code
		}
		if r.Dir == transcript.ToCLI && gjson.GetBytes(r.Msg, "response.response.behavior").String() == "allow" {
			sawAllow = true
		}
	}
	if exit == nil || *exit != 0 {
		t.Errorf("fakeclaude exit = %v, want 0; transcript:\n%s", exit, mustRead(t, tr))
	}
	if !sawAllow {
		t.Errorf("transcript has no allow from the SDK")
	}
}

// driveSDK runs the TypeScript SDK driver (testdata/sdk/drive-ask-multi.mjs)
// against fakeclaude playing ask-multi, with env added and the driver's
// extra args (a session id to resume), and returns its report and stderr.
func driveSDK(t *testing.T, env string, args ...string) (gjson.Result, string) {
	t.Helper()
	sdkDir := testenv.RequireSDK(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The SDK spawns the path directly; a wrapper script sets the re-exec switch.
	agent := filepath.Join(t.TempDir(), "claude")
	script := "#!/bin/sh\nexec env " + runAsEnv + "=fakeclaude '" + exe + "' \"$@\"\n"
	if err := os.WriteFile(agent, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", append([]string{"drive-ask-multi.mjs", agent}, args...)...)
	cmd.Dir = sdkDir
	cmd.Env = append(os.Environ(), "FAKECLAUDE_SCENARIO=ask-multi", env)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node %v: %v\nstderr:\n%s", args, err, stderr.String())
	}
	return gjson.ParseBytes(stdout.Bytes()), stderr.String()
}

func captureToolResult(t *testing.T, name string) string {
	t.Helper()
	recs, err := transcript.ReadFile(filepath.Join(captures, name))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if c := gjson.GetBytes(r.Msg, `message.content.#(type=="tool_result").content`); r.Dir == transcript.FromCLI && c.Exists() {
			return c.String()
		}
	}
	t.Fatalf("%s has no tool_result", name)
	return ""
}

func mustRead(t *testing.T, name string) string {
	b, _ := os.ReadFile(name)
	return string(b)
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestTypeScriptSDKResumesFakeclaude: the official TypeScript SDK's resume
// option against fakeclaude, as a bridge resumes a session: the second
// query() runs fakeclaude with --resume ID in the same directory; it keeps
// ID, plays on, and appends to the one session file.
func TestTypeScriptSDKResumesFakeclaude(t *testing.T) {
	cfg := t.TempDir()
	drive := func(resume ...string) gjson.Result {
		t.Helper()
		out, _ := driveSDK(t, "CLAUDE_CONFIG_DIR="+cfg, resume...)
		return out
	}
	first := drive()
	id := first.Get(`messages.#(subtype=="init").session_id`).String()
	if id == "" {
		t.Fatalf("no session id: %s", first.Raw)
	}
	second := drive(id)
	if got := second.Get(`messages.#(subtype=="init").session_id`).String(); got != id {
		t.Errorf("the resumed session is %q, want %q", got, id)
	}
	if got := second.Get(`messages.#(type=="result").subtype`).String(); got != "success" || second.Get("seen.#").Int() != 1 {
		t.Errorf("the resumed session: result %q, canUseTool called %d times", got, second.Get("seen.#").Int())
	}
	files, _ := filepath.Glob(filepath.Join(cfg, "projects", "*", "*.jsonl"))
	if len(files) != 1 || filepath.Base(files[0]) != id+".jsonl" {
		t.Fatalf("session files %v, want one, %s.jsonl", files, id)
	}
	prompts := 0
	for _, l := range bytes.Split(bytes.TrimSpace([]byte(mustRead(t, files[0]))), []byte("\n")) {
		if r := gjson.ParseBytes(l); r.Get("type").String() == "user" && r.Get("turnPosition").Exists() {
			prompts++
		}
	}
	if prompts != 2 {
		t.Errorf("%d prompts in the session file, want both sessions'", prompts)
	}
}
