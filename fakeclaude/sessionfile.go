package fakeclaude

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/askctl/askctl/claudecli"
	"github.com/askctl/askctl/internal/uuid"
	"github.com/askctl/askctl/protocol"
	"github.com/askctl/askctl/scenarios"
	"github.com/tidwall/gjson"
)

// This file is the session file, as the real CLI keeps it: the conversation
// written to <config dir>/projects/<cwd with every non-alphanumeric turned
// into "-">/<session id>.jsonl, a row per entry, appended as the session
// goes. Bridges read it: to rebuild a chat after a reload, or to tell
// whether a session id belongs to a directory before passing --resume.
//
// fakeclaude writes the rows a reader of the conversation uses, with the
// real rows' keys: the queue operations, each user and assistant entry
// (uuid, parentUuid chain, sessionId, cwd, timestamp, message, …), the tools
// used, the last prompt and the cost state. It leaves out what holds the
// CLI's own system prompt, environment and API request bodies (attachment,
// api-request*, atis-latch rows); the fidelity check counts those as left
// out.

// configDir is CLAUDE_CONFIG_DIR, else ~/.claude.
func (f *fake) configDir() string { return claudecli.ConfigDir(f.getenv, f.home) }

// sessionLog appends rows to the session file. A failure to write is noted
// once and ends the writing, never the session.
type sessionLog struct {
	f       *fake
	path    string
	file    *os.File
	off     bool
	leaf    string // uuid of the last conversation row: the next row's parentUuid
	prompt  string // promptId of the turn
	prompts int    // prompts in the session
	lastMsg string // the last prompt's text
	tools   []string
	// lastTool is the tool of the last tool_use; mcpResult, the MCP tool
	// whose result was the last row (the next assistant row names it).
	lastTool  string
	mcpResult string
	// shutdown marks the rows written because stdin closed mid-question.
	shutdown    bool
	stdinClosed bool // the next tool result is of a request stdin closed on (claudecli.StdinCloseCancels)
	promptSaved bool // the turn's last prompt was saved
	// resumed: the session goes on from a file; leafType is the type of
	// its last conversation row.
	resumed  bool
	leafType string
	// toolRows are the assistant rows of this run's tool calls, by tool_use
	// id: a tool_result row's parent is its call's row (calls of one model
	// response end in any order).
	toolRows map[string]toolRow
}

type toolRow struct{ uuid, name string }

// openSession decides where the session file is, and, for a resumed
// session, reads the leaf of its conversation. It reports false when the
// session cannot go on (a --resume of a session that is not there).
func (f *fake) openSession() bool {
	off := f.flags.NoSessionPersistence || (f.getenv != nil && f.getenv(EnvNoSessionFile) == "1")
	l := &sessionLog{f: f, off: off, path: claudecli.SessionFile(f.configDir(), f.cwd, f.sessionID)}
	f.session = l
	if f.flags.Resume == "" && !f.flags.ResumeGiven {
		return true
	}
	if !uuid.Valid(f.flags.Resume) {
		// Not a session id (nor a path: session ids are settled as UUIDs
		// before anything is read or written).
		f.resumeFailed(fmt.Sprintf("Error: --resume requires a valid session ID or session title when used with --print. Usage: claude -p --resume <session-id|title>. Provided value %q is not a UUID and does not match any session title.", f.flags.Resume))
		return false
	}
	// The conversation to go on from: the session's file, in this
	// directory's project or, as the CLI finds it, any other's.
	from := claudecli.SessionFile(f.configDir(), f.cwd, f.flags.Resume)
	if _, err := os.Stat(from); err != nil {
		if m, _ := filepath.Glob(filepath.Join(f.configDir(), "projects", "*", f.flags.Resume+".jsonl")); len(m) > 0 {
			from = m[0]
		}
	}
	data, err := os.ReadFile(from)
	if err != nil {
		// Missing or unreadable: the CLI finds no conversation.
		f.resumeFailed("No conversation found with session ID: " + f.flags.Resume)
		return false
	}
	if !f.flags.ForkSession {
		l.path = from // appended where it is, whatever the directory
	}
	l.goOn(data, f.flags.ForkSession)
	return true
}

// resumeFailed ends a session whose --resume names no session, as the CLI
// does: the message on stderr, an error result on stdout, exit 1.
func (f *fake) resumeFailed(msg string) {
	f.fail(ExitErrorResult, "session", "%s", msg)
	if f.flags.OutputFormat == "stream-json" {
		f.send(obj{{"type", protocol.TypeResult}, {"subtype", protocol.ResultErrorDuringExecution}, {"duration_ms", 0}, {"duration_api_ms", 0},
			{"is_error", true}, {"num_turns", 0}, {"stop_reason", nil}, {"session_id", f.sessionID}, {"total_cost_usd", 0}, {"usage", usageOf(0)},
			{"modelUsage", obj{}}, {"permission_denials", []any{}}, {"uuid", uuid.New()}, {"errors", []string{msg}}, {"result_index", 0}})
	}
}

