package claudecli

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Flags are the CLI's flags, as claude 2.1.330 reads them. ParseArgs
// accepts every flag the official SDKs pass, in both the "--flag=value" form
// (TypeScript) and the "--flag value" form (Python); flags it does not know
// are kept in Unknown, never an error, because bridges pass their own.
type Flags struct {
	Print                bool
	Verbose              bool
	InputFormat          string
	OutputFormat         string
	PermissionPromptTool string
	PermissionMode       string
	Model                string
	Tools                []string // nil: the default set
	AllowedTools         []string
	DisallowedTools      []string
	MCPConfig            []string
	Resume               string // --resume ID: continue that session
	ResumeGiven          bool   // --resume was given, with a value or not
	ReplayUserMessages   bool   // echo each prompt (isReplay) and each control_response received
	Continue             bool   // --continue: resume the directory's latest session
	ForkSession          bool   // --fork-session: a resumed conversation gets a new session id
	SessionID            string // --session-id: the session id to use
	NoSessionPersistence bool   // write no session file
	Prompt               string // the prompt argument of -p (the first word that is not a flag)
	Version              bool
	Help                 bool
	Unknown              []string // flags the CLI does not know, as given
	Ignored              []string // known flags that change nothing here

	promptSeen bool
}

// PrintMode reports whether the flags ask for a one-shot print session
// (claude -p "prompt"): -p without --input-format stream-json.
func (f Flags) PrintMode() bool { return f.Print && f.InputFormat != "stream-json" }

// Subcommands are the CLI's own commands (claude doctor, claude mcp list,
// …): none of them starts a session with the model.
var Subcommands = []string{"agents", "attach", "auth", "auto-mode", "doctor", "gateway", "import", "install", "logs", "mcp",
	"plugin", "plugins", "purge", "respawn", "rm", "setup-token", "stop", "kill", "ultrareview", "update", "upgrade"}

// Session reports whether the flags start a session with the model: not
// --version, --help, nor one of the CLI's own subcommands (a bridge's
// install check, `claude doctor`), which a harness must not count as a
// session.
func (f Flags) Session() bool {
	if f.Version || f.Help {
		return false
	}
	return f.Print || !slices.Contains(Subcommands, f.Prompt)
}

// Resumes reports whether the flags continue an earlier session (--resume
// or --continue): the CLI then sends the whole conversation again.
func (f Flags) Resumes() bool { return f.Resume != "" || f.Continue }

// Denied reports whether --disallowedTools names tool t.
func (f Flags) Denied(t string) bool { return slices.Contains(f.DisallowedTools, t) }

// The flags of claude 2.1.330 (its --help, and the ones the SDKs pass that
// it does not list), so that none is reported as unknown.

// boolFlags take no value.
var boolFlags = map[string]bool{
	"-p": true, "--print": true, "--verbose": true,
	"--ax-screen-reader": true, "--bare": true, "--bg": true, "--brief": true, "--chrome": true, "--no-chrome": true,
	"--desktop": true, "--disable-slash-commands": true, "--exclude-dynamic-system-prompt-sections": true,
	"--forward-subagent-text": true, "--ide": true, "--no-session-persistence": true, "--restricted": true,
	"--safe-mode": true, "--tmux": true,
	"--strict-mcp-config": true, "--continue": true, "-c": true, "--fork-session": true,
	"--include-partial-messages": true, "--include-hook-events": true,
	"--allow-dangerously-skip-permissions": true, "--dangerously-skip-permissions": true,
	"--await-initialize": true, "--replay-user-messages": true, "--session-mirror": true,
	"--init-only": true, "-v": true, "--version": true, "-h": true, "--help": true,
}

// valueFlags take one value.
var valueFlags = map[string]bool{
	"--output-format": true, "--input-format": true, "--permission-prompt-tool": true,
	"--permission-prompts": true, "--mcp-config": true, "--allowedTools": true, "--allowed-tools": true,
	"--disallowedTools": true, "--disallowed-tools": true, "--tools": true, "--permission-mode": true,
	"--model": true, "--fallback-model": true, "--max-turns": true, "--max-budget-usd": true,
	"--task-budget": true, "--session-id": true, "--resume-session-at": true,
	"--resume-drops-turn": true, "--setting-sources": true, "--settings": true, "--add-dir": true,
	"--json-schema": true, "--betas": true, "--effort": true, "--thinking": true,
	"--max-thinking-tokens": true, "--plugin-dir": true, "--system-prompt": true,
	"--append-system-prompt": true, "--agents": true, "--sdk-url": true, "--debug-file": true,
	"--append-system-prompt-file": true, "--system-prompt-file": true, "--agent": true, "--autocompact": true,
	"--environment": true, "--file": true, "--name": true, "-n": true, "--plugin-url": true,
	"--remote-control-session-name-prefix": true, "--system-prompt-snapshot": true,
}

// optionalFlags take a value when the next word is not a flag.
var optionalFlags = map[string]bool{
	"--debug": true, "-d": true, "--cloud": true, "--from-pr": true, "--prompt-suggestions": true,
	"--remote-control": true, "--teleport": true, "--worktree": true, "-w": true, "--resume": true, "-r": true,
}

