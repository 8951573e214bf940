package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/askctl/askctl/internal/testenv"
	"github.com/rogpeppe/go-internal/testscript"
)

func TestMain(m *testing.M) {
	// The fake agent re-executes this binary as fakeclaude.
	testenv.RunAsFakeclaude()
	testscript.Main(m, map[string]func(){
		"askctl": func() { os.Exit(run(context.Background(), os.Args, os.Getenv, os.Stdin, os.Stdout, os.Stderr)) },
	})
}

// TestScripts runs the CLI behaviour scripts in testdata.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{Dir: "testdata", RequireExplicitExec: true, RequireUniqueNames: true})
}

const wrongScenario = `The person answers Postgres, and the scenario expects SQLite.
-- scenario.json --
{"name":"wrong"}
-- steps.jsonl --
{"prompt":"Set up storage."}
{"ask":{"questions":[{"question":"Which database should I use?","header":"Database","options":[{"label":"Postgres","description":"a"},{"label":"SQLite","description":"b"}],"multiSelect":false}]},"user":{"answers":{"Which database should I use?":"Postgres"}},"expect":{"match":{"updatedInput.answers.Which database should I use\\?":"SQLite"}}}
{"text":"Done."}
`

// TestExitStatus checks the one mapping from outcomes to exit statuses.
func TestExitStatus(t *testing.T) {
	dir := t.TempDir()
	wrong := dir + "/wrong.txtar"
	if err := os.WriteFile(wrong, []byte(wrongScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args       []string
		env        map[string]string
		want       int
		wantStderr string
	}{
		{args: []string{"replay", "ask-single"}, want: 0},
		{args: []string{"replay", wrong}, want: 1},
		{args: []string{"replay", "--agent", "robot"}, want: 2, wantStderr: `--agent: want fake or real, got "robot"`},
		{args: []string{"replay", "no-such"}, want: 2, wantStderr: `no built-in scenario or file "no-such"`},
		{args: []string{"replay", "--bogus"}, want: 2, wantStderr: "flag provided but not defined"},
		{args: []string{"record", "--", "true"}, want: 2, wantStderr: "record: -o FILE is required"},
		{args: []string{"replay", "--agent", "real", "--claude", dir + "/nope"}, want: 3, wantStderr: "--claude: stat"},
		{args: []string{"scenarios"}, want: 0},
		{args: []string{"replya"}, want: 2, wantStderr: `unknown command "replya": did you mean "replay"?`},
		{args: []string{"frobnicate"}, want: 2, wantStderr: `unknown command "frobnicate" (askctl --help lists the commands)`},
		{args: nil, want: 0},
		{args: []string{"--version"}, want: 2, wantStderr: "flag provided but not defined"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			getenv := func(k string) string { return tt.env[k] }
			got := run(context.Background(), append([]string{"askctl"}, tt.args...), getenv, strings.NewReader(""), &stdout, &stderr)
			if got != tt.want {
				t.Errorf("exit = %d, want %d\nstdout:\n%s\nstderr:\n%s", got, tt.want, stdout.String(), stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.wantStderr) {
				t.Errorf("stderr = %q, want it to contain %q", stderr.String(), tt.wantStderr)
			}
		})
	}
}

// TestRecordShimAsClaude: askctl installed as "claude" records the session of
// the command in ASKCTL_RECORD_COMMAND, with the bridge's own arguments.
func TestRecordShimAsClaude(t *testing.T) {
	dir := t.TempDir()
	real := dir + "/real-claude"
	script := "#!/bin/sh\necho \"{\\\"type\\\":\\\"system\\\",\\\"subtype\\\":\\\"init\\\",\\\"claude_code_version\\\":\\\"0.0.1\\\",\\\"args\\\":\\\"$*\\\"}\"\nread line\necho '{\"type\":\"result\",\"subtype\":\"success\"}'\n"
	if err := os.WriteFile(real, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	out := dir + "/rec.txtar"
	env := map[string]string{envRecordCommand: real, envRecordOut: out}
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{dir + "/claude", "--verbose", "--output-format", "stream-json"}, func(k string) string { return env[k] },
		strings.NewReader(`{"type":"user","message":{"role":"user","content":"hi"}}`+"\n"), &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), `"args":"--verbose --output-format stream-json"`) {
		t.Errorf("the bridge's arguments did not reach the command: %s", stdout.String())
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{`"origin":"recorded"`, `"cli_version":"0.0.1"`, `{"prompt":"hi"}`, `"dir":"to_cli"`} {
		if !strings.Contains(string(data), w) {
			t.Errorf("recording lacks %s:\n%s", w, data)
		}
	}
}

// TestModelServes: askctl model prints the environment for the CLI, serves
// the scenario's model turns, and stops cleanly when interrupted.
func TestModelServes(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	outR, outW := io.Pipe()
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"askctl", "model", "ask-single"}, func(string) string { return "" }, strings.NewReader(""), outW, &stderr)
		outW.Close()
	}()
	br := bufio.NewReader(outR)
	line, err := br.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "ANTHROPIC_BASE_URL=")
	if !ok || !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("first line %q, want ANTHROPIC_BASE_URL=http://127.0.0.1:…", line)
	}
	go io.Copy(io.Discard, br)
	resp, err := http.Post(url+"/v1/messages", "application/json", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"name":"AskUserQuestion"`) {
		t.Errorf("POST /v1/messages = %d %s", resp.StatusCode, body)
	}
	resp, err = http.Post(url+"/v2/other", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("POST /v2/other = %d, want 404", resp.StatusCode)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit %d after interrupt, want 0", code)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("askctl model did not stop")
	}
	if !strings.Contains(stderr.String(), "not POST /v2/other") {
		t.Errorf("the bad request was not logged: %s", stderr.String())
	}
}
