package transcript

import (
	"bytes"
	"io"
	"unicode/utf8"

	"github.com/tidwall/gjson"
	"strings"
	"sync"
	"testing"
)

func TestWriteRead(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	var wg sync.WaitGroup
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.Write(Record{Dir: ToCLI, Msg: []byte(`{"type":"user"}`)})
		}()
	}
	wg.Wait()
	w.Write(Record{Event: EventExit, Code: Int(3)})
	recs, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 51 || recs[50].Code == nil || *recs[50].Code != 3 || recs[0].T.IsZero() {
		t.Errorf("read %d records, last %+v", len(recs), recs[len(recs)-1])
	}
}

func TestReadNamesTheLine(t *testing.T) {
	_, err := Read(strings.NewReader("{\"dir\":\"to_cli\"}\n\nnot json\n"))
	if err == nil || !strings.HasPrefix(err.Error(), "line 3: ") {
		t.Errorf("Read error = %v, want one naming line 3", err)
	}
}

// TestReaderStreams: a record is read as soon as its line is written, while
// the writer is still open.
func TestReaderStreams(t *testing.T) {
	pr, pw := io.Pipe()
	w := NewWriter(pw)
	r := NewReader(pr)
	for i := 1; i <= 3; i++ {
		go w.Write(Record{Event: EventNote, Step: i})
		rec, err := r.Next()
		if err != nil || rec.Step != i {
			t.Fatalf("Next = %+v, %v; want step %d while the writer is open", rec, err, i)
		}
	}
	pw.Close()
	if _, err := r.Next(); err != io.EOF {
		t.Errorf("Next after close = %v, want io.EOF", err)
	}
}

// TestWriterKeepsLinesValidUTF8: a message with invalid bytes inside its
// strings is written as the same JSON with those bytes escaped.
func TestWriterKeepsLinesValidUTF8(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	if err := w.Write(Record{Dir: ToCLI, Msg: []byte("{\"type\":\"user\",\"x\":\"a\xffb\"}"), Text: "t\xfe"}); err != nil {
		t.Fatal(err)
	}
	if !utf8.Valid(buf.Bytes()) {
		t.Fatalf("line is not valid UTF-8: %q", buf.Bytes())
	}
	recs, err := Read(&buf)
	if err != nil || len(recs) != 1 {
		t.Fatalf("Read = %v, %v", recs, err)
	}
	if got := gjson.GetBytes(recs[0].Msg, "x").String(); got != "a\ufffdb" {
		t.Errorf("x = %q, want %q", got, "a\ufffdb")
	}
}

func TestReaderBoundsLines(t *testing.T) {
	in := strings.Repeat("x", MaxLineBytes+10) + "\n" + `{"event":"note","text":"after"}` + "\n"
	r := NewReader(strings.NewReader(in))
	if _, err := r.Next(); err == nil || !strings.Contains(err.Error(), "line 1: over") {
		t.Fatalf("Next = %v, want line 1 over the bound", err)
	}
	if rec, err := r.Next(); err != nil || rec.Text != "after" {
		t.Errorf("Next after the long line = %+v, %v", rec, err)
	}
}
