package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestInitAdapters: each adapter askctl init writes runs as written (the Go
// one builds with the standard library alone) and answers every operation
// of the exec contract as unsupported, naming the operation, with the
// request's id.
func TestInitAdapters(t *testing.T) {
	dir := t.TempDir()
	for _, lang := range []string{"python", "go"} {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), []string{"askctl", "init", "--adapter", lang, filepath.Join(dir, lang)}, func(string) string { return "" }, strings.NewReader(""), &stdout, &stderr); code != 0 {
			t.Fatalf("askctl init --adapter %s: exit %d: %s", lang, code, stderr.String())
		}
	}
	var adapters [][]string
	if _, err := exec.LookPath("python3"); err == nil {
		adapters = append(adapters, []string{"python3", filepath.Join(dir, "python", "askctl-adapter.py")})
	}
	bin := filepath.Join(dir, "go", "askctl-adapter", "askctl-adapter")
	build := exec.Command("go", "build", "-o", bin, "askctl-adapter/main.go")
	build.Dir = filepath.Join(dir, "go")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the Go adapter askctl init wrote: %v\n%s", err, out)
	}
	adapters = append(adapters, []string{bin})
	ops := []string{"start", "open", "close", "drop", "resume", "pending", "answer", "skip", "raw", "permit"}
	var in strings.Builder
	in.WriteString(`{"id":99,"op":"permit","conn":"c1","probe":true}` + "\n")
	for i, op := range ops {
		in.WriteString(`{"id":` + strconv.Itoa(i+1) + `,"op":"` + op + `","conn":"c1","session":"s1","question_id":"q1","answers":{"Q?":["A"]}}` + "\n")
	}
	for _, argv := range adapters {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Stdin = strings.NewReader(in.String())
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%v: %v", argv, err)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if probe := lines[0]; !strings.Contains(probe, `"unsupported":true`) || !strings.Contains(probe, `"id":99`) {
			t.Errorf("%v: the reply to a probe of permit, still a TODO: %s", argv, probe)
		}
		lines = lines[1:]
		if len(lines) != len(ops) {
			t.Fatalf("%v: %d replies to %d requests:\n%s", argv, len(lines), len(ops), out)
		}
		for i, line := range lines {
			var rep struct {
				ID          int    `json:"id"`
				Unsupported bool   `json:"unsupported"`
				Error       string `json:"error"`
			}
			if err := json.Unmarshal([]byte(line), &rep); err != nil || rep.ID != i+1 || !rep.Unsupported || !strings.Contains(rep.Error, ops[i]) || !strings.Contains(rep.Error, "not written yet") {
				t.Errorf("%v: reply to %s: %s (%v), want unsupported with id %d, naming it", filepath.Base(argv[len(argv)-1]), ops[i], line, err, i+1)
			}
		}
	}
}
