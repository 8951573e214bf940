package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/askctl/askctl/bridgeapi"
	"github.com/askctl/askctl/harness"
	"github.com/askctl/askctl/protocol"
)

// The bridge commands (answer, skip, pending, watch) reach any bridge with a
// profile through the harness's surface adapters: --bridge PROFILE. The
// profile's surface is used as it is; ${STATE} is the state directory and
// ${PORT} the port askctl serve wrote there, so the built-in reference
// profiles reach a running askctl serve; other ${NAME}s come from the
// environment.

// surface opens the profile's surface and one connection to every session
// (or to session), collecting its events.
func (c *bridgeConn) surface(ctx context.Context, s *stdio, session string, sink func(harness.SurfaceEvent)) (harness.Surface, harness.Conn, error) {
	p, err := loadProfile(c.profile)
	if err != nil {
		return nil, nil, err
	}
	vars := map[string]string{"PROFILE_DIR": p.Dir}
	dir := c.state
	if dir == "" {
		dir, _ = bridgeapi.StateDir(s.getenv)
	}
	if dir != "" {
		vars["STATE"] = dir
		if e, err := bridgeapi.ReadEndpoint(dir); err == nil {
			if u, err := url.Parse(e.URL); err == nil {
				vars["PORT"] = u.Port()
			}
		}
	}
	if unset := p.SurfaceUnset(vars); len(unset) > 0 {
		if _, ok := vars["STATE"]; ok && slices.Contains(unset, "PORT") {
			return nil, nil, fmt.Errorf("%w: no bridge is running with state directory %s (start one with askctl serve, or pass --state)", bridgeapi.ErrUnreachable, vars["STATE"])
		}
		return nil, nil, usagef("--bridge %s: the surface uses ${%s}, which nobody set: set it in the environment (or use a profile with the address written out)", c.profile, strings.Join(unset, "}, ${"))
	}
	ep := p.Expanded(vars)
	surf, err := harness.NewSurface(ep.Surface)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", bridgeapi.ErrUnreachable, err)
	}
	if sink == nil {
		sink = func(harness.SurfaceEvent) {}
	}
	conn, err := surf.Open(ctx, session, sink)
	if err != nil {
		surf.Close()
		return nil, nil, surfaceErr(err)
	}
	return surf, conn, nil
}

// surfaceErr maps a surface's refusal to the errors the exit statuses know.
func surfaceErr(err error) error {
	var rj *harness.Rejected
	if !errors.As(err, &rj) {
		if err != nil && !errors.Is(err, bridgeapi.ErrUnreachable) {
			return fmt.Errorf("%w: %v", bridgeapi.ErrUnreachable, err)
		}
		return err
	}
	wrap := func(sentinel error) error {
		// The bridge's message may already start with the sentinel's words.
		return fmt.Errorf("%w: %s", sentinel, strings.TrimPrefix(rj.Message, sentinel.Error()+": "))
	}
	switch rj.Code {
	case "not_found", "404":
		return wrap(bridgeapi.ErrNotFound)
	case "resolved", "session_taken":
		return wrap(bridgeapi.ErrResolved)
	case "unauthorized", "401":
		return wrap(bridgeapi.ErrUnauthorized)
	}
	return wrap(bridgeapi.ErrInvalid)
}

// settle gives a socket surface the moment it needs to replay what is
// pending when it connects (a listing cannot know what it has not heard).
func settle(surf harness.Surface) {
	if k := surf.Kind(); k == "ws" || k == "control-ws" {
		time.Sleep(300 * time.Millisecond)
	}
}

