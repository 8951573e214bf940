package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"

	"github.com/askctl/askctl/bridgeapi"
	"github.com/askctl/askctl/profile"
	"github.com/askctl/askctl/surface"
	"github.com/urfave/cli/v3"
)

// The person commands (answer, skip, pending, watch) play the person
// through one surface.Surface: the reference bridge's HTTP surface by
// default (found through askctl serve's state directory, or --url and
// --token), or any bridge's surface with a profile (--bridge PROFILE), as
// askctl conformance reaches it. One path: the same answer rules, the same
// waits, the same errors, whatever the bridge.
//
// A profile's surface is used as it is; ${STATE} is the state directory and
// ${PORT} the port askctl serve wrote there, so the built-in reference
// profiles reach a running askctl serve; other ${NAME}s come from the
// environment.

type bridgeConn struct {
	url, token, state string
	profile           string // --bridge: reach the bridge through a profile's surface
}

// flags are how a person command reaches the bridge.
func (c *bridgeConn) flags() []cli.Flag {
	return append(c.apiFlags(), &cli.StringFlag{Name: "bridge", Usage: "reach the bridge through the surface of this `PROFILE` (a file, or reference-ws|reference-http|reference-control-ws|reference-browser), as askctl conformance does", Destination: &c.profile})
}

// apiFlags reach the reference bridge's HTTP API.
func (c *bridgeConn) apiFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "url", Usage: "the bridge's URL (default: the one askctl serve wrote to the state directory)", Destination: &c.url, Sources: cli.EnvVars("ASKCTL_URL")},
		&cli.StringFlag{Name: "token", Usage: "the bridge's token (default: the state directory's token file)", Destination: &c.token, Sources: cli.EnvVars("ASKCTL_TOKEN")},
		&cli.StringFlag{Name: "state", Usage: "the bridge's state directory", Destination: &c.state, Sources: cli.EnvVars(bridgeapi.EnvStateDir)},
	}
}

// client is the reference bridge's API client, its URL and token resolved.
func (c *bridgeConn) client(s *stdio) (*bridgeapi.Client, error) {
	dir := c.state
	if dir == "" && (c.url == "" || c.token == "") {
		var err error
		if dir, err = bridgeapi.StateDir(s.getenv); err != nil {
			return nil, err
		}
	}
	url, token := c.url, c.token
	if url == "" {
		e, err := bridgeapi.ReadEndpoint(dir)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil, fmt.Errorf("%w: no bridge is running with state directory %s (start one with askctl serve, or pass --url)", bridgeapi.ErrUnreachable, dir)
			}
			return nil, fmt.Errorf("%w: %v", bridgeapi.ErrUnreachable, err)
		}
		url = e.URL
	}
	if token == "" {
		t, err := bridgeapi.ReadToken(dir)
		if err != nil {
			return nil, fmt.Errorf("%w: no token: %v (pass --token or ASKCTL_TOKEN)", bridgeapi.ErrUnauthorized, err)
		}
		token = t
	}
	return &bridgeapi.Client{URL: url, Token: token}, nil
}

// surfaceSpec is the surface the person is played through.
func (c *bridgeConn) surfaceSpec(s *stdio) (surface.Spec, error) {
	if c.profile == "" {
		api, err := c.client(s)
		if err != nil {
			return surface.Spec{}, err
		}
		return surface.Spec{Kind: "http", URL: api.URL, Token: api.Token}, nil
	}
	p, err := loadProfile(c.profile)
	if err != nil {
		return surface.Spec{}, err
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
			return surface.Spec{}, fmt.Errorf("%w: no bridge is running with state directory %s (start one with askctl serve, or pass --state)", bridgeapi.ErrUnreachable, vars["STATE"])
		}
		return surface.Spec{}, usagef("--bridge %s: the surface uses ${%s}, which nobody set: set it in the environment (or use a profile with the address written out)", c.profile, strings.Join(unset, "}, ${"))
	}
	return p.Expanded(vars).Surface, nil
}

// person is one open connection to the bridge's surface.
type person struct {
	surf surface.Surface
	surface.Conn
}

// open connects to session ("" for every session), with events to sink,
// and returns once the connection has heard what was pending.
func (c *bridgeConn) open(ctx context.Context, s *stdio, session string, sink func(surface.Event)) (*person, error) {
	spec, err := c.surfaceSpec(s)
	if err != nil {
		return nil, err
	}
	surf, err := surface.New(spec)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", bridgeapi.ErrUnreachable, err)
	}
	if sink == nil {
		sink = func(surface.Event) {}
	}
	conn, err := surf.Open(ctx, session, sink)
	if err != nil {
		surf.Close()
		return nil, surfaceErr(err)
	}
	p := &person{surf: surf, Conn: conn}
	if err := conn.Sync(ctx); err != nil {
		p.Close()
		return nil, surfaceErr(err)
	}
	return p, nil
}

func (p *person) Close() error {
	err := p.Conn.Close()
	p.surf.Close()
	return err
}

// find is question id as the surface shows it; ok is false when it is not
// pending there.
func (p *person) find(ctx context.Context, id string) (surface.Pending, bool, error) {
	ps, err := p.Pending(ctx)
	if err != nil {
		return surface.Pending{}, false, surfaceErr(err)
	}
	for _, q := range ps {
		if q.QuestionID == id {
			return q, true, nil
		}
	}
	return surface.Pending{}, false, nil
}

// surfaceErr maps a surface's refusal to the errors the exit statuses know.
func surfaceErr(err error) error {
	var rj *surface.Rejected
	if !errors.As(err, &rj) {
		if err != nil && !errors.Is(err, bridgeapi.ErrUnreachable) && !errors.Is(err, bridgeapi.ErrUnauthorized) && !errors.Is(err, context.Canceled) {
			return fmt.Errorf("%w: %v", bridgeapi.ErrUnreachable, err)
		}
		return err
	}
	code := rj.Code
	switch code { // a refused WebSocket upgrade says its HTTP status
	case "404":
		code = "not_found"
	case "401", "403":
		code = "unauthorized"
	}
	sentinel := bridgeapi.ErrorOf(code)
	if sentinel == nil {
		// The bridge failed (internal) or said something this askctl does
		// not know: an error, not a rejected answer.
		return fmt.Errorf("the bridge refused (%s): %s", rj.Code, rj.Message)
	}
	if strings.Contains(rj.Message, sentinel.Error()) {
		return refusal{msg: rj.Message, err: sentinel} // says it already
	}
	return fmt.Errorf("%w: %s", sentinel, rj.Message)
}

// refusal is a bridge's message as it is, that is also sentinel err.
type refusal struct {
	msg string
	err error
}

func (r refusal) Error() string { return r.msg }
func (r refusal) Unwrap() error { return r.err }

// loadProfile reads --bridge: an embedded reference profile by name, or a
// file.
func loadProfile(name string) (*profile.Profile, error) {
	if p, ok, err := profile.Builtin(name); ok {
		return p, err
	}
	p, err := profile.Load(name)
	if errors.Is(err, os.ErrNotExist) {
		return nil, usagef("--bridge %s: no such profile file (built in: %s)", name, strings.Join(profile.Builtins(), ", "))
	}
	if err != nil {
		return nil, usageError{err}
	}
	return p, nil
}
