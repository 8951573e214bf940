package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"

	"github.com/askctl/askctl/internal/jsonl"
)

// DefaultMaxLineBytes bounds one line. The CLI's lines can exceed 1 MiB (the
// Python SDK's default buffer), so the bound is generous.
const DefaultMaxLineBytes = 64 << 20

// Line is one decoded line of the stream.
type Line struct {
	N       int             // 1-based line number in the stream
	Raw     json.RawMessage // the line, without its newline
	Type    string          // the "type" field
	Subtype string          // the "subtype" field, if any
}

// LineError is a problem with one line. Field is the JSON path of the offending
// field ("response.request_id"), or "" when the line as a whole is bad.
type LineError struct {
	Line  int
	Field string
	Err   error
	Raw   []byte // the line as read, when it could not be decoded at all
}

func (e *LineError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("line %d: %v", e.Line, e.Err)
	}
	return fmt.Sprintf("line %d: field %q: %v", e.Line, e.Field, e.Err)
}

func (e *LineError) Unwrap() error { return e.Err }

// ErrLineTooLong is returned for a line over the decoder's bound.
var ErrLineTooLong = jsonl.ErrTooLong

// Decoder reads newline-delimited JSON, one object a line. Blank lines are
// skipped. It is not safe for concurrent use.
type Decoder struct {
	lr   *jsonl.Reader
	skip bool
}

// NewDecoder returns a Decoder reading from r.
func NewDecoder(r io.Reader) *Decoder { return newDecoder(r, DefaultMaxLineBytes) }

func newDecoder(r io.Reader, max int) *Decoder { return &Decoder{lr: jsonl.NewReader(r, max)} }

// SkipNonJSON makes the decoder pass over lines that do not start with '{', as
// the Python SDK does with the CLI's stdout (some builds print debug lines).
func (d *Decoder) SkipNonJSON() *Decoder { d.skip = true; return d }

// Next returns the next line. At the end of the stream it returns io.EOF; a
// last line without a newline is still returned. Errors about a line are
// *LineError; the decoder can go on after them.
func (d *Decoder) Next() (Line, error) {
	for {
		raw, err := d.readLine()
		if err != nil {
			return Line{}, err
		}
		raw = bytes.TrimSpace(raw)
		if len(raw) == 0 {
			continue
		}
		if d.skip && raw[0] != '{' {
			continue
		}
		return DecodeLine(d.lr.N(), raw)
	}
}

func (d *Decoder) readLine() ([]byte, error) {
	line, err := d.lr.Line()
	if errors.Is(err, jsonl.ErrTooLong) {
		return nil, &LineError{Line: d.lr.N(), Err: fmt.Errorf("%w: over %d bytes", ErrLineTooLong, d.lr.Max())}
	}
	return line, err
}

// DecodeLine checks that raw is one JSON object with a string "type" and
// returns it as line n.
func DecodeLine(n int, raw []byte) (Line, error) {
	if !json.Valid(raw) {
		var v any
		err := json.Unmarshal(raw, &v)
		return Line{}, &LineError{Line: n, Err: fmt.Errorf("invalid JSON: %s", jsonErrText(err)), Raw: append([]byte(nil), raw...)}
	}
	if raw[0] != '{' {
		return Line{}, &LineError{Line: n, Err: fmt.Errorf("want a JSON object, got %s", jsonKind(raw))}
	}
	var env struct {
		Type    json.RawMessage `json:"type"`
		Subtype json.RawMessage `json:"subtype"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		return Line{}, &LineError{Line: n, Err: err}
	}
	l := Line{N: n, Raw: append(json.RawMessage(nil), raw...)}
	if env.Type == nil {
		return Line{}, &LineError{Line: n, Field: "type", Err: errors.New("missing")}
	}
	if err := json.Unmarshal(env.Type, &l.Type); err != nil {
		return Line{}, &LineError{Line: n, Field: "type", Err: fmt.Errorf("want string, got %s", jsonKind(env.Type))}
	}
	if env.Subtype != nil {
		_ = json.Unmarshal(env.Subtype, &l.Subtype) // a non-string subtype is left for typed decoding to report
	}
	return l, nil
}

// Decode unmarshals the line into v and reports a type mismatch with the
// field's path.
func (l Line) Decode(v any) error {
	if err := json.Unmarshal(l.Raw, v); err != nil {
		return fieldError(l.N, "", err)
	}
	return nil
}

// fieldError turns an encoding/json error into a *LineError naming the field,
// with prefix prepended to the path.
func fieldError(n int, prefix string, err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := te.Field
		if prefix != "" && field != "" {
			field = prefix + "." + field
		} else if prefix != "" {
			field = prefix
		}
		return &LineError{Line: n, Field: field, Err: fmt.Errorf("want %s, got %s", KindName(te.Type.Kind()), te.Value)}
	}
	var le *LineError
	if errors.As(err, &le) {
		le.Line = n
		if prefix != "" {
			le.Field = joinPath(prefix, le.Field)
		}
		return le
	}
	return &LineError{Line: n, Field: prefix, Err: fmt.Errorf("%s", jsonErrText(err))}
}

func joinPath(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "." + b
}

// KindName names the JSON type a Go kind decodes from, for messages about
// a value of the wrong type ("want object, got number").
func KindName(k reflect.Kind) string {
	switch k {
	case reflect.Struct, reflect.Map, reflect.Pointer:
		return "object"
	case reflect.Slice, reflect.Array:
		return "array"
	case reflect.Bool:
		return "boolean"
	case reflect.String:
		return "string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return "number"
	}
	return k.String()
}

func jsonErrText(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%v (at byte %d)", se, se.Offset)
	}
	if err == nil {
		return "malformed"
	}
	return err.Error()
}

// SameJSON reports whether two JSON texts hold the same value, key order
// and spacing aside; false when either is not JSON.
func SameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}
