// Package jsonl reads newline-delimited text one bounded line at a time: the
// framing under the stream-json decoder and the transcript reader. A peer
// can send a line of any length; a reader must neither hold all of it nor
// lose its place after it.
package jsonl

import (
	"bufio"
	"errors"
	"io"
)

// ErrTooLong is returned for a line over the reader's bound. The line is
// read past and counted, so the next call starts at the next line.
var ErrTooLong = errors.New("line too long")

// Reader reads lines.
type Reader struct {
	br  *bufio.Reader
	max int
	n   int
}

// NewReader returns a Reader on r for lines of at most max bytes.
func NewReader(r io.Reader, max int) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, 64<<10), max: max}
}

// N is the 1-based number of the last line read.
func (r *Reader) N() int { return r.n }

// Max is the reader's bound on a line.
func (r *Reader) Max() int { return r.max }

// Line returns the next line with its newline. A last line without one is
// returned too; after it, io.EOF.
func (r *Reader) Line() ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.br.ReadSlice('\n')
		if len(line)+len(chunk) > r.max {
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = r.br.ReadSlice('\n')
			}
			r.n++
			return nil, ErrTooLong
		}
		line = append(line, chunk...)
		switch {
		case err == nil:
			r.n++
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
		case errors.Is(err, io.EOF) && len(line) > 0:
			r.n++
			return line, nil
		default:
			return nil, err
		}
	}
}
