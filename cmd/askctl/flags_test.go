package main

import (
	"context"
	"github.com/askctl/askctl/claudecli"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/urfave/cli/v3"
)

// These tests check flag parsing apart from behaviour: each command is built
// with a run function that only keeps the options it is given.

func parse(t *testing.T, cmd *cli.Command, args ...string) error {
	t.Helper()
	shapeCommands(cmd, &stdio{})
	cmd.ExitErrHandler = func(context.Context, *cli.Command, error) {}
	return cmd.Run(context.Background(), append([]string{"askctl"}, args...))
}

func TestReplayFlags(t *testing.T) {
	env := map[string]string{}
	s := &stdio{getenv: func(k string) string { return env[k] }}
	tests := []struct {
		args    []string
		want    replayOptions
		wantErr string
	}{
		{args: nil, want: replayOptions{agent: "fake", timeout: time.Minute, names: []string{}}},
		{args: []string{"--agent", "real", "--claude", "/x/claude", "--json", "--timeout", "5s", "-v", "a", "b.txtar"},
			want: replayOptions{agent: "real", claude: "/x/claude", json: true, timeout: 5 * time.Second, verbose: true, names: []string{"a", "b.txtar"}}},
		{args: []string{"--agent", "robot"}, wantErr: `--agent: want fake or real, got "robot"`},
		{args: []string{"--timeout", "-1s"}, wantErr: "--timeout: want a positive duration"},
		{args: []string{"--timeout", "soon"}, wantErr: "invalid value"},
		{args: []string{"--cli", "oldest"}, want: replayOptions{agent: "fake", timeout: time.Minute, names: []string{}, cli: "oldest", rel: release{play: claudecli.Oldest(), version: claudecli.Oldest()}}},
		{args: []string{"--cli", "2.1"}, wantErr: "--cli: claude 2.1 is not a learned release"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var got *replayOptions
			err := parse(t, newReplayCmd(s, func(_ context.Context, o *replayOptions) error { got = o; return nil }), tt.args...)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, *got, cmp.AllowUnexported(replayOptions{}, release{}), cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".io" }, cmp.Ignore())); diff != "" {
				t.Errorf("options (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRecordFlags(t *testing.T) {
	env := map[string]string{}
	s := &stdio{getenv: func(k string) string { return env[k] }}
	var got *recordOptions
	run := func(_ context.Context, o *recordOptions) error { got = o; return nil }
	if err := parse(t, newRecordCmd(s, run), "-o", "s.txtar", "--name", "n", "--", "claude", "--verbose"); err != nil {
		t.Fatal(err)
	}
	if got.out != "s.txtar" || got.name != "n" || strings.Join(got.command, " ") != "claude --verbose" {
		t.Errorf("options %+v", got)
	}
	env[envRecordCommand], env[envRecordOut] = "/opt/claude", "env.txtar"
	if err := parse(t, newRecordCmd(s, run), "--", "-p"); err != nil {
		t.Fatal(err)
	}
	if got.out != "env.txtar" || strings.Join(got.command, " ") != "/opt/claude -p" {
		t.Errorf("from the environment: options %+v", got)
	}
	delete(env, envRecordOut)
	if err := parse(t, newRecordCmd(s, run), "--", "x"); err == nil || !strings.Contains(err.Error(), "-o FILE is required") {
		t.Errorf("no output: error %v", err)
	}
}

func TestScenariosFlags(t *testing.T) {
	s := &stdio{}
	var got *scenariosOptions
	run := func(_ context.Context, o *scenariosOptions) error { got = o; return nil }
	if err := parse(t, newScenariosCmd(s, run), "--show", "ask-single", "ask-multi"); err != nil {
		t.Fatal(err)
	}
	if !got.show || strings.Join(got.names, ",") != "ask-single,ask-multi" {
		t.Errorf("options %+v", got)
	}
	if err := parse(t, newScenariosCmd(s, run), "--show"); err == nil || !strings.Contains(err.Error(), "--show: name the built-ins") {
		t.Errorf("--show alone: error %v", err)
	}
}

func TestFidelityAndModelFlags(t *testing.T) {
	s := &stdio{getenv: func(string) string { return "" }}
	var fo *fidelityOptions
	if err := parse(t, newFidelityCmd(s, func(_ context.Context, o *fidelityOptions) error { fo = o; return nil }), "--claude", "/c", "--timeout", "3s", "ask-single"); err != nil {
		t.Fatal(err)
	}
	if fo.claude != "/c" || fo.timeout != 3*time.Second || strings.Join(fo.names, ",") != "ask-single" {
		t.Errorf("fidelity options %+v", fo)
	}
	var mo *modelOptions
	if err := parse(t, newModelCmd(s, func(_ context.Context, o *modelOptions) error { mo = o; return nil }), "--addr", "127.0.0.1:9", "ask-multi"); err != nil {
		t.Fatal(err)
	}
	if mo.addr != "127.0.0.1:9" || mo.scenario != "ask-multi" {
		t.Errorf("model options %+v", mo)
	}
	for _, args := range [][]string{{}, {"a", "b"}, {"--addr", "nonsense", "a"}} {
		if err := parse(t, newModelCmd(s, func(context.Context, *modelOptions) error { return nil }), args...); err == nil {
			t.Errorf("model %v: no error", args)
		}
	}
}

func TestFirstLine(t *testing.T) {
	tests := []struct{ in, want string }{
		{"Short.", "Short."},
		{"First line\nsecond line.", "First line…"},
		{strings.Repeat("word ", 30), strings.TrimSpace(strings.Repeat("word ", 16)) + "…"},
	}
	for _, tt := range tests {
		if got := firstLine(tt.in, 80); got != tt.want {
			t.Errorf("firstLine(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestAnswerFlags(t *testing.T) {
	s := &stdio{getenv: func(string) string { return "" }}
	var got *answerOptions
	run := func(_ context.Context, o *answerOptions) error { got = o; return nil }
	if err := parse(t, newAnswerCmd(s, run), "--id", "q_1", "--set", "1=Yes, please", "--set", "2=A", "--set", "2=B", "--url", "http://x", "--token", "t"); err != nil {
		t.Fatal(err)
	}
	if got.id != "q_1" || strings.Join(got.set, "|") != "1=Yes, please|2=A|2=B" || got.conn.url != "http://x" || got.conn.token != "t" {
		t.Errorf("options %+v", got)
	}
	if err := parse(t, newAnswerCmd(s, run), "--id", "q_1", "--question", "2", "Intro", "Outro"); err != nil || got.question != "2" || strings.Join(got.labels, ",") != "Intro,Outro" {
		t.Errorf("labels: %+v, %v", got, err)
	}
	for _, args := range [][]string{{"Summary"}, {"--id", "q_1"}, {"--id", "q_1", "--text", "x", "A"}, {"--id", "q_1", "--set", "1=A", "B"}, {"--id", "q_1", "--set", "=A"}} {
		if err := parse(t, newAnswerCmd(s, run), args...); err == nil {
			t.Errorf("answer %v: no error", args)
		}
	}
}

func TestPendingAndServeFlags(t *testing.T) {
	s := &stdio{getenv: func(string) string { return "" }}
	var po *pendingOptions
	if err := parse(t, newPendingCmd(s, func(_ context.Context, o *pendingOptions) error { po = o; return nil }), "--wait", "--timeout", "2s", "--json", "--session", "s_1"); err != nil {
		t.Fatal(err)
	}
	if !po.wait || po.timeout != 2*time.Second || !po.json || po.session != "s_1" {
		t.Errorf("pending options %+v", po)
	}
	var so *serveOptions
	if err := parse(t, newServeCmd(s, func(_ context.Context, o *serveOptions) error { so = o; return nil }), "--timeout", "55s", "--other-tools", "deny", "--env", "A=1", "--env", "B=2"); err != nil {
		t.Fatal(err)
	}
	if so.addr != DefaultAddr || so.timeout != 55*time.Second || so.otherTools != "deny" || strings.Join(so.env, ",") != "A=1,B=2" {
		t.Errorf("serve options %+v", so)
	}
	for _, args := range [][]string{{"--addr", "10.0.0.1:80"}, {"--addr", "nohost"}, {"--timeout", "0s"}, {"--other-tools", "ask"}, {"--env", "NOEQUALS"}, {"extra"}} {
		if err := parse(t, newServeCmd(s, func(context.Context, *serveOptions) error { return nil }), args...); err == nil {
			t.Errorf("serve %v: no error", args)
		}
	}
	if err := parse(t, newServeCmd(s, func(context.Context, *serveOptions) error { return nil }), "--addr", "10.0.0.1:80", "--allow-remote"); err != nil {
		t.Errorf("--allow-remote: %v", err)
	}
}

func TestConformanceExploreFlags(t *testing.T) {
	s := &stdio{getenv: func(string) string { return "" }}
	dir := t.TempDir()
	tests := []struct {
		args    []string
		wantErr string
		check   func(*conformanceOptions) bool
	}{
		{args: []string{"--explore", "2m", "--seed", "42", "--found", dir + "/f.txtar", "--case", "a.txtar", "--case", "b.txtar"},
			check: func(o *conformanceOptions) bool {
				return o.explore == 2*time.Minute && o.seed == 42 && o.found == dir+"/f.txtar" && strings.Join(o.cases, " ") == "a.txtar b.txtar"
			}},
		{args: []string{"--explore", "-5s"}, wantErr: "--explore: want a positive duration"},
		{args: []string{"--explore", "1m", "--found", dir + "/no/such/dir/f.txtar"}, wantErr: "no directory " + dir + "/no/such/dir"},
		{args: []string{"--seed", "-1"}, wantErr: "invalid value"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var got *conformanceOptions
			err := parse(t, newConformanceCmd(s, func(_ context.Context, o *conformanceOptions) error { got = o; return nil }), tt.args...)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tt.check(got) {
				t.Errorf("options: %+v", *got)
			}
		})
	}
}