// ParseArgs reads the arguments after the program name.
func ParseArgs(args []string) (Flags, error) {
	f := Flags{PermissionMode: "default"}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") || a == "-" {
			// The prompt (print mode); a second word is not one.
			if f.Prompt == "" && !f.promptSeen {
				f.Prompt, f.promptSeen = a, true
			} else {
				f.Unknown = append(f.Unknown, a)
			}
			continue
		}
		name, val, hasVal := strings.Cut(a, "=")
		switch {
		case boolFlags[name]:
			if hasVal {
				return f, fmt.Errorf("flag %s takes no value, got %q", name, a)
			}
		case valueFlags[name]:
			if !hasVal {
				if i+1 >= len(args) {
					return f, fmt.Errorf("flag %s needs a value", name)
				}
				i++
				val = args[i]
			}
		case optionalFlags[name]:
			if !hasVal && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				i++
				val = args[i]
			}
		default:
			// Unknown: take the next word as its value when it is not a flag.
			if !hasVal && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				i++
				a += " " + args[i]
			}
			f.Unknown = append(f.Unknown, a)
			continue
		}
		switch name {
		case "-p", "--print":
			f.Print = true
		case "--verbose":
			f.Verbose = true
		case "-v", "--version":
			f.Version = true
		case "-h", "--help":
			f.Help = true
		case "--input-format":
			f.InputFormat = val
		case "--output-format":
			f.OutputFormat = val
		case "--permission-prompt-tool":
			f.PermissionPromptTool = val
		case "--permission-mode":
			f.PermissionMode = val
		case "--model":
			f.Model = val
		case "--tools":
			f.Tools = splitTools(val)
			if f.Tools == nil {
				f.Tools = []string{}
			}
		case "--allowedTools", "--allowed-tools":
			f.AllowedTools = append(f.AllowedTools, splitTools(val)...)
		case "--disallowedTools", "--disallowed-tools":
			f.DisallowedTools = append(f.DisallowedTools, splitTools(val)...)
		case "--mcp-config":
			f.MCPConfig = append(f.MCPConfig, val)
		case "--resume", "-r":
			f.Resume, f.ResumeGiven = val, true
		case "--replay-user-messages":
			f.ReplayUserMessages = true
		case "--continue", "-c":
			f.Continue = true
		case "--no-session-persistence":
			f.NoSessionPersistence = true
		case "--fork-session":
			f.ForkSession = true
		case "--session-id":
			f.SessionID = val
		default:
			f.Ignored = append(f.Ignored, name)
		}
	}
	return f, nil
}

// splitTools splits a tool list the way the CLI does: commas or spaces.
func splitTools(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' })
}

// ToolAllowed reports whether tool t is in the session's tool set.
func (f Flags) ToolAllowed(t string) bool {
	if f.Denied(t) {
		return false
	}
	return f.Tools == nil || (len(f.Tools) == 1 && f.Tools[0] == "default") || slices.Contains(f.Tools, t)
}

// Validate applies the CLI's own checks on the stream-json flags; the
// messages are the CLI's, word for word (capitalized, with their stops).
func (f Flags) Validate() error {
	if f.InputFormat == "stream-json" && f.OutputFormat != "stream-json" {
		//lint:ignore ST1005 the real CLI's message, word for word (its stop)
		return fmt.Errorf("Error: --input-format=stream-json requires output-format=stream-json.")
	}
	if f.OutputFormat == "stream-json" && !f.Verbose {
		return fmt.Errorf("Error: When using --print, --output-format=stream-json requires --verbose")
	}
	if f.InputFormat != "" && f.InputFormat != "stream-json" && f.InputFormat != "text" {
		return fmt.Errorf("Error: Invalid input format %q", f.InputFormat)
	}
	return nil
}

// PreAllowed reports whether --allowedTools lets MCP tool tool of server
// run without asking: its full name mcp__<server>__<tool>, mcp__<server>,
// or mcp__<server>__*.
func (f Flags) PreAllowed(server, tool string) bool {
	name := "mcp__" + server + "__" + tool
	for _, a := range f.AllowedTools {
		if a == name || a == "mcp__"+server || a == "mcp__"+server+"__*" {
			return true
		}
	}
	return false
}

// helpFlag is a flag as a CLI's --help lists it: "  --name …" or
// "  -x, --name …".
var helpFlag = regexp.MustCompile(`(?m)^\s+(?:-[a-zA-Z], )?(--[a-zA-Z][a-zA-Z-]*)`)

// UnknownFlags lists the flags a CLI's --help text names that ParseArgs
// does not know: a release that adds a flag needs ParseArgs taught it.
func UnknownFlags(help string) []string {
	var out []string
	for _, m := range helpFlag.FindAllStringSubmatch(help, -1) {
		f := m[1]
		if f == "--help" || f == "--version" || slices.Contains(out, f) {
			continue
		}
		if got, err := ParseArgs([]string{f, "x", "--verbose"}); err != nil || len(got.Unknown) > 0 {
			out = append(out, f)
		}
	}
	return out
}
