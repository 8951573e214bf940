// Package transcript is the record format askctl uses wherever a session is
// written down: fakeclaude's transcript and live events, askctl record's
// recordings, and the wire section of a recorded scenario.
//
// A transcript is JSON Lines, one [Record] a line. A wire record carries one
// protocol message and its direction, exactly as the fixture captures of the
// real CLI do ({"dir":"to_cli","msg":{…}}), plus a timestamp; an event record
// says what happened around the messages (a note, an error, an expectation
// checked, the exit):
//
//	{"t":"2026-11-21T22:46:03.532Z","dir":"from_cli","msg":{"type":"assistant",…}}
//	{"t":"2026-11-21T22:46:03.540Z","event":"error","kind":"protocol","text":"line 3: invalid JSON …"}
//	{"t":"2026-11-21T22:46:03.600Z","event":"exit","code":0}
//
// It is public, because the public packages hand its records out (fakeclaude
// and sdk sinks, scenarios' recorded wire, harness state).
package transcript

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/askctl/askctl/internal/jsonl"
)

// Directions of a wire record, named from the CLI's side as in the captures.
const (
	ToCLI   = "to_cli"   // written to the CLI's stdin (by the SDK or bridge)
	FromCLI = "from_cli" // read from the CLI's stdout
)

// Event kinds.
const (
	EventNote   = "note"   // something worth knowing that is not wrong
	EventError  = "error"  // something wrong; Kind says what
	EventExpect = "expect" // a scenario expectation was checked; OK says how it went
	EventStep   = "step"   // a scenario step began
	EventExit   = "exit"   // the agent is exiting with Code
)

// Record is one line of a transcript.
type Record struct {
	T       time.Time       `json:"t"`
	Session string          `json:"session,omitempty"` // the agent's session id, to tell sessions apart in one file
	Dir     string          `json:"dir,omitempty"`
	Msg     json.RawMessage `json:"msg,omitempty"`
	// Raw is a wire line Go's JSON decoder refuses (nesting deeper than its
	// limit) that passed all the same, kept byte for byte in place of Msg.
	Raw   string `json:"raw,omitempty"`
	Event string `json:"event,omitempty"`
	Kind  string `json:"kind,omitempty"`
	Step  int    `json:"step,omitempty"` // 1-based scenario step, for step/expect events
	OK    *bool  `json:"ok,omitempty"`
	Text  string `json:"text,omitempty"`
	Code  *int   `json:"code,omitempty"`
}

// IsWire reports whether r carries a protocol message.
func (r Record) IsWire() bool { return r.Dir != "" }

// Sink receives records as they happen.
type Sink interface {
	Write(Record) error
}

// Writer writes records as JSON Lines. It is safe for concurrent use and
// writes each record with one Write call, so a crash loses at most the record
// being written.
type Writer struct {
	mu  sync.Mutex
	w   io.Writer
	now func() time.Time
	err error
}

// NewWriter returns a Writer on w that stamps records without a time with the
// current time.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w, now: time.Now} }

// Write writes r. After the first error writing to the underlying writer,
// every call returns that error; a record that cannot be encoded is an
// error for that record only.
func (w *Writer) Write(r Record) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	if r.T.IsZero() {
		r.T = w.now()
	}
	r.T = r.T.UTC()
	if !utf8.Valid(r.Msg) {
		r.Msg = escapeInvalidUTF8(r.Msg)
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	_, w.err = w.w.Write(append(b, '\n'))
	return w.err
}

// MaxLineBytes bounds one record when reading; protocol lines can be large.
const MaxLineBytes = 64 << 20

// Reader reads records one at a time, as they are written: a transcript file
// that is still growing, or a live-events connection.
type Reader struct{ lr *jsonl.Reader }

// NewReader returns a Reader on r.
func NewReader(r io.Reader) *Reader { return &Reader{lr: jsonl.NewReader(r, MaxLineBytes)} }

// Next returns the next record; io.EOF after the last. Errors name the line;
// a line too long or not a record is an error the reader can go on after.
func (r *Reader) Next() (Record, error) {
	for {
		line, err := r.lr.Line()
		if errors.Is(err, jsonl.ErrTooLong) {
			return Record{}, fmt.Errorf("line %d: over %d bytes", r.lr.N(), MaxLineBytes)
		}
		if err != nil {
			return Record{}, err
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var rec Record
		if jerr := json.Unmarshal(line, &rec); jerr != nil {
			return Record{}, fmt.Errorf("line %d: %v", r.lr.N(), jerr)
		}
		return rec, nil
	}
}

// Read reads every record of a transcript. Errors name the line.
func Read(r io.Reader) ([]Record, error) {
	var out []Record
	rd := NewReader(r)
	for {
		rec, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, rec)
	}
}

// ReadFile reads the transcript in the named file; errors name the file.
func ReadFile(name string) ([]Record, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	recs, err := Read(f)
	if err != nil {
		return recs, fmt.Errorf("%s: %w", name, err)
	}
	return recs, nil
}

// escapeInvalidUTF8 replaces each byte of msg that is not UTF-8 with the JSON
// escape \ufffd. In a valid JSON text such bytes can only sit inside strings,
// so the result is still the same JSON, now valid UTF-8 as every transcript
// line must be.
func escapeInvalidUTF8(msg []byte) []byte {
	out := make([]byte, 0, len(msg)+16)
	for len(msg) > 0 {
		r, size := utf8.DecodeRune(msg)
		if r == utf8.RuneError && size == 1 {
			out = append(out, `\ufffd`...)
		} else {
			out = append(out, msg[:size]...)
		}
		msg = msg[size:]
	}
	return out
}

// Multi fans records out to several sinks; nil sinks are skipped. It returns
// the first error but writes to every sink.
type Multi []Sink

func (m Multi) Write(r Record) error {
	var first error
	for _, s := range m {
		if s == nil {
			continue
		}
		if err := s.Write(r); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Func adapts a function to a Sink.
type Func func(Record) error

func (f Func) Write(r Record) error { return f(r) }

// Bool returns a pointer to b, for Record.OK.
func Bool(b bool) *bool { return &b }

// Int returns a pointer to n, for Record.Code.
func Int(n int) *int { return &n }
