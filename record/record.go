// Package record is askctl record: a transparent shim between a bridge and the
// claude CLI that passes every byte through both ways and writes the session
// down as a recorded scenario.
//
// Lines are recorded as they pass, to FILE.partial, so nothing is lost if
// either side exits early or askctl is killed; at the end the session becomes
// FILE, a scenario with the recording in its wire section and steps derived
// from it, so it replays against fakeclaude and the real CLI. Secrets (API
// keys, tokens, authorization headers) are redacted before anything is
// written.
package record

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/askctl/askctl/transcript"
)

// Options configure a recording.
type Options struct {
	Out     string   // the scenario file to write
	Name    string   // the scenario's name; the file's base name when empty
	Command []string // the command to run (the real claude, with its arguments)
	Env     []string // its environment; nil means this process's
	Dir     string   // its working directory; empty means this process's
	Stdin   io.Reader
	Stdout  io.Writer
	Stderr  io.Writer
}

// Run runs the command, passes stdin and stdout through, records both
// directions, and writes the scenario. It returns the command's exit status.
func Run(ctx context.Context, o Options) (int, error) {
	if len(o.Command) == 0 {
		return 0, errors.New("no command to record")
	}
	partial := o.Out + ".partial"
	pf, err := os.Create(partial)
	if err != nil {
		return 0, err
	}
	w := transcript.NewWriter(pf)
	var mu sync.Mutex
	var recs []transcript.Record
	add := func(dir string, line []byte) {
		r := transcript.Record{T: time.Now().UTC(), Dir: dir, Msg: Redact(trimNewline(line))}
		if !validJSON(r.Msg) {
			r = transcript.Record{T: r.T, Event: transcript.EventNote, Kind: "non-json " + dir, Text: string(r.Msg)}
		}
		mu.Lock()
		recs = append(recs, r)
		mu.Unlock()
		_ = w.Write(r)
	}

	cmd := exec.Command(o.Command[0], o.Command[1:]...)
	if o.Env != nil {
		cmd.Env = o.Env
	}
	cmd.Dir = o.Dir
	cmd.Stderr = o.Stderr
	childIn, err := cmd.StdinPipe()
	if err != nil {
		return 0, err
	}
	childOut, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	if err := cmd.Start(); err != nil {
		pf.Close()
		os.Remove(partial)
		return 0, fmt.Errorf("starting %s: %w", o.Command[0], err)
	}
	// Signals for askctl go on to the command, so the bridge can stop it.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigs)
	go func() {
		for s := range sigs {
			_ = cmd.Process.Signal(s)
		}
	}()
	go func() {
		<-ctx.Done()
		_ = cmd.Process.Signal(syscall.SIGTERM)
	}()

	// stdin → command; our stdin may never close (a bridge keeps it open), so
	// nothing waits for this copier.
	go func() {
		pass(o.Stdin, childIn, func(l []byte) { add(transcript.ToCLI, l) })
		childIn.Close()
	}()
	pass(childOut, o.Stdout, func(l []byte) { add(transcript.FromCLI, l) })
	waitErr := cmd.Wait()
	code := cmd.ProcessState.ExitCode()
	_ = w.Write(transcript.Record{Event: transcript.EventExit, Code: transcript.Int(code)})
	pf.Close()

	mu.Lock()
	all := append([]transcript.Record(nil), recs...)
	mu.Unlock()
	all = append(all, transcript.Record{T: time.Now().UTC(), Event: transcript.EventExit, Code: transcript.Int(code)})
	data, err := Scenario(o.Name, o.Out, o.Command, all)
	if err != nil {
		return code, fmt.Errorf("the session is kept in %s: %w", partial, err)
	}
	if err := writeAtomic(o.Out, data); err != nil {
		return code, fmt.Errorf("the session is kept in %s: %w", partial, err)
	}
	os.Remove(partial)
	var ee *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &ee) {
		return code, waitErr
	}
	return code, nil
}

// pass copies r to w line by line, byte for byte, calling rec with each line
// just before its last bytes pass. A last line without a newline is passed too.
func pass(r io.Reader, w io.Writer, rec func([]byte)) {
	br := bufio.NewReaderSize(r, 1<<16)
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		line = append(line, chunk...)
		// Record a line before passing its end on: the other side may answer
		// at once, and the recording must keep the order things happened in.
		if err == nil || (len(line) > 0 && err != bufio.ErrBufferFull) {
			if len(trimNewline(line)) > 0 {
				rec(line)
			}
			line = line[:0]
		}
		if len(chunk) > 0 {
			if _, werr := w.Write(chunk); werr != nil {
				return
			}
		}
		if err != nil && err != bufio.ErrBufferFull {
			return
		}
	}
}

func trimNewline(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

func writeAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
