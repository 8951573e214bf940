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
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
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

// EnvRecording marks the environment of a command askctl record runs. Seen
// in askctl record's own environment, it means askctl is recording itself:
// the shim installed as "claude" found itself again as the command.
const EnvRecording = "_ASKCTL_RECORDING"

// ErrRecordsItself is returned when the command to record is askctl record
// itself, which would start itself again and again.
var ErrRecordsItself = errors.New("askctl record would run itself: the command to record is askctl (the shim installed as claude?); point ASKCTL_RECORD_COMMAND, or the command after --, at the real claude by its full path")

// Run runs the command, passes stdin and stdout through, records both
// directions, and writes the scenario. It returns the command's exit status.
// The session is always written: when steps cannot be derived from it, the
// file keeps the wire section and the reason is written to Stderr.
func Run(ctx context.Context, o Options) (int, error) {
	if len(o.Command) == 0 {
		return 0, errors.New("no command to record")
	}
	env := o.Env
	if env == nil {
		env = os.Environ()
	}
	if err := checkNotSelf(o.Command[0], env); err != nil {
		return 0, err
	}
	paths := newPlaceholders(o.Dir)
	partial := o.Out + ".partial"
	pf, err := os.Create(partial)
	if err != nil {
		return 0, err
	}
	w := transcript.NewWriter(pf)
	var mu sync.Mutex
	var recs []transcript.Record
	add := func(dir string, line []byte) {
		msg := paths.apply(Redact(trimNewline(line)))
		r := transcript.Record{T: time.Now().UTC(), Dir: dir, Msg: msg}
		switch {
		case !validJSON(msg):
			r = transcript.Record{T: r.T, Event: transcript.EventNote, Kind: "non-json " + dir, Text: string(msg)}
		case !json.Valid(msg):
			// JSON that Go's decoder refuses (nesting deeper than its
			// limit) passed through all the same: keep it byte-exact.
			r.Msg, r.Raw = nil, string(msg)
		}
		mu.Lock()
		recs = append(recs, r)
		mu.Unlock()
		_ = w.Write(r)
	}

	cmd := exec.Command(o.Command[0], o.Command[1:]...)
	cmd.Env = append(env[:len(env):len(env)], EnvRecording+"=1")
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
	data, problem := Scenario(o.Name, o.Out, paths.args(o.Command), all)
	if problem != nil && o.Stderr != nil {
		fmt.Fprintf(o.Stderr, "askctl record: %s: %v; the file keeps every line in its wire section\n", o.Out, problem)
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

// checkNotSelf refuses to record askctl itself: a command that resolves to
// this executable, or a recording started by a recording.
func checkNotSelf(command string, env []string) error {
	for _, kv := range env {
		if strings.HasPrefix(kv, EnvRecording+"=") {
			return ErrRecordsItself
		}
	}
	path, err := exec.LookPath(command)
	if err != nil {
		return nil // exec reports it
	}
	self, err := os.Executable()
	if err != nil {
		return nil
	}
	a, err1 := os.Stat(path)
	b, err2 := os.Stat(self)
	if err1 == nil && err2 == nil && os.SameFile(a, b) {
		return ErrRecordsItself
	}
	return nil
}

// placeholders keep local paths out of a recording: the working directory
// becomes ${CWD} and the home directory ${HOME}.
type placeholders struct{ cwd, home string }

func newPlaceholders(dir string) placeholders {
	var p placeholders
	if dir == "" {
		dir, _ = os.Getwd()
	}
	if abs, err := filepath.Abs(dir); err == nil {
		p.cwd = abs
	}
	p.home, _ = os.UserHomeDir()
	return p
}

func (p placeholders) apply(b []byte) []byte {
	// The longer path first: the working directory is often inside home.
	pairs := [][2]string{{p.cwd, "${CWD}"}, {p.home, "${HOME}"}}
	if len(p.home) > len(p.cwd) {
		pairs[0], pairs[1] = pairs[1], pairs[0]
	}
	for _, pr := range pairs {
		if len(pr[0]) > 1 { // never "/" or ""
			b = replacePath(b, []byte(pr[0]), []byte(pr[1]))
		}
	}
	return b
}

// replacePath replaces path where it stands as a whole path or a prefix of
// one: /home/u in "/home/u/x" or "/home/u", not in "/home/u2".
func replacePath(b, path, with []byte) []byte {
	var out []byte
	for {
		i := bytes.Index(b, path)
		if i < 0 {
			return append(out, b...)
		}
		end := i + len(path)
		if end == len(b) || !isPathByte(b[end]) || b[end] == '/' {
			out = append(append(out, b[:i]...), with...)
		} else {
			out = append(out, b[:end]...)
		}
		b = b[end:]
	}
}

func isPathByte(c byte) bool {
	return c == '/' || c == '.' || c == '-' || c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// args is the command as a recording names it: the program's base name, and
// the arguments with paths and secrets replaced.
func (p placeholders) args(command []string) []string {
	out := []string{filepath.Base(command[0])}
	for _, a := range command[1:] {
		out = append(out, string(Redact(p.apply([]byte(a)))))
	}
	return out
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