// goOn reads the conversation a resumed session goes on from, in one pass:
// where it ends, and how many prompts it holds; a fork (--fork-session)
// also copies each row into its own file, under its own session id.
func (l *sessionLog) goOn(data []byte, fork bool) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		if fork {
			if row, err := orderedObject(sc.Bytes()); err == nil {
				for i := range row {
					if row[i].k == "sessionId" {
						row[i].v = l.f.sessionID
					}
				}
				l.write(row)
			}
		}
		r := gjson.ParseBytes(sc.Bytes())
		switch r.Get("type").String() {
		case protocol.TypeUser, protocol.TypeAssistant:
			l.leaf, l.leafType, l.resumed = r.Get("uuid").String(), r.Get("type").String(), true
			if r.Get("turnPosition").Exists() {
				l.prompts++ // a prompt row
			}
		}
	}
}

func (l *sessionLog) write(row obj) {
	if l == nil || l.off {
		return
	}
	if l.file == nil {
		if err := os.MkdirAll(filepath.Dir(l.path), 0o700); err != nil {
			l.broken(err)
			return
		}
		file, err := os.OpenFile(l.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			l.broken(err)
			return
		}
		l.file = file
	}
	b, err := l.f.encodeAs(row, true)
	if err != nil {
		l.broken(err)
		return
	}
	if _, err := l.file.Write(append(b, '\n')); err != nil {
		l.broken(err)
	}
}

func (l *sessionLog) broken(err error) {
	l.off = true
	l.f.note("session file %s not written: %v", l.path, err)
}

func (l *sessionLog) close() {
	if l != nil && l.file != nil {
		_ = l.file.Close()
	}
}

// common are the keys every conversation row ends with.
func (l *sessionLog) common() obj {
	return obj{{"userType", "external"}, {"entrypoint", "sdk-cli"}, {"cwd", l.f.cwd}, {"sessionId", l.f.sessionID},
		{"version", l.f.release.Version}, {"gitBranch", "HEAD"}}
}

// queued writes the queue operations of a prompt taken from stdin.
func (l *sessionLog) queued(text string) {
	ts := l.f.timestamp()
	l.write(obj{{"type", "queue-operation"}, {"operation", "enqueue"}, {"timestamp", ts}, {"sessionId", l.f.sessionID}, {"content", text}})
	l.write(obj{{"type", "queue-operation"}, {"operation", "dequeue"}, {"timestamp", ts}, {"sessionId", l.f.sessionID}})
}

// promptRow writes the user's prompt, which starts a turn.
func (l *sessionLog) promptRow(content json.RawMessage, text string) {
	if l == nil {
		return
	}
	l.prompt, l.lastMsg, l.tools, l.shutdown, l.promptSaved = uuid.New(), text, nil, false, false
	if l.resumed && l.leafType == protocol.TypeUser {
		// A conversation that ended on the user's side (an interrupted
		// turn) gets the CLI's synthetic assistant reply before it goes on.
		l.synthetic()
	}
	l.leafType = protocol.TypeUser
	id := uuid.New()
	row := obj{{"parentUuid", nullable(l.leaf)}, {"isSidechain", false}, {"promptId", l.prompt}, {"type", protocol.TypeUser},
		{"message", obj{{"role", "user"}, {"content", content}}}, {"uuid", id}, {"timestamp", l.f.timestamp()},
		{"permissionMode", l.f.flags.PermissionMode}, {"promptSource", "sdk"}, {"turnOrigin", "sdk"},
		{"turnPosition", obj{{"promptIndex", l.prompts}, {"turnIndex", l.prompts + 1}}}}
	l.prompts++
	l.leaf = id
	l.write(append(row, l.common()...))
}

// message writes a conversation row for a message fakeclaude sent on
// stdout: an assistant message, a tool result, or a user text.
func (l *sessionLog) message(b []byte) {
	if l == nil || l.off {
		return
	}
	m := gjson.ParseBytes(b)
	switch m.Get("type").String() {
	case protocol.TypeAssistant:
		l.assistant(m)
	case protocol.TypeUser:
		if m.Get("isReplay").Bool() {
			return
		}
		l.user(m)
	}
}

