package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/askctl/askctl/agent"
	"github.com/askctl/askctl/fakeclaude"
	"github.com/rogpeppe/go-internal/testscript"
)

func TestMain(m *testing.M) {
	// The fake agent re-executes this binary as fakeclaude.
	if os.Getenv(agent.RunAsEnv) == "fakeclaude" {
		fakeclaude.Main()
	}
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
{"ask":{"questions":[{"question":"Which database should I use?","header":"Database","options":[{"label":"Postgres","description":"a"},{"label":"SQLite","description":"b"}],"multiSelect":false}]},"user":{"answers":{"Which database should I use?":"Postgres"}},"expect":{"answers":{"Which database should I use?":"SQLite"}}}
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
