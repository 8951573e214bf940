package conformance

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/askctl/askctl/claudecli"
	"github.com/askctl/askctl/claudecli/mcpclient"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rogpeppe/go-internal/testscript"
	"github.com/tidwall/gjson"
)

// Commands of route MCP: the bridge's ask_user server as the CLI sees it.

// cmdToolResult checks what the current question's ask_user call returned
// to the agent: an answer (no isError) naming each TEXT, or with -error an
// error result. TEXT is a substring, or ~REGEXP. With !, no TEXT may appear.
func cmdToolResult(ts *testscript.TestScript, neg bool, args []string) {
	f, args := flags(ts, args, []string{"timeout"}, []string{"error"})
	if len(args) < 1 {
		ts.Fatalf("usage: [!] tool-result [-error] [-timeout D] ALIAS [TEXT|~REGEXP…]")
	}
	e := envOf(ts)
	alias, wants := args[0], args[1:]
	s, _ := mustCurrent(ts, e, "tool-result", alias)
	ctx, cancel := waitCtx(ts, duration(ts, f["timeout"], "10s"))
	defer cancel()
	text, isErr, err := s.ToolResult(ctx)
	if err != nil {
		fail(ts, "%v\n%s", err, summary(e, alias))
	}
	ts.Logf("ask_user returned (is_error %v): %s", isErr, text)
	switch {
	case f["error"] != "" && !isErr:
		fail(ts, "the ask_user call returned success (%q); it must return isError\n%s", text, summary(e, alias))
	case f["error"] == "" && !neg && isErr:
		fail(ts, "the ask_user call returned an error (%q); it must return the answer\n%s", text, summary(e, alias))
	case strings.TrimSpace(text) == "" && !neg:
		fail(ts, "the ask_user call returned no text\n%s", summary(e, alias))
	}
	for _, w := range wants {
		found := strings.Contains(text, w)
		if re, ok := strings.CutPrefix(w, "~"); ok {
			rx, err := regexp.Compile(re)
			if err != nil {
				ts.Fatalf("tool-result: %q: %v", w, err)
			}
			found = rx.MatchString(text)
		}
		switch {
		case neg && found && f["error"] != "":
			fail(ts, "the ask_user result %q names %q; it must not: it says how the question ended, and no other end", text, w)
		case neg && found:
			fail(ts, "the ask_user result %q names %q; it must not (another session's answer?)", text, w)
		case !neg && !found && strings.HasPrefix(w, "~"):
			fail(ts, "the ask_user result %q does not match %q (byte for byte, where it names the person's own words)\n%s", text, w[1:], summary(e, alias))
		case !neg && !found:
			fail(ts, "the ask_user result %q does not name %q\n%s", text, w, summary(e, alias))
		}
	}
}

// cmdMCPList connects to the bridge's MCP server as the profile's
// --mcp-config says, with the official MCP SDK's client, and checks its
// ask_user tool's input schema.
func cmdMCPList(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: mcp-list")
	}
	e := envOf(ts)
	spec := e.Bridge().Profile().MCP
	if spec == nil {
		ts.Fatalf("mcp-list: the profile has no mcp section")
	}
	servers, err := claudecli.ParseMCPConfig([]string{string(spec.Config)})
	if err != nil {
		fail(ts, "mcp.config: %v", err)
	}
	var srv *claudecli.MCPServer
	for i := range servers {
		if servers[i].Name == spec.Server {
			srv = &servers[i]
		}
	}
	if srv == nil {
		fail(ts, "mcp.config has no server %s", spec.Server)
	}
	ctx, cancel := waitCtx(ts, 20*time.Second)
	defer cancel()
	cs, err := mcpclient.Connect(ctx, *srv, spec.Env, e.Bridge().Var("WORK"))
	if err != nil {
		fail(ts, "connecting to MCP server %s as the CLI does: %v", spec.Server, err)
	}
	defer cs.Close()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		fail(ts, "tools/list on %s: %v", spec.Server, err)
	}
	var tool *mcp.Tool
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
		if tl.Name == spec.Tool {
			tool = tl
		}
	}
	if tool == nil {
		fail(ts, "tools/list on %s offers %v; no %s", spec.Server, names, spec.Tool)
	}
	raw, _ := json.Marshal(tool.InputSchema)
	schema := gjson.ParseBytes(raw)
	ts.Logf("%s input schema: %s", spec.Tool, schema.Raw)
	var problems []string
	want := func(ok bool, format string, args ...any) {
		if !ok {
			problems = append(problems, fmt.Sprintf(format, args...))
		}
	}
	// A type is a name or a list of names (the Go SDK writes ["null","array"]
	// for an optional list).
	typeIs := func(v gjson.Result, t string) bool {
		if v.IsArray() {
			for _, x := range v.Array() {
				if x.String() == t {
					return true
				}
			}
			return false
		}
		return v.String() == t
	}
	want(typeIs(schema.Get("properties.question.type"), "string"), "question: want a string property")
	required := false
	schema.Get("required").ForEach(func(_, v gjson.Result) bool {
		required = required || v.String() == "question"
		return true
	})
	want(required, "question: want it required")
	opts := schema.Get("properties.options")
	want(typeIs(opts.Get("type"), "array"), "options: want an array property")
	item := opts.Get("items")
	want(typeIs(item.Get("properties.label.type"), "string"), "options[].label: want a string (options are objects with label and description)")
	want(item.Get("properties.description").Exists(), "options[].description: want it offered")
	// An option is a label, and maybe a description: a schema that lets
	// the label out lets the model offer a choice the person cannot see.
	itemRequired := map[string]bool{}
	for _, r := range item.Get("required").Array() {
		itemRequired[r.String()] = true
	}
	want(itemRequired["label"], "options[].label: want it required (an option without a label is a blank choice)")
	want(!itemRequired["description"], "options[].description: required, want it optional")
	want(typeIs(schema.Get("properties.multiSelect.type"), "boolean"), "multiSelect: want a boolean property")
	for _, r := range schema.Get("required").Array() {
		want(r.String() == "question", "%s: required, want only question required", r.String())
	}
	if len(problems) > 0 {
		fail(ts, "the %s tool's input schema:\n  %s\nschema: %s", spec.Tool, strings.Join(problems, "\n  "), schema.Raw)
	}
}
