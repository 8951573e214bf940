package main

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"text/template"

	"github.com/askctl/askctl/profile"
	"github.com/urfave/cli/v3"
)

//go:embed initdata
var initData embed.FS

type initOptions struct {
	dir     string
	name    string
	adapter string
	force   bool
	json    bool
	io      *stdio
}

func newInitCmd(s *stdio, runF func(context.Context, *initOptions) error) *cli.Command {
	o := &initOptions{io: s}
	if runF == nil {
		runF = runInit
	}
	return &cli.Command{
		Name:      "init",
		Usage:     "write a starter profile and exec adapter for checking your bridge with askctl conformance",
		ArgsUsage: "[DIR]",
		Description: `Writes into DIR (default: the current directory) what askctl conformance needs
to check a bridge of yours over any surface (Slack, WhatsApp, a web chat, an
IDE): a profile, askctl-profile.json (how to start your bridge, how it spawns
the claude CLI, what it claims), and an exec adapter that plays the person on
your surface: askctl-adapter.py (Python 3, standard library), or with
--adapter go, askctl-adapter/main.go (standard library).

Every place to fill in says TODO. Until an operation of the adapter is
written it replies "unsupported", and the suite says which: until start is
written no case can run (each is NOT-RUN, naming it, exit status 3); after
that, a case that needs a missing operation is a SKIP that names it, never a
FAIL. It refuses to overwrite a file unless --force.

Examples:
  askctl init
  askctl init --adapter go --name "our Slack bridge" ci/askctl
  askctl conformance --bridge askctl-profile.json    # then, after filling in`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "name", Usage: "what the reports call your bridge (default: DIR's name)", Destination: &o.name},
			&cli.StringFlag{Name: "adapter", Usage: "the adapter's language: python or go", Value: "python", Destination: &o.adapter},
			&cli.BoolFlag{Name: "force", Usage: "overwrite files that exist", Destination: &o.force},
			&cli.BoolFlag{Name: "json", Usage: "print the files written as JSON", Destination: &o.json},
		},
		Before: func(ctx context.Context, cmd *cli.Command) (context.Context, error) {
			switch cmd.Args().Len() {
			case 0:
				o.dir = "."
			case 1:
				o.dir = cmd.Args().First()
			default:
				return ctx, usagef("init takes one DIR, got %d arguments", cmd.Args().Len())
			}
			if o.adapter != "python" && o.adapter != "go" {
				return ctx, usagef("--adapter: want python or go, got %q", o.adapter)
			}
			return ctx, nil
		},
		Action: func(ctx context.Context, cmd *cli.Command) error { return runF(ctx, o) },
	}
}

// initVars fill the templates.
type initVars struct {
	Name        string // the bridge's, in reports
	Profile     string // the profile's file name
	Adapter     string // the adapter's path from the profile's directory
	AdapterBase string // the Go adapter's command name
	Command     string // surface.command
	Args        []string
}

type initFile struct {
	Path string `json:"path"`
	What string `json:"what"`
}

func runInit(ctx context.Context, o *initOptions) error {
	abs, err := filepath.Abs(o.dir)
	if err != nil {
		return err
	}
	if o.name == "" {
		o.name = filepath.Base(abs) + " bridge"
	}
	v := initVars{Name: o.name, Profile: "askctl-profile.json", AdapterBase: "askctl-adapter"}
	type out struct {
		rel, tmpl, what string
		mode            fs.FileMode
	}
	files := []out{{v.Profile, "profile.json", "the profile: how to start your bridge, how it spawns claude, what it claims", 0o644}}
	if o.adapter == "go" {
		v.Adapter = "askctl-adapter/main.go"
		v.Command, v.Args = "${PROFILE_DIR}/askctl-adapter/askctl-adapter", nil
		files = append(files, out{v.Adapter, "adapter.go.txt", "the exec adapter (build it: go build -o askctl-adapter/askctl-adapter askctl-adapter/main.go)", 0o644})
	} else {
		v.Adapter = "askctl-adapter.py"
		v.Command, v.Args = "python3", []string{"${PROFILE_DIR}/askctl-adapter.py"}
		files = append(files, out{v.Adapter, "adapter.py", "the exec adapter", 0o755})
	}
	// Every file is made before any is written: a refusal writes nothing.
	made := make([][]byte, len(files))
	for i, f := range files {
		path := filepath.Join(o.dir, f.rel)
		if _, err := os.Stat(path); err == nil && !o.force {
			return usagef("%s exists (--force overwrites it)", path)
		}
		if made[i], err = renderInit(f.tmpl, v); err != nil {
			return err
		}
	}
	// What it writes is a profile askctl takes as it is.
	if _, err := profile.Parse(filepath.Join(o.dir, v.Profile), made[0]); err != nil {
		return fmt.Errorf("askctl init wrote a profile it cannot read (a bug of askctl's): %w", err)
	}
	var written []initFile
	for i, f := range files {
		path := filepath.Join(o.dir, f.rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, made[i], f.mode); err != nil {
			return err
		}
		written = append(written, initFile{Path: path, What: f.what})
	}
	if o.json {
		return printJSON(o.io.out, map[string]any{"files": written})
	}
	w := o.io.out
	for _, f := range written {
		fmt.Fprintf(w, "wrote %s: %s\n", f.Path, f.What)
	}
	profile := filepath.Join(o.dir, v.Profile)
	fmt.Fprintf(w, `
Next, fill in each TODO:
  1. %s: "start" (your bridge's command; ${PORT} is a free port, ${STATE}
     a fresh directory, ${TIMEOUT} the question timeout it declares),
     "ready" (a URL that answers 2xx once it serves), "claude" (how your
     bridge is told the CLI's path: ${CLAUDE} goes there), "capabilities"
     (only what it does), and "surface.args" (what your adapter needs to
     reach the bridge: it gets http://127.0.0.1:${PORT} and ${STATE}).
  2. %s: each operation, on your surface.
  3. askctl conformance --bridge %s -v
The profile's fields and the adapter's contract: conformance/README.md in
askctl's repository ("A profile", "The exec contract"); its worked example,
examples/exec/reference_surface.py.
`, profile, filepath.Join(o.dir, v.Adapter), profile)
	return nil
}

func renderInit(name string, v initVars) ([]byte, error) {
	src, err := initData.ReadFile("initdata/" + name)
	if err != nil {
		return nil, err
	}
	t, err := template.New(name).Funcs(template.FuncMap{"json": jsonString}).Parse(string(src))
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := t.Execute(&b, v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// jsonString is s as a JSON string.
func jsonString(s string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		panic(errors.New("a string always encodes"))
	}
	return strings.TrimSpace(b.String())
}
