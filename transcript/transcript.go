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
package transcript

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
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
	EventStderr = "stderr" // a line the agent wrote to stderr
)

// Record is one line of a transcript.
type Record struct {
	T       time.Time       `json:"t"`
	Session string          `json:"session,omitempty"` // the agent's session id, to tell sessions apart in one file
	Dir     string          `json:"dir,omitempty"`
	Msg     json.RawMessage `json:"msg,omitempty"`
	Event   string          `json:"event,omitempty"`
	Kind    string          `json:"kind,omitempty"`
	Step    int             `json:"step,omitempty"` // 1-based scenario step, for step/expect events
	OK      *bool           `json:"ok,omitempty"`
	Text    string          `json:"text,omitempty"`
	Code    *int            `json:"code,omitempty"`
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

// Write writes r. After the first error every call returns that error.
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
	b, err := json.Marshal(r)
	if err != nil {
		w.err = err
		return err
	}
	_, w.err = w.w.Write(append(b, '\n'))
	return w.err
}

// Read reads every record of a transcript. Errors name the line.
func Read(r io.Reader) ([]Record, error) {
	var out []Record
	br := bufio.NewReaderSize(r, 1<<16)
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 && len(bytes.TrimSpace(line)) > 0 {
			var rec Record
			if jerr := json.Unmarshal(line, &rec); jerr != nil {
				return out, fmt.Errorf("line %d: %v", n, jerr)
			}
			out = append(out, rec)
		}
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
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
