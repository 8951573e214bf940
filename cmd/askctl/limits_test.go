package main

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// TestServeHoldsAgainstStrangers: at the default open-file limit (1024),
// 1100 strangers that connect and never finish a request, then a
// thousand token holders that keep event streams open, do not lock the
// token holder out: askctl pending still answers, requests get in past the
// streams' cap (a stream past it is refused, saying so), and the bridge
// never runs out of files.
func TestServeHoldsAgainstStrangers(t *testing.T) {
	s := &served{t: t, state: t.TempDir(), trans: t.TempDir(), nofile: 1024}
	s.start()
	t.Cleanup(func() {
		if s.cmd.ProcessState == nil {
			s.cmd.Process.Kill()
			s.cmd.Wait()
		}
	})
	addr := strings.TrimPrefix(s.endpoint(), "http://")
	const strangers = 1100
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	pending := func(what string) {
		t.Helper()
		done := make(chan string, 1)
		start := time.Now()
		go func() {
			code, _, errOut := s.askctl("pending", "--json")
			if code != 0 {
				errOut = fmt.Sprintf("exit %d: %s", code, errOut)
			} else {
				errOut = ""
			}
			done <- errOut
		}()
		select {
		case failed := <-done:
			if failed != "" {
				t.Fatalf("with %s: askctl pending: %s; log:\n%s", what, failed, s.log)
			}
			t.Logf("with %s: askctl pending answered in %v", what, time.Since(start).Round(time.Millisecond))
		case <-time.After(20 * time.Second):
			t.Fatalf("with %s: askctl pending did not answer in 20s; log:\n%s", what, s.log)
		}
	}
	// Strangers: a request line and half a header, then nothing; more of
	// them than the bridge has files.
	for range strangers {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(c, "POST /api/sessions HTTP/1.1\r\nHost: %s\r\n", addr)
		held = append(held, c)
	}
	pending(fmt.Sprint(strangers, " strangers stalled mid-header"))
	// It got in while strangers held connections (not after the header
	// timeout had closed them all, as it did with no bound): the bridge
	// closed the oldest for the newcomers.
	open := 0
	for _, c := range held {
		c.SetReadDeadline(time.Now().Add(time.Millisecond))
		var b [1]byte
		if _, err := c.Read(b[:]); err != nil && os.IsTimeout(err) {
			open++
		}
	}
	t.Logf("%d of the %d strangers still connected", open, strangers)
	if open < 300 {
		t.Errorf("askctl pending answered when only %d strangers were still connected: the header timeout let it in, not the bound", open)
	}
	// Token holders: event streams kept open, each read to its first byte.
	refused := 0
	for range 1000 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
		fmt.Fprintf(c, "GET /api/events HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n\r\n", addr, s.token())
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil || resp.StatusCode != http.StatusOK {
			refused++
		}
	}
	t.Logf("of 1000 event streams, %d were refused (the connections kept for new requests)", refused)
	if refused == 0 {
		t.Errorf("no event stream was refused: nothing bounds them")
	}
	// A request still gets in; a new stream (askctl pending opens one) is
	// refused at once, saying why.
	req, _ := http.NewRequest("GET", s.endpoint()+"/api/questions", nil)
	req.Header.Set("Authorization", "Bearer "+s.token())
	client := &http.Client{Timeout: 20 * time.Second}
	if resp, err := client.Do(req); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("with 1000 strangers and the streams: GET /api/questions: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	if code, _, errOut := s.askctl("pending"); code == 0 || !strings.Contains(errOut, "too many connections") {
		t.Errorf("a stream past the cap: askctl pending exit %d, %s; want refused as busy", code, errOut)
	}
	for _, c := range held[strangers:] {
		c.Close()
	}
	pending("1000 strangers, the streams closed")
	if strings.Contains(s.log.String(), "too many open files") {
		t.Errorf("the bridge ran out of files:\n%s", s.log)
	}
}