func (l *sessionLog) assistant(m gjson.Result) {
	msg := m.Get("message")
	toolUse := msg.Get(`content.#(type=="tool_use")`)
	stop := "end_turn"
	if toolUse.Exists() {
		stop = "tool_use"
		l.lastTool = toolUse.Get("name").String()
		if name := toolUse.Get("name").String(); !slices.Contains(l.tools, name) {
			l.tools = append(l.tools, name)
			l.write(obj{{"type", "tools-used"}, {"tools", l.tools}, {"sessionId", l.f.sessionID}})
		}
	}
	message := obj{{"content", json.RawMessage(msg.Get("content").Raw)}, {"id", msg.Get("id").String()}, {"model", msg.Get("model").String()},
		{"role", "assistant"}, {"stop_reason", stop}, {"stop_sequence", nil}, {"type", "message"}, {"usage", usageOf(1)}, {"stop_details", nil}}
	row := obj{{"parentUuid", nullable(l.leaf)}, {"isSidechain", false}, {"message", message}}
	if toolUse.Exists() {
		row = append(row, kv{"toolInputStreamMs", 1})
	}
	id := m.Get("uuid").String()
	row = append(row, kv{"apiBlockIndex", 0}, kv{"requestRef", uuid.New()}, kv{"requestedModel", l.f.model}, kv{"promptCacheRequested", "5m"})
	if server, tool, ok := scenarios.SplitMCPName(l.mcpResult); ok {
		row = append(row, kv{"attributionMcpServer", server}, kv{"attributionMcpTool", tool})
	}
	l.mcpResult = ""
	row = append(row, kv{"type", protocol.TypeAssistant}, kv{"uuid", id}, kv{"timestamp", m.Get("timestamp").String()})
	if l.f.model == l.f.defaultModel() {
		// The default model runs at an effort level, and says so.
		row = append(row, kv{"effort", "medium"}, kv{"perTurnEffort", "medium"})
	} else {
		row = append(row, kv{"perTurnEffort", nil})
	}
	row = append(row, kv{"madeBy", "model"})
	l.leaf = id
	if toolUse.Exists() {
		if l.toolRows == nil {
			l.toolRows = map[string]toolRow{}
		}
		l.toolRows[toolUse.Get("id").String()] = toolRow{uuid: id, name: toolUse.Get("name").String()}
	}
	l.write(append(row, l.common()...))
	if toolUse.Exists() && !l.promptSaved {
		// The CLI saves the last prompt soon after the turn's first tool
		// call (on a timer), and again when the turn ends.
		l.promptSaved = true
		l.lastPrompt()
	}
}

func (l *sessionLog) lastPrompt() {
	l.write(obj{{"type", "last-prompt"}, {"lastPrompt", l.lastMsg}, {"leafUuid", l.leaf}, {"sessionId", l.f.sessionID}})
}

func (l *sessionLog) user(m gjson.Result) {
	id := m.Get("uuid").String()
	block := m.Get(`message.content.0`)
	isResult := block.Get("type").String() == "tool_result"
	// A tool result follows its call's row; the tool is its call's.
	parent, tool := l.leaf, l.lastTool
	if tr, ok := l.toolRows[block.Get("tool_use_id").String()]; ok && isResult {
		parent, tool = tr.uuid, tr.name
	}
	row := obj{{"parentUuid", nullable(parent)}, {"isSidechain", false}, {"promptId", l.prompt}, {"type", protocol.TypeUser},
		{"message", json.RawMessage(m.Get("message").Raw)}, {"uuid", id}, {"timestamp", m.Get("timestamp").String()}}
	mcpTool := isResult && strings.HasPrefix(tool, "mcp__")
	if r := m.Get("tool_use_result"); r.Exists() {
		if mcpTool && r.IsObject() && r.Get("_meta").Exists() {
			// The server's _meta is kept apart from the result.
			row = append(row, kv{"toolUseResult", json.RawMessage(r.Get("content").Raw)}, kv{"mcpMeta", obj{{"_meta", json.RawMessage(r.Get("_meta").Raw)}}})
		} else {
			row = append(row, kv{"toolUseResult", json.RawMessage(r.Raw)})
		}
	}
	if isResult {
		meta := m.Get("tool_result_meta.0")
		failed := block.Get("is_error").Bool()
		if mcpTool && !failed && meta.Get("permission_decision.decision").String() == "accept" {
			row = append(row, kv{"mcpCallNotReadOnly", "no_hint"})
		}
		if kind := meta.Get("non_execution_kind").String(); kind != "" {
			row = append(row, kv{"toolDenialKind", kind})
			switch {
			case kind == "user-rejected":
				row = append(row, kv{"toolDenialBeforeRun", true})
			case meta.Get("permission_decision.source").String() == "user_reject":
				row = append(row, kv{"holdsPersonsWords", true})
			}
		}
		if tool == "Bash" && !failed {
			row = append(row, kv{"sandboxed", false})
		}
		row = append(row, kv{"sourceToolAssistantUUID", parent})
		if l.stdinClosed {
			// A request left unanswered when stdin closed, before
			// claudecli.StdinCloseCancels.
			l.stdinClosed = false
			row = append(row, kv{"toolDenialUnanswered", true},
				kv{"permissionDecision", obj{{"decision", "reject"}, {"source", "config"}, {"reasonType", "other"}, {"reasonCode", "unknown"}}})
		} else if pd := meta.Get("permission_decision"); pd.Exists() {
			row = append(row, kv{"permissionDecision", permissionDecision(pd)})
		}
		if mcpTool && meta.Get("permission_decision.decision").String() == "accept" {
			l.mcpResult = tool
		}
	}
	if l.shutdown {
		row = append(row, kv{"interruptedByShutdown", true})
	}
	l.leaf = id
	l.write(append(row, l.common()...))
}

