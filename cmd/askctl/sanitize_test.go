package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/askctl/askctl/bridgeapi"
	"github.com/tidwall/gjson"
)

// hostileScenario asks a question whose every text holds terminal control
// sequences: an OSC 52 clipboard write, a screen clear, colours, a C1 CSI,
// a carriage return that would overwrite a line.
const hostileScenario = `-- scenario.json --
{"name":"hostile","route":"sdk","origin":"synthetic"}
-- steps.jsonl --
{"prompt":"Set up storage."}
{"ask":{"questions":[{"question":"Deploy\u001b]52;c;ZXZpbA==\u0007 now\u001b[2J?","header":"Dep\u001b[31mloy","options":[{"label":"Yes\u001b[0m","description":"go\u009b2J"},{"label":"No","description":"stop\rfake line"}],"multiSelect":false}]},"user":{"answers":{"Deploy\u001b]52;c;ZXZpbA==\u0007 now\u001b[2J?":"No"}}}
{"text":"Done."}
`

// unsafe finds the first byte of out a terminal would act on: a C0 control
// but newline and tab, DEL, a C1 control, or invalid UTF-8.
func unsafe(out string) (int, bool) {
	for i, r := range out {
		switch {
		case r == utf8.RuneError:
			if _, size := utf8.DecodeRuneInString(out[i:]); size == 1 {
				return i, true
			}
		case r == '\n' || r == '\t':
		case unicode.IsControl(r):
			return i, true
		}
	}
	return 0, false
}

// TestTerminalOutputIsSanitized walks every command that prints what an
// agent or a client wrote (question texts, headers, labels, descriptions,
// prompts, reasons, details), and askctl serve's log, with texts full of
// terminal control sequences: none reaches the terminal raw.
func TestTerminalOutputIsSanitized(t *testing.T) {
	file := filepath.Join(t.TempDir(), "hostile.txtar")
	if err := os.WriteFile(file, []byte(hostileScenario), 0o600); err != nil {
		t.Fatal(err)
	}
	s := serve(t)
	check := func(what, out string) {
		t.Helper()
		if i, bad := unsafe(out); bad {
			t.Errorf("%s prints a raw control at byte %d: %q", what, i, out[max(0, i-20):min(len(out), i+20)])
		}
	}
	run := func(ctx context.Context, args ...string) string {
		t.Helper()
		var stdout, stderr bytes.Buffer
		env := map[string]string{bridgeapi.EnvStateDir: s.state}
		run(ctx, append([]string{"askctl"}, args...), func(k string) string { return env[k] }, strings.NewReader(""), &stdout, &stderr)
		out := stdout.String() + stderr.String()
		check("askctl "+strings.Join(args, " "), out)
		return out
	}
	// watch, all along.
	wctx, stopWatch := context.WithCancel(context.Background())
	watched := make(chan string, 1)
	go func() { watched <- run(wctx, "watch") }()
	prompt := "Set up\x1b]0;owned\x07 storage\x1b[2J\r\x9b1m"
	run(context.Background(), "session", "start", "--scenario", file, "--prompt", prompt)
	out := s.must("pending", "--wait", "--timeout", "10s", "--json")
	id := gjson.Get(out, "0.question_id").String()
	run(context.Background(), "pending")
	run(context.Background(), "answer", "--id", id, "No")
	s.exits(1)
	run(context.Background(), "session", "ls")
	// A second session, skipped with a reason as hostile, then stopped.
	ss := run(context.Background(), "session", "start", "--scenario", file, "--prompt", prompt, "--json")
	sid := gjson.Get(ss, "id").String()
	out = s.must("pending", "--wait", "--timeout", "10s", "--json")
	run(context.Background(), "skip", "--id", gjson.Get(out, "0.question_id").String(), "--reason", "no\x1b[2J\x07")
	run(context.Background(), "session", "stop", sid)
	run(context.Background(), "session", "ls")
	if shown := run(context.Background(), "session", "show", sid); !strings.Contains(shown, "reason: no") {
		t.Errorf("session show printed no skip reason: %q", shown)
	}
	if logs := run(context.Background(), "session", "logs", sid); !strings.Contains(logs, "skipped: no") {
		t.Errorf("session logs printed no skip: %q", logs)
	}
	stopWatch()
	if w := <-watched; !strings.Contains(w, "Deploy") {
		t.Errorf("watch printed no question: %q", w)
	}
	// The scenario's own commands print its texts too.
	run(context.Background(), "scenarios", file)
	run(context.Background(), "replay", file)
	s.cmd.Process.Signal(os.Interrupt)
	s.cmd.Wait()
	check("askctl serve's log", s.log.String())
}