// findPending finds question id among what the surface shows, waiting up
// to 3s for a socket surface to replay it.
func findPending(ctx context.Context, surf harness.Surface, conn harness.Conn, id string) (harness.Pending, error) {
	deadline := time.Now()
	if k := surf.Kind(); k == "ws" || k == "control-ws" {
		deadline = deadline.Add(3 * time.Second)
	}
	for {
		ps, err := conn.Pending(ctx)
		if err != nil {
			return harness.Pending{}, surfaceErr(err)
		}
		for _, p := range ps {
			if p.QuestionID == id {
				return p, nil
			}
		}
		if time.Now().After(deadline) {
			return harness.Pending{}, fmt.Errorf("%w: question %s is not pending on this surface", bridgeapi.ErrNotFound, id)
		}
		select {
		case <-ctx.Done():
			return harness.Pending{}, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func runAnswerProfile(ctx context.Context, o *answerOptions) error {
	surf, conn, err := o.conn.surface(ctx, o.io, "", nil)
	if err != nil {
		return err
	}
	defer surf.Close()
	defer conn.Close()
	p, err := findPending(ctx, surf, conn, o.id)
	if err != nil && !errors.Is(err, bridgeapi.ErrNotFound) {
		return err
	}
	// The same rules as on the reference bridge: labels are options,
	// --text is free text, several questions need --question or --set. A
	// question the surface does not show goes to the bridge as given, and
	// the bridge says why it is not pending (answered, unknown…).
	q := &bridgeapi.Question{ID: o.id, Questions: p.Questions}
	given, err := o.answersFor(q)
	if err != nil {
		return err
	}
	answers := map[string][]string{}
	for key, labels := range given {
		qq, err := protocol.FindQuestion(q.Questions, key)
		if err != nil {
			if len(q.Questions) > 0 {
				return fmt.Errorf("%w: %v", bridgeapi.ErrInvalid, err)
			}
			answers[key] = labels
			continue
		}
		answers[qq.Question] = labels
	}
	ack, err := conn.Answer(ctx, o.id, answers)
	if err != nil {
		return surfaceErr(err)
	}
	if o.json {
		return printJSON(o.io.out, ack)
	}
	if ack.Status == "held" {
		fmt.Fprintf(o.io.out, "held %s: waiting for %s\n", o.id, quoteAll(ack.Missing))
		return nil
	}
	fmt.Fprintf(o.io.out, "answered %s\n", o.id)
	return nil
}

func runSkipProfile(ctx context.Context, o *skipOptions) error {
	surf, conn, err := o.conn.surface(ctx, o.io, "", nil)
	if err != nil {
		return err
	}
	defer surf.Close()
	defer conn.Close()
	if _, err := findPending(ctx, surf, conn, o.id); err != nil && !errors.Is(err, bridgeapi.ErrNotFound) {
		return err
	}
	reason := o.reason
	if reason == "" {
		reason = bridgeapi.DefaultSkipReason
	}
	if err := conn.Skip(ctx, o.id, reason); err != nil {
		return surfaceErr(err)
	}
	if o.json {
		return printJSON(o.io.out, map[string]string{"question_id": o.id, "status": "skipped", "reason": reason})
	}
	fmt.Fprintf(o.io.out, "skipped %s: %s\n", o.id, reason)
	return nil
}

func runPendingProfile(ctx context.Context, o *pendingOptions) error {
	changed := make(chan struct{}, 1)
	surf, conn, err := o.conn.surface(ctx, o.io, o.session, func(harness.SurfaceEvent) {
		select {
		case changed <- struct{}{}:
		default:
		}
	})
	if err != nil {
		return err
	}
	defer surf.Close()
	defer conn.Close()
	settle(surf)
	ps, err := conn.Pending(ctx)
	if err != nil {
		return surfaceErr(err)
	}
	if o.wait && len(ps) == 0 {
		deadline := time.After(o.timeout)
		for len(ps) == 0 {
			select {
			case <-changed:
			case <-time.After(time.Second):
			case <-deadline:
				return exitWithMessage{exitNothing, fmt.Sprintf("no question within %v", o.timeout)}
			case <-ctx.Done():
				return ctx.Err()
			}
			if ps, err = conn.Pending(ctx); err != nil {
				return surfaceErr(err)
			}
		}
	}
	if o.json {
		if ps == nil {
			ps = []harness.Pending{}
		}
		return printJSON(o.io.out, ps)
	}
	if len(ps) == 0 {
		fmt.Fprintln(o.io.out, "no pending questions")
		return nil
	}
	tw := tabwriter.NewWriter(o.io.out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSESSION\tQUESTION\tOPTIONS")
	for _, p := range ps {
		for i, qq := range p.Questions {
			id, sess := p.QuestionID, p.Session
			if i > 0 {
				id, sess = "", ""
			}
			fmt.Fprintf(tw, "%s\t%s\t%d. %s\t%s\n", id, sess, i+1, qq.Question, optionsCell(qq))
		}
	}
	return tw.Flush()
}

func runWatchProfile(ctx context.Context, o *watchOptions) error {
	events := make(chan harness.SurfaceEvent, 256)
	surf, conn, err := o.conn.surface(ctx, o.io, o.session, func(e harness.SurfaceEvent) {
		select {
		case events <- e:
		case <-ctx.Done():
		}
	})
	if err != nil {
		return err
	}
	defer surf.Close()
	defer conn.Close()
	for {
		select {
		case <-ctx.Done():
			return nil
		case e := <-events:
			if o.json {
				e.Raw = nil
				b, _ := json.Marshal(e)
				fmt.Fprintf(o.io.out, "%s\n", b)
			} else {
				fmt.Fprintf(o.io.out, "%s %s %s %s\n", e.T.Local().Format("15:04:05"), e.Type, e.QuestionID, e.Reason)
			}
			if e.Type == harness.SurfClosed {
				return fmt.Errorf("%w: the surface closed: %s", bridgeapi.ErrUnreachable, e.Reason)
			}
		}
	}
}