// unanswered says the next tool result is that of a request stdin closed
// on, in a release before claudecli.StdinCloseCancels.
func (l *sessionLog) unanswered() {
	if l != nil {
		l.stdinClosed = true
	}
}

// permissionDecision is a tool result row's permissionDecision: the
// message's permission_decision with the grant's scope.
func permissionDecision(pd gjson.Result) obj {
	out := obj{{"decision", pd.Get("decision").String()}, {"source", pd.Get("source").String()}}
	if pd.Get("source").String() == "config" && pd.Get("reason_type").String() == "rule" {
		// Allowed by --allowedTools.
		return append(out, kv{"reasonType", "rule"}, kv{"ruleSource", "cliArg"})
	}
	if pd.Get("decision").String() == "accept" {
		out = append(out, kv{"grantScope", "once"})
	}
	if rt := pd.Get("reason_type"); rt.Exists() {
		out = append(out, kv{"reasonCode", rt.String()})
	} else {
		out = append(out, kv{"reasonCode", "unknown"})
	}
	return out
}

// synthetic writes the CLI's placeholder assistant row, "No response
// requested.".
func (l *sessionLog) synthetic() {
	id := uuid.New()
	usage := obj{{"output_tokens_details", nil}, {"input_tokens", 0}, {"output_tokens", 0}, {"cache_creation_input_tokens", 0}, {"cache_read_input_tokens", 0},
		{"server_tool_use", obj{{"web_search_requests", 0}, {"web_fetch_requests", 0}}}, {"service_tier", nil},
		{"cache_creation", obj{{"ephemeral_1h_input_tokens", 0}, {"ephemeral_5m_input_tokens", 0}}}, {"inference_geo", nil}, {"iterations", nil}, {"speed", nil}, {"fallback_credit", nil}}
	message := obj{{"diagnostics", nil}, {"id", uuid.New()}, {"container", nil}, {"model", "<synthetic>"}, {"role", "assistant"}, {"stop_details", nil},
		{"stop_reason", "stop_sequence"}, {"stop_sequence", ""}, {"type", "message"}, {"usage", usage},
		{"content", []obj{textBlock("No response requested.")}}, {"context_management", nil}}
	row := obj{{"parentUuid", nullable(l.leaf)}, {"isSidechain", false}, {"type", protocol.TypeAssistant}, {"uuid", id}, {"timestamp", l.f.timestamp()},
		{"message", message}, {"isApiErrorMessage", false}, {"madeBy", "other"}}
	l.leaf = id
	l.write(append(row, l.common()...))
}

// turnEnded writes the last prompt and the cost state after a result.
func (l *sessionLog) turnEnded() {
	if l == nil || l.off {
		return
	}
	l.lastPrompt()
	if l.resumed {
		l.write(obj{{"type", "mode"}, {"mode", "normal"}, {"sessionId", l.f.sessionID}})
	}
	calls := l.f.modelCalls
	mu := obj{{l.f.model, obj{{"inputTokens", 10 * calls}, {"outputTokens", 11*calls + 1}, {"thinkingTokens", 0}, {"cacheReadInputTokens", 0},
		{"cacheCreationInputTokens", 0}, {"cacheCreationEphemeral5mInputTokens", 0}, {"cacheCreationEphemeral1hInputTokens", 0}, {"webSearchRequests", 0}, {"costUSD", 0}}}}
	l.write(obj{{"type", "cost-state"}, {"sessionId", l.f.sessionID}, {"totalCostUSD", 0}, {"totalAPIDuration", 1}, {"totalAPIDurationWithoutRetries", 1},
		{"totalToolDuration", 1}, {"totalLinesAdded", 0}, {"totalLinesRemoved", 0}, {"totalDuration", int(time.Since(l.f.turnStart).Milliseconds())},
		{"startTime", l.f.turnStart.UnixMilli()}, {"modelUsage", mu}, {"hasUnknownModelCost", false}})
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}
