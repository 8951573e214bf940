package fakeclaude_test

import (
	"io"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/askctl/askctl/fakeclaude"
	"github.com/askctl/askctl/transcript"
)

// TestLiveEventsAndTranscriptFile: FAKECLAUDE_EVENTS streams every record to
// a harness over TCP while FAKECLAUDE_TRANSCRIPT ({pid} expanded) gets the
// same records, ending with the exit.
func TestLiveEventsAndTranscriptFile(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan []transcript.Record, 1)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			got <- nil
			return
		}
		defer conn.Close()
		recs, _ := transcript.Read(conn)
		got <- recs
	}()
	dir := t.TempDir()
	env := map[string]string{
		"FAKECLAUDE_SCENARIO":   "ask-skip",
		"FAKECLAUDE_EVENTS":     "tcp:" + ln.Addr().String(),
		"FAKECLAUDE_TRANSCRIPT": filepath.Join(dir, "t-{pid}.jsonl"),
		"FAKECLAUDE_TIMEOUT":    "2s",
		"CLAUDE_CONFIG_DIR":     filepath.Join(dir, ".claude"),
	}
	// The SDK side: initialize, a prompt, and a skip whose request_id is not
	// known in advance; a pipe lets the test answer after reading the request.
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- fakeclaude.Command(sdk, func(k string) string { return env[k] }, inR, outW, io.Discard)
		outW.Close()
	}()
	s := &session{t: t, in: inW}
	s.out = newDecoder(outR)
	s.init()
	id := s.until("control_request/can_use_tool").Get("request_id").String()
	s.send(respond(id, `{"behavior":"deny","message":"skipped"}`))
	s.until("result/success")
	inW.Close()
	if code := <-done; code != 0 {
		t.Fatalf("exit %d", code)
	}
	var live []transcript.Record
	select {
	case live = <-got:
	case <-time.After(5 * time.Second):
		t.Fatal("no live events")
	}
	files, _ := filepath.Glob(filepath.Join(dir, "t-*.jsonl"))
	if len(files) != 1 || strings.Contains(files[0], "{pid}") {
		t.Fatalf("transcript files %v, want one named with the pid", files)
	}
	saved, err := transcript.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	for name, recs := range map[string][]transcript.Record{"live": live, "file": saved} {
		if len(recs) != len(saved) {
			t.Errorf("%s: %d records, file has %d", name, len(recs), len(saved))
		}
		last := recs[len(recs)-1]
		if last.Event != transcript.EventExit || *last.Code != 0 || last.Session == "" {
			t.Errorf("%s: last record %+v, want the exit with the session id", name, last)
		}
		var to, from int
		for _, r := range recs {
			switch r.Dir {
			case transcript.ToCLI:
				to++
			case transcript.FromCLI:
				from++
			}
		}
		if to != 3 || from != 7 {
			t.Errorf("%s: %d lines to the CLI, %d from it; want 3 and 7", name, to, from)
		}
	}
}
