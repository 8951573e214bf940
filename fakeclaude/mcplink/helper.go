package mcplink

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/askctl/askctl/claudecli"
)

// HelperName is the helper program's name: next to fakeclaude, else on
// PATH.
const HelperName = "fakeclaude-mcp"

// FindHelper is the helper program: HelperName in the directory of the
// running executable, else on PATH.
func FindHelper() (string, error) {
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), HelperName)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	if p, err := exec.LookPath(HelperName); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("MCP servers need %s next to fakeclaude or on PATH (go install github.com/askctl/askctl/cmd/%s, or make build)", HelperName, HelperName)
}

// Helper is a claudecli.MCPDialer that reaches servers through the helper program,
// started on the first Dial. Close ends it.
type Helper struct {
	// Path is the helper program; empty: FindHelper.
	Path string
	// Stderr takes the helper's stderr; nil: discarded.
	Stderr io.Writer
	// Env is added to the helper's environment (the process's).
	Env []string

	once    sync.Once
	started error
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	wmu     sync.Mutex
	w       *json.Encoder
	mu      sync.Mutex
	next    int64
	waiting map[int64]chan response
	gone    error         // why the helper stopped answering
	done    chan struct{} // closed when the reader ends
}

func (h *Helper) start() error {
	h.once.Do(func() {
		path := h.Path
		if path == "" {
			var err error
			if path, err = FindHelper(); err != nil {
				h.started = err
				return
			}
		}
		cmd := exec.Command(path)
		cmd.Stderr = h.Stderr
		if len(h.Env) > 0 {
			cmd.Env = append(os.Environ(), h.Env...)
		}
		in, err := cmd.StdinPipe()
		if err != nil {
			h.started = err
			return
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			h.started = err
			return
		}
		if err := cmd.Start(); err != nil {
			h.started = fmt.Errorf("start %s: %w", HelperName, err)
			return
		}
		h.cmd, h.stdin, h.w = cmd, in, json.NewEncoder(in)
		h.waiting = map[int64]chan response{}
		h.done = make(chan struct{})
		go h.read(out)
	})
	return h.started
}

// read hands each response to its waiter; when the helper's output ends,
// every waiter gets the reason.
func (h *Helper) read(out io.Reader) {
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	var err error
	for sc.Scan() {
		var r response
		if err = json.Unmarshal(sc.Bytes(), &r); err != nil {
			err = fmt.Errorf("%s wrote a line that is not JSON: %w", HelperName, err)
			break
		}
		h.mu.Lock()
		ch := h.waiting[r.ID]
		delete(h.waiting, r.ID)
		h.mu.Unlock()
		if ch != nil {
			ch <- r
		}
	}
	if err == nil {
		err = sc.Err()
	}
	if err == nil {
		err = fmt.Errorf("%s exited", HelperName)
	}
	h.mu.Lock()
	h.gone = err
	for id, ch := range h.waiting {
		delete(h.waiting, id)
		ch <- response{ID: id, Error: err.Error()}
	}
	h.mu.Unlock()
	close(h.done)
}

// do sends req and waits for its response; a done ctx cancels it on the
// helper's side and returns at once.
func (h *Helper) do(ctx context.Context, req request) (response, error) {
	if err := h.start(); err != nil {
		return response{}, err
	}
	ch := make(chan response, 1)
	h.mu.Lock()
	if h.gone != nil {
		h.mu.Unlock()
		return response{}, h.gone
	}
	h.next++
	req.ID = h.next
	h.waiting[req.ID] = ch
	h.mu.Unlock()
	if err := h.send(req); err != nil {
		h.mu.Lock()
		delete(h.waiting, req.ID)
		h.mu.Unlock()
		return response{}, fmt.Errorf("%s: %w", HelperName, err)
	}
	select {
	case r := <-ch:
		if r.Error != "" {
			return r, errors.New(r.Error)
		}
		return r, nil
	case <-ctx.Done():
		h.mu.Lock()
		delete(h.waiting, req.ID)
		h.mu.Unlock()
		_ = h.send(request{Op: opCancel, Target: req.ID})
		return response{}, ctx.Err()
	}
}

func (h *Helper) send(req request) error {
	h.wmu.Lock()
	defer h.wmu.Unlock()
	return h.w.Encode(req)
}

// Dial connects to srv through the helper.
func (h *Helper) Dial(ctx context.Context, srv claudecli.MCPServer, env map[string]string, dir string) (claudecli.MCPConn, error) {
	r, err := h.do(ctx, request{Op: opDial, Server: &wireServer{Name: srv.Name, MCPServer: srv}, Env: env, Dir: dir})
	if err != nil {
		return nil, err
	}
	return &helperConn{h: h, id: r.Conn, protocol: r.Protocol}, nil
}

// Close ends the helper: its input closes, it closes every session, and it
// is killed if it has not exited within closeWait and a little more.
func (h *Helper) Close() error {
	if h.cmd == nil {
		return nil
	}
	_ = h.stdin.Close()
	exited := make(chan error, 1)
	go func() { exited <- h.cmd.Wait() }()
	select {
	case err := <-exited:
		return err
	case <-time.After(closeWait + time.Second):
		_ = h.cmd.Process.Kill()
		return fmt.Errorf("%s did not exit within %v: killed", HelperName, closeWait+time.Second)
	}
}

type helperConn struct {
	h        *Helper
	id       int64
	protocol string
}

func (c *helperConn) Protocol() string { return c.protocol }

func (c *helperConn) Tools(ctx context.Context) ([]claudecli.MCPTool, error) {
	r, err := c.h.do(ctx, request{Op: opTools, Conn: c.id})
	return r.Tools, err
}

func (c *helperConn) Call(ctx context.Context, tool string, args any, meta map[string]any) (json.RawMessage, error) {
	raw, err := json.Marshal(args)
	if err != nil {
		return nil, fmt.Errorf("arguments of %s: %w", tool, err)
	}
	r, err := c.h.do(ctx, request{Op: opCall, Conn: c.id, Tool: tool, Args: raw, Meta: meta})
	return r.Result, err
}

func (c *helperConn) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), closeWait+time.Second)
	defer cancel()
	_, err := c.h.do(ctx, request{Op: opClose, Conn: c.id})
	if err != nil && strings.Contains(err.Error(), HelperName+" exited") {
		return nil // gone with the helper
	}
	return err
}
