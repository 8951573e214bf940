package mcplink

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/askctl/askctl/claudecli"
)

// Serve is the helper: it answers requests from r on w with d's
// connections until r ends, then closes every connection (each within
// closeWait) and returns. Requests are served concurrently.
func Serve(ctx context.Context, d claudecli.MCPDialer, r io.Reader, w io.Writer) error {
	s := &server{d: d, w: json.NewEncoder(w), conns: map[int64]claudecli.MCPConn{}, ops: map[int64]context.CancelFunc{}}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	var err error
	for sc.Scan() {
		var req request
		if err = json.Unmarshal(sc.Bytes(), &req); err != nil {
			err = fmt.Errorf("fakeclaude-mcp: a request that is not JSON: %w", err)
			break
		}
		if req.Op == opCancel {
			s.mu.Lock()
			if c := s.ops[req.Target]; c != nil {
				c()
			}
			s.mu.Unlock()
			continue
		}
		opCtx, opCancel := context.WithCancel(ctx)
		s.mu.Lock()
		s.ops[req.ID] = opCancel
		s.mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp := s.serve(opCtx, req)
			s.mu.Lock()
			delete(s.ops, req.ID)
			s.mu.Unlock()
			opCancel()
			s.reply(resp)
		}()
	}
	if err == nil {
		err = sc.Err()
	}
	// End of input: fakeclaude is done (or gone). Whatever is under way
	// ends, and every session closes.
	cancel()
	wg.Wait()
	s.closeAll()
	return err
}

// closeWait bounds closing one session when the helper ends.
const closeWait = 5 * time.Second

type server struct {
	d     claudecli.MCPDialer
	wmu   sync.Mutex
	w     *json.Encoder
	mu    sync.Mutex
	next  int64
	conns map[int64]claudecli.MCPConn
	ops   map[int64]context.CancelFunc
}

func (s *server) reply(r response) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	_ = s.w.Encode(r) // a reader that is gone ends the helper by its input
}

func (s *server) conn(id int64) claudecli.MCPConn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conns[id]
}

func (s *server) serve(ctx context.Context, req request) response {
	resp := response{ID: req.ID}
	fail := func(err error) response {
		resp.Error = err.Error()
		return resp
	}
	switch req.Op {
	case opDial:
		if req.Server == nil {
			return fail(fmt.Errorf("dial: no server"))
		}
		srv := req.Server.MCPServer
		srv.Name = req.Server.Name
		c, err := s.d.Dial(ctx, srv, req.Env, req.Dir)
		if err != nil {
			return fail(err)
		}
		s.mu.Lock()
		s.next++
		resp.Conn = s.next
		s.conns[resp.Conn] = c
		s.mu.Unlock()
		resp.Protocol = c.Protocol()
	case opTools:
		c := s.conn(req.Conn)
		if c == nil {
			return fail(fmt.Errorf("no connection %d", req.Conn))
		}
		tools, err := c.Tools(ctx)
		if err != nil {
			return fail(err)
		}
		resp.Tools = tools
	case opCall:
		c := s.conn(req.Conn)
		if c == nil {
			return fail(fmt.Errorf("no connection %d", req.Conn))
		}
		var args any
		if len(req.Args) > 0 {
			if err := json.Unmarshal(req.Args, &args); err != nil {
				return fail(fmt.Errorf("call %s: arguments: %w", req.Tool, err))
			}
		}
		res, err := c.Call(ctx, req.Tool, args, req.Meta)
		if err != nil {
			return fail(err)
		}
		resp.Result = res
	case opClose:
		s.mu.Lock()
		c := s.conns[req.Conn]
		delete(s.conns, req.Conn)
		s.mu.Unlock()
		if c == nil {
			return fail(fmt.Errorf("no connection %d", req.Conn))
		}
		if err := c.Close(); err != nil {
			return fail(err)
		}
	default:
		return fail(fmt.Errorf("unknown op %q", req.Op))
	}
	return resp
}

// closeAll closes the sessions left open, together, each within closeWait.
func (s *server) closeAll() {
	s.mu.Lock()
	conns := s.conns
	s.conns = map[int64]claudecli.MCPConn{}
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			done := make(chan struct{})
			go func() { _ = c.Close(); close(done) }()
			select {
			case <-done:
			case <-time.After(closeWait):
			}
		}()
	}
	wg.Wait()
}
