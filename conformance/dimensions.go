package conformance

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/txtar"
)

// A requirement is checked along its dimensions, not by one example: each
// dimension row below is a way the requirement could break (an answer's
// shape, the state the question is in when something happens, where an
// operation comes from), generated into the requirement's case after its
// hand-written lines. The case passes only when every row does, and a
// failure names its row; a row that needs an operation the surface lacks
// is skipped alone, and the case says so. conformance/README.md lists the
// tables.

// row is one dimension row: the lines that check it, with ALIAS for its
// session, and the steps of the scenario its agent plays.
type row struct {
	name  string
	lines string
	steps []string
	// otherSteps, when set, are the steps of a second session the row
	// starts (OTHER in lines): a question pending elsewhere, say, while
	// this one is skipped.
	otherSteps []string
}

// option and question build scenario steps.
type option struct {
	Label       string `json:"label"`
	Description string `json:"description"`
}

type question struct {
	Question    string   `json:"question"`
	Header      string   `json:"header"`
	Options     []option `json:"options"`
	MultiSelect bool     `json:"multiSelect"`
}

func opts(labels ...string) []option {
	out := make([]option, len(labels))
	for i, l := range labels {
		out[i] = option{Label: l, Description: "Option " + l}
	}
	return out
}

func single(text, header string, labels ...string) question {
	return question{Question: text, Header: header, Options: opts(labels...)}
}

func multi(text, header string, labels ...string) question {
	return question{Question: text, Header: header, Options: opts(labels...), MultiSelect: true}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// ask is an ask step whose person answers as answers says (question →
// label, []string of labels in order, or free text).
func ask(answers map[string]any, qs ...question) string {
	return mustJSON(map[string]any{"ask": map[string]any{"questions": qs}, "user": map[string]any{"answers": answers}})
}

// askDeny is an ask step the agent expects a deny for.
func askDeny(qs ...question) string {
	return mustJSON(map[string]any{"ask": map[string]any{"questions": qs}, "expect": map[string]any{"behavior": "deny"}})
}

// toolStep is another tool's permission prompt (Bash, creating file),
// decided by the bridge's policy: allowed, its input comes back unchanged,
// fields of every JSON type and all; denied, it is a deny. It carries the
// blocked path the CLI sends along.
func toolStep(file string, allowed bool) string {
	input := map[string]any{"command": "touch " + file, "description": "Create a file", "timeout": 60000, "run_in_background": false}
	return permissionStep("Bash", input, "", map[string]any{"description": "Create a file", "blocked_path": "${CWD}/" + file}, allowed)
}

// permissionStep is a call of tool with input, which asks for
// permission (request: the extra can_use_tool fields), decided by the
// bridge's policy: allowed, its input comes back unchanged and the tool
// returns output; denied, it is a deny.
func permissionStep(tool string, input map[string]any, output string, request map[string]any, allowed bool) string {
	step := map[string]any{"tool": map[string]any{"name": tool, "input": input, "output": output, "request": request}}
	if allowed {
		step["user"] = map[string]any{"allow": true}
		step["expect"] = map[string]any{"behavior": "allow", "match": map[string]any{"updatedInput": input}}
	} else {
		step["expect"] = map[string]any{"behavior": "deny"}
	}
	return mustJSON(step)
}

// beside makes step a call in the same model response as the call before
// it: the CLI runs both at once (scenarios' parallel), so both requests
// are pending together in one session.
func beside(step string) string { return besideAfter(step, 0) }

// besideAfter is beside, the model writing the call d after the one
// before it: its request comes when the first one's is surely in.
func besideAfter(step string, d time.Duration) string {
	var m map[string]any
	if err := json.Unmarshal([]byte(step), &m); err != nil {
		panic(err)
	}
	m["parallel"] = true
	if d > 0 {
		m["delay"] = d.String()
	}
	return mustJSON(m)
}

// planStep is a call of a tool that itself puts something to the person
// (ExitPlanMode: the plan, for approval), whose prompt the CLI marks
// requires_user_interaction, as it marks AskUserQuestion's: it is still
// another tool, decided by the bridge's policy (allowed, its input comes
// back unchanged), never a question. Its rows are the fake agent's: the
// real CLI calls it only in plan mode.
func planStep(allowed bool) string {
	input := map[string]any{"plan": "1. Add the users table.\n2. Copy the rows over, in batches of 1,000.\n3. Switch the reads, then drop the old table."}
	return permissionStep("ExitPlanMode", input, "User has approved your plan. You can now start coding.", map[string]any{"requires_user_interaction": true}, allowed)
}

// readStep is a Read of a file outside the project, which asks for
// permission; the CLI runs Read at once with a question asked in the same
// model response. Decided by the bridge's policy: allowed, its input comes
// back unchanged.
func readStep(file string, allowed bool) string {
	input := map[string]any{"file_path": "/etc/" + file, "offset": 1, "limit": 20}
	return permissionStep("Read", input, "1\tanswer\n", map[string]any{"description": "/etc/" + file}, allowed)
}

// readAfter is how long after the question the model writes a Read of
// the same response: the question is pending at the bridge by then, on a
// busy machine too, so the prompt meets it there.
const readAfter = 300 * time.Millisecond

// badShapes are answers of the wrong shape, as the surfaces' own
// messages carry them: none, an empty set, null, a list, and a value
// that is neither a label nor a list of labels. Each must be refused with
// a message, nothing reaching the agent: a bridge that takes an empty set
// for a skip, or a missing one for an allow, turns a client's mistake
// into the person's word.
var badShapes = []string{"", `{}`, `null`, `[]`, `{"Which database should I use?":{"label":"SQLite"}}`, `{"Which database should I use?":true}`}

// badShapesRow sends each of badShapes in each surface's own message.
func badShapesRow() row {
	wrap := map[string]func(answers string) string{
		"http": func(a string) string { return `{"answers":` + a + `}` },
		"ws": func(a string) string {
			return `{"type":"ask_user_response","data":{"question_id":"'$ALIAS_Q'","answers":` + a + `}}`
		},
		"control-ws": func(a string) string {
			return `{"type":"control_response","response":{"subtype":"success","request_id":"'$ALIAS_Q'","response":{"behavior":"allow","updatedInput":{"answers":` + a + `}}}}`
		},
	}
	wrap["exec"] = wrap["http"]
	missing := map[string]string{
		"http":       `{}`,
		"exec":       `{}`,
		"ws":         `{"type":"ask_user_response","data":{"question_id":"'$ALIAS_Q'"}}`,
		"control-ws": `{"type":"control_response","response":{"subtype":"success","request_id":"'$ALIAS_Q'","response":{"behavior":"allow","updatedInput":{}}}}`,
	}
	var b strings.Builder
	b.WriteString("await ALIAS question\n")
	for _, kind := range []string{"http", "exec", "ws", "control-ws"} {
		for _, a := range badShapes {
			body := missing[kind]
			if a != "" {
				body = wrap[kind](a)
			}
			fmt.Fprintf(&b, "[surface:%s] raw ALIAS '%s'\n", kind, body)
		}
	}
	b.WriteString("! await -for 300ms ALIAS answered\npending ALIAS 1\nanswer ALIAS\nawait ALIAS answered\ncheck ALIAS\n")
	return row{name: "answers of every wrong shape: none, an empty set, null, a list, a value neither a label nor labels", lines: b.String(),
		steps: session(ask(map[string]any{qDB.Question: "SQLite"}, qDB))}
}

// noReasonRow is a row whose person skips giving reason, which gives none
// (empty, or white space alone): the agent is told a reason all the same.
func noReasonRow(name, reason string) row {
	return row{name: name, lines: `await ALIAS question
skip-question ALIAS ` + quote(reason) + `
await ALIAS answered
response ALIAS behavior deny
response ALIAS message '~\S'
check ALIAS
`, steps: session(askDeny(qDB))}
}

// readBesideRow is the SDK-PASSTHROUGH row of a Read's prompt, decided
// under policy (allow or deny), while a question of the session waits.
func readBesideRow(policy string) row {
	decided := map[string]string{"allow": "allowed", "deny": "denied"}[policy]
	var lines strings.Builder
	for _, l := range []string{"await ALIAS question", "await ALIAS decided Read", "pending ALIAS 1", "answer ALIAS", "await ALIAS turn", "check ALIAS"} {
		fmt.Fprintf(&lines, "[!cap:permissions] [policy:%s] %s\n", policy, l)
	}
	return row{name: decided + " while a question of the session is pending (one model response)", lines: lines.String(),
		steps: session(ask(map[string]any{qDB.Question: "SQLite"}, qDB), besideAfter(readStep("askctl-row.txt", policy == "allow"), readAfter))}
}

func session(steps ...string) []string {
	return append(append([]string{`{"prompt":"Ask me."}`}, steps...), `{"text":"Done."}`)
}

// recorded is session as a recording: a real model's headers may run past
// the 12 characters the CLI advises.
func recorded(steps ...string) []string {
	return append([]string{`{"name":"recorded","route":"sdk","origin":"recorded"}`}, session(steps...)...)
}

// pastedLog is a person's own words as long as a pasted log: 40 KB, past
// the 32 KiB a WebSocket library reads in one message unless told more
// (coder/websocket's default, among others), and far below what the CLI
// takes in a line.
var pastedLog = func() string {
	var b strings.Builder
	for i := 1; b.Len() < 40_000; i++ {
		fmt.Fprintf(&b, "%04d  ERROR  worker-%d: connection reset by peer — retrying in %dms (“naïve” retry)\n", i, i%7, 100*(i%5))
	}
	return "Neither: see the log.\n" + b.String()
}()

// longListing is what a model writes in one message when it quotes a
// file: 200 KB, and so one line of the agent's stream past the 64 KiB a
// line reader takes unless told more (Go's bufio.Scanner, among others)
// and past the 32 KiB a WebSocket library reads in one message. The CLI
// writes lines of megabytes (a Read's result, a long answer).
var longListing = func() string {
	var b strings.Builder
	b.WriteString("Here is the file as it stands:\n\n")
	for i := 1; b.Len() < 200_000; i++ {
		fmt.Fprintf(&b, "%5d\tfunc handler%d(w http.ResponseWriter, r *http.Request) { serve(w, r, %q) } // “ünïcödé”\n", i, i, fmt.Sprint("route-", i))
	}
	return b.String()
}()

// textStep is the model's message within a response, before its next call.
func textStep(text string) string { return mustJSON(map[string]any{"text": text}) }

// writeStep is a Write of a file of content, which asks for permission,
// decided as the bridge's policy says: allowed, its input comes back
// unchanged, byte for byte. Its rows are the fake agent's: the real CLI,
// allowed, would write the file (outside the project, so that the CLI
// asks), and on the next run refuse, without asking, to overwrite a file
// it has not read.
func writeStep(file, content string, allowed bool) string {
	path := "/srv/app/" + file
	input := map[string]any{"file_path": path, "content": content}
	return permissionStep("Write", input, "File created successfully at: "+path, map[string]any{"description": "Create " + file}, allowed)
}

var (
	qDB       = single("Which database should I use?", "Database", "Postgres", "SQLite")
	qFormat   = single("How should I format the output?", "Format", "Summary", "Detailed")
	qSections = multi("Which sections?", "Sections", "Intro", "Body", "Outro")
	qGreek    = multi("Which letters?", "Letters", "Alpha", "Beta", "Gamma", "Delta")
	qColours  = multi("Which colours?", "Colours", "Red, bright", "Blue, dark", "Green")
	qNote     = single("Anything else?", "Notes", "No", "Yes")
	qIntl     = single("¿Qué idioma — 言語 — Sprache?", "Idioma", "Español", "日本語", "Deutsch")
	qEmoji    = multi("Welche Farben 🎨?", "Farben", "Rot 🔴", "Grün", "Blau")
)

// answerLines answers ALIAS's current question as its scenario says, and
// checks the agent's verdict.
const answerLines = `await ALIAS question
answer ALIAS
await ALIAS answered
check ALIAS
`

// mcpSession is a route MCP session whose agent calls ask_user once with
// input, and the person answers with answer (a label, labels in the order
// picked, or free text).
func mcpSession(input map[string]any, answer any) []string {
	return []string{`{"name":"row","route":"mcp","origin":"synthetic"}`, `{"prompt":"Ask me."}`,
		mustJSON(map[string]any{"mcp": map[string]any{"server": "askctl", "tool": "ask_user", "input": input},
			"user": map[string]any{"answers": map[string]any{input["question"].(string): answer}}}),
		`{"text":"Done."}`}
}

// mcpLines answer an MCP row's question as its scenario says, and check
// that the call's text names each of want.
func mcpLines(want ...string) string {
	args := make([]string, len(want))
	for i, w := range want {
		args[i] = quoteText(w)
	}
	return `await ALIAS question
delivered ALIAS
answer ALIAS
await ALIAS answered
tool-result ALIAS ` + strings.Join(args, " ") + `
check ALIAS
`
}

// dimensions are the generated rows, by requirement.
var dimensions = map[string][]row{
	// ask_user's schema makes all but the question optional: a call may
	// leave them out.
	"MCP-ANSWER": {
		{name: "a question alone, no options: the person's own words", lines: mcpLines("Use MySQL, actually"),
			steps: mcpSession(map[string]any{"question": "Which database should I use?"}, "Use MySQL, actually")},
		{name: "the person's own words with quotes, a newline and white space at their edges: named byte for byte", lines: mcpLines("  Say \"yes\" & <mean> it,\n\tthen stop  "),
			steps: mcpSession(map[string]any{"question": "Which database should I use?"}, "  Say \"yes\" & <mean> it,\n\tthen stop  ")},
		{name: "options with labels alone, no descriptions nor multiSelect", lines: mcpLines("SQLite"),
			steps: mcpSession(map[string]any{"question": "Which database engine should I use?",
				"options": []map[string]any{{"label": "Postgres"}, {"label": "SQLite"}}}, "SQLite")},
		{name: "a question whose text ends in white space, as a model's may: shown and answered as asked", lines: mcpLines("SQLite"),
			steps: mcpSession(map[string]any{"question": "Which database should I use?  \n",
				"options": []map[string]any{{"label": "Postgres"}, {"label": "SQLite"}}}, "SQLite")},
	},
	"MCP-MULTI": {
		{name: "options with labels alone, two picked out of order, one holding \", \"", lines: mcpLines("Blue, dark", "Green"),
			steps: mcpSession(map[string]any{"question": "Which colours?", "multiSelect": true,
				"options": []map[string]any{{"label": "Red, bright"}, {"label": "Blue, dark"}, {"label": "Green"}}}, []string{"Green", "Blue, dark"})},
	},
	"SDK-ANSWER-MULTI": {
		{name: "one label, the last option", lines: answerLines,
			steps: session(ask(map[string]any{qGreek.Question: []string{"Delta"}}, qGreek))},
		{name: "four labels, picked in reverse order", lines: answerLines,
			steps: session(ask(map[string]any{qGreek.Question: []string{"Delta", "Gamma", "Beta", "Alpha"}}, qGreek))},
		{name: `labels that contain ", "`, lines: answerLines + `response ALIAS 'updatedInput.answers.Which colours\?' 'Blue, dark, Red, bright'
`,
			steps: session(ask(map[string]any{qColours.Question: []string{"Blue, dark", "Red, bright"}}, qColours))},
		{name: "two multiSelect questions in one request, each in its own order", lines: answerLines,
			steps: session(ask(map[string]any{qSections.Question: []string{"Outro", "Body"}, qGreek.Question: []string{"Gamma", "Alpha"}}, qSections, qGreek))},
		{name: "labels and the person's own words, the words picked after a label", lines: answerLines,
			steps: session(ask(map[string]any{qSections.Question: []string{"Outro", "An appendix, too"}}, qSections))},
	},
	"SDK-ANSWER-OTHER": {
		{name: "free text with a newline", lines: answerLines,
			steps: session(ask(map[string]any{qDB.Question: "Neither.\nWe use files."}, qDB))},
		{name: "free text with edge and repeated whitespace", lines: answerLines,
			steps: session(ask(map[string]any{qDB.Question: "  two  spaces,  and edges  "}, qDB))},
		{name: "free text in other scripts, with emoji", lines: answerLines,
			steps: session(ask(map[string]any{qDB.Question: "Ünïcödé — 日本語, ελληνικά 🚀✨"}, qDB))},
		{name: `free text that contains ", "`, lines: answerLines,
			steps: session(ask(map[string]any{qDB.Question: "MySQL, then Postgres"}, qDB))},
		{name: "free text for the second question of a request, a label for the first", lines: answerLines,
			steps: session(ask(map[string]any{qDB.Question: "SQLite", qFormat.Question: "Both, summary first"}, qDB, qFormat))},
		{name: "free text for a multiSelect question", lines: answerLines,
			steps: session(ask(map[string]any{qSections.Question: "All of them, in one page"}, qSections))},
		{name: "free text of 40 KB, a pasted log", lines: answerLines,
			steps: session(ask(map[string]any{qDB.Question: pastedLog}, qDB))},
	},
	"SDK-ANSWER-ALL": {
		{name: "two questions", lines: answerLines,
			steps: session(ask(map[string]any{qDB.Question: "SQLite", qFormat.Question: "Detailed"}, qDB, qFormat))},
		{name: "four questions, recorded headers longer than 12 characters", lines: answerLines,
			steps: recorded(ask(map[string]any{qDB.Question: "Postgres", qFormat.Question: "Summary", qSections.Question: []string{"Body"}, qNote.Question: "No"},
				single(qDB.Question, "Database engine choice", "Postgres", "SQLite"), single(qFormat.Question, "Output formatting", "Summary", "Detailed"),
				multi(qSections.Question, "Sections to write", "Intro", "Body", "Outro"), single(qNote.Question, "Anything further", "No", "Yes")))},
		{name: "three questions answered one at a time", lines: `await ALIAS question
answer -partial ALIAS 'Which database should I use?=SQLite'
answer -partial ALIAS 'How should I format the output?=Summary'
! await -for 300ms ALIAS answered
answer ALIAS 'Which database should I use?=SQLite' 'How should I format the output?=Summary' 'Anything else?=Yes'
await ALIAS answered
check ALIAS
`,
			steps: session(ask(map[string]any{qDB.Question: "SQLite", qFormat.Question: "Summary", qNote.Question: "Yes"}, qDB, qFormat, qNote))},
	},
	"SDK-DELIVER": {
		{name: "after the model wrote 200 KB on one line", lines: `await ALIAS question
delivered ALIAS
answer ALIAS
await ALIAS answered
check ALIAS
`,
			steps: session(textStep(longListing), ask(map[string]any{qFormat.Question: "Detailed"}, qFormat))},
		{name: "four questions, recorded long headers, no two alike", lines: `await ALIAS question
delivered ALIAS
answer ALIAS
await ALIAS answered
check ALIAS
`,
			steps: recorded(ask(map[string]any{qDB.Question: "Postgres", qColours.Question: []string{"Green"}, qGreek.Question: []string{"Beta"}, qNote.Question: "No"},
				single(qDB.Question, "Database engine choice", "Postgres", "SQLite"), qColours, qGreek,
				question{Question: qNote.Question, Header: "Ünïcödé 🚀", Options: []option{{"No", "Nothing — we are done"}, {"Yes", "More, with \"quotes\" and <angles>"}}}))},
		{name: "a multiSelect request replayed on a reconnect, unchanged", lines: `[cap:reconnect] await ALIAS question
[cap:reconnect] disconnect ALIAS main
[cap:reconnect] connect ALIAS again
[cap:reconnect] await -conn again -same ALIAS question
[cap:reconnect] delivered -conn again ALIAS
[cap:reconnect] answer -conn again ALIAS
[cap:reconnect] await ALIAS answered
[cap:reconnect] check ALIAS
`,
			steps: session(ask(map[string]any{qSections.Question: []string{"Body", "Intro"}, qFormat.Question: "Detailed"}, qSections, qFormat))},
		{name: "question text in other scripts, with emoji", lines: `await ALIAS question
delivered ALIAS
answer ALIAS
await ALIAS answered
check ALIAS
`,
			steps: session(ask(map[string]any{qIntl.Question: "日本語", qEmoji.Question: []string{"Rot 🔴", "Grün"}}, qIntl, qEmoji))},
	},
	"SDK-SKIP-DENY": {
		noReasonRow("skip with no reason given", ""),
		// A reason of white space alone is none: the agent is still told
		// one, not a blank message.
		noReasonRow("skip with a reason of white space alone", "   "),
		{name: "skip with part of the request answered and held", lines: `await ALIAS question
answer -partial ALIAS 'Which database should I use?=SQLite'
skip-question ALIAS 'Not now'
await ALIAS answered
response ALIAS behavior deny
! response ALIAS updatedInput
check ALIAS
`,
			steps: session(askDeny(qDB, qFormat))},
		// The CLI runs AskUserQuestion at once when one model response
		// calls it twice: two questions of one session pending together.
		{name: "a skip of one of two questions pending at once", lines: `await ALIAS question
await ALIAS question
skip-question -q 'Which database should I use?' ALIAS 'Not now'
answer -q 'How should I format the output?' ALIAS
await ALIAS turn
check ALIAS
`,
			steps: session(askDeny(qDB), beside(ask(map[string]any{qFormat.Question: "Summary"}, qFormat)))},
		{name: "skip while another session's question is pending", lines: `await ALIAS question
await OTHER question
skip-question ALIAS 'Not now'
await ALIAS answered
response ALIAS behavior deny
! await -for 300ms OTHER answered
answer OTHER
await OTHER answered
check ALIAS
check OTHER
`,
			steps:      session(askDeny(qDB)),
			otherSteps: session(ask(map[string]any{qDB.Question: "Postgres"}, qDB))},
	},
	"SDK-TIMEOUT": {
		{name: "timeout with part of the request answered and held", lines: `[cap:timeout] await ALIAS question
[cap:timeout] answer -partial ALIAS 'Which database should I use?=SQLite'
[cap:timeout] await -timeout $TIMEOUT_WAIT ALIAS answered
[cap:timeout] response -within $TIMEOUT_GRACE ALIAS behavior deny
[cap:timeout] ! response ALIAS updatedInput
[cap:timeout] await ALIAS surface expired
[cap:timeout] check ALIAS
`,
			steps: session(askDeny(qDB, qFormat))},
		{name: "timeout while another session's question is answered", lines: `[cap:timeout] await ALIAS question
[cap:timeout] await OTHER question
[cap:timeout] answer OTHER
[cap:timeout] await OTHER answered
[cap:timeout] await -timeout $TIMEOUT_WAIT ALIAS answered
[cap:timeout] response ALIAS behavior deny
[cap:timeout] check ALIAS
[cap:timeout] check OTHER
`,
			steps:      session(askDeny(qDB)),
			otherSteps: session(ask(map[string]any{qDB.Question: "Postgres"}, qDB))},
		// Deadlines run from the ask, and nothing the person does moves
		// them: a part held, or a reconnect, late in the wait.
		{name: "a part held late in the wait", lines: `[cap:timeout] await ALIAS question
[cap:timeout] sleep 1200ms
[cap:timeout] answer -partial ALIAS 'Which database should I use?=SQLite'
[cap:timeout] await -timeout $TIMEOUT_WAIT ALIAS answered
[cap:timeout] response -within $TIMEOUT_GRACE ALIAS behavior deny
[cap:timeout] check ALIAS
`,
			steps: session(askDeny(qDB, qFormat))},
		{name: "a reconnect late in the wait", lines: `[cap:timeout] await ALIAS question
[cap:timeout] sleep 1200ms
[cap:timeout] [cap:reconnect] disconnect ALIAS main
[cap:timeout] [cap:reconnect] connect ALIAS again
[cap:timeout] await -timeout $TIMEOUT_WAIT ALIAS answered
[cap:timeout] response -within $TIMEOUT_GRACE ALIAS behavior deny
[cap:timeout] check ALIAS
`,
			steps: session(askDeny(qDB))},
		// A restart moves no deadline either: the bridge that comes back
		// expires the question at its deadline, which the connection
		// opened after the restart lists no more from 1 s past it, and is
		// told within 1 s of (the invariants). The agent died with the
		// bridge. (Opened after the deadline, on a busy machine, the
		// connection is shown no question that ended: the row is a SKIP,
		// too late to judge.)
		{name: "a restart late in the wait", lines: `[cap:timeout] [cap:persist] [cap:reconnect] await ALIAS question
[cap:timeout] [cap:persist] [cap:reconnect] sleep 1200ms
[cap:timeout] [cap:persist] [cap:reconnect] restart -kill
[cap:timeout] [cap:persist] [cap:reconnect] connect ALIAS again
[cap:timeout] [cap:persist] [cap:reconnect] await -conn again -same ALIAS question
[cap:timeout] [cap:persist] [cap:reconnect] pending -within $TIMEOUT_WAIT -conn again ALIAS 0
[cap:timeout] [cap:persist] [cap:reconnect] invariants ALIAS
# no check: ALIAS — its agent dies with the bridge, its request pending.
`,
			steps: session(askDeny(qDB))},
	},
	"SDK-SEQUENTIAL": {
		{name: "two questions pending at once (one model response), answered in the other order", lines: `await ALIAS question
await ALIAS question
answer -q 'How should I format the output?' ALIAS
answer -q 'Which database should I use?' ALIAS
await ALIAS turn
check ALIAS
`,
			steps: session(ask(map[string]any{qDB.Question: "SQLite"}, qDB), beside(ask(map[string]any{qFormat.Question: "Detailed"}, qFormat)))},
	},
	"SDK-PASSTHROUGH": {
		readBesideRow("allow"), readBesideRow("deny"),
		{name: "allowed: a tool input with fields of every JSON type comes back unchanged", lines: `[!cap:permissions] [policy:allow] await ALIAS question
[!cap:permissions] [policy:allow] answer ALIAS
[!cap:permissions] [policy:allow] await ALIAS answered
[!cap:permissions] [policy:allow] check ALIAS
`,
			steps: session(toolStep("askctl-row.txt", true), ask(map[string]any{qDB.Question: "SQLite"}, qDB))},
		{name: "denied: the same tool input is denied", lines: `[!cap:permissions] [policy:deny] await ALIAS question
[!cap:permissions] [policy:deny] answer ALIAS
[!cap:permissions] [policy:deny] await ALIAS answered
[!cap:permissions] [policy:deny] check ALIAS
`,
			steps: session(toolStep("askctl-row.txt", false), ask(map[string]any{qDB.Question: "SQLite"}, qDB))},
		{name: "allowed: a Write of a 200 KB file, its input on one line, comes back unchanged", lines: `[!cap:permissions] [policy:allow] [agent:fake] await ALIAS question
[!cap:permissions] [policy:allow] [agent:fake] answer ALIAS
[!cap:permissions] [policy:allow] [agent:fake] await ALIAS answered
[!cap:permissions] [policy:allow] [agent:fake] check ALIAS
`,
			steps: session(writeStep("listing.go", longListing, true), ask(map[string]any{qDB.Question: "SQLite"}, qDB))},
		{name: "denied: a Write of a 200 KB file is denied", lines: `[!cap:permissions] [policy:deny] [agent:fake] await ALIAS question
[!cap:permissions] [policy:deny] [agent:fake] answer ALIAS
[!cap:permissions] [policy:deny] [agent:fake] await ALIAS answered
[!cap:permissions] [policy:deny] [agent:fake] check ALIAS
`,
			steps: session(writeStep("listing.go", longListing, false), ask(map[string]any{qDB.Question: "SQLite"}, qDB))},
		{name: "allowed: a plan put to the person by its own tool (ExitPlanMode, marked requires_user_interaction) comes back unchanged", lines: `[!cap:permissions] [policy:allow] [agent:fake] await ALIAS question
[!cap:permissions] [policy:allow] [agent:fake] answer ALIAS
[!cap:permissions] [policy:allow] [agent:fake] await ALIAS answered
[!cap:permissions] [policy:allow] [agent:fake] check ALIAS
`,
			steps: session(planStep(true), ask(map[string]any{qSections.Question: []string{"Outro", "Intro"}}, qSections))},
		{name: "denied: a plan put to the person by its own tool (ExitPlanMode) is denied", lines: `[!cap:permissions] [policy:deny] [agent:fake] await ALIAS question
[!cap:permissions] [policy:deny] [agent:fake] answer ALIAS
[!cap:permissions] [policy:deny] [agent:fake] await ALIAS answered
[!cap:permissions] [policy:deny] [agent:fake] check ALIAS
`,
			steps: session(planStep(false), ask(map[string]any{qSections.Question: []string{"Body"}}, qSections))},
	},
	"SDK-LATE-ANSWER": {
		{name: "a skip after the answer", lines: answerLines + `! skip-question ALIAS 'Too late'
! await -for 300ms ALIAS answered 2
`,
			steps: session(ask(map[string]any{qDB.Question: "Postgres"}, qDB))},
		{name: "the rest of a held answer after a timeout", lines: `[cap:timeout] await ALIAS question
[cap:timeout] answer -partial ALIAS 'Which database should I use?=SQLite'
[cap:timeout] await -timeout $TIMEOUT_WAIT ALIAS answered
[cap:timeout] ! answer ALIAS 'How should I format the output?=Summary'
[cap:timeout] ! await -for 300ms ALIAS answered 2
[cap:timeout] check ALIAS
`,
			steps: session(askDeny(qDB, qFormat))},
	},
	"SDK-BAD-INPUT": {badShapesRow()},
	// The agent ends because its person stopped the session from the
	// surface (the bridge closes its stdin, then kills it): its question
	// is withdrawn as for any other exit, and the surface told.
	"SDK-AGENT-EXIT": {
		{name: "the session stopped from the surface while its question waits", lines: `await ALIAS question
stop-session ALIAS
await ALIAS exit
await ALIAS surface withdrawn
pending -within 2s ALIAS 0
! answer ALIAS 'Which database should I use?=Postgres'
# no check: ALIAS — its agent is stopped on purpose, with its request pending.
`,
			steps: session(ask(map[string]any{qDB.Question: "SQLite"}, qDB))},
	},
	"SDK-ISOLATION": {
		{name: "another session's question skipped by its id", lines: `await ALIAS question
await OTHER question
! skip-question -qid $OTHER_Q ALIAS 'Not mine'
! await -for 300ms OTHER answered
answer OTHER
await OTHER answered
answer ALIAS
await ALIAS answered
check ALIAS
check OTHER
`,
			steps:      session(ask(map[string]any{qFormat.Question: "Summary"}, qFormat)),
			otherSteps: session(ask(map[string]any{qDB.Question: "SQLite"}, qDB))},
	},
	"UI-RECONNECT-REPLAY": {
		{name: "reconnect with part of the request answered and held", lines: `[cap:reconnect] await ALIAS question
[cap:reconnect] answer -partial -hold ALIAS 'How should I format the output?=Summary'
[cap:reconnect] disconnect ALIAS main
[cap:reconnect] connect ALIAS again
[cap:reconnect] await -conn again -same ALIAS question
[cap:reconnect] answer -conn again ALIAS 'Which sections?=Outro' 'Which sections?=Intro'
[cap:reconnect] await ALIAS answered
[cap:reconnect] check ALIAS
`,
			steps: session(ask(map[string]any{qFormat.Question: "Summary", qSections.Question: []string{"Outro", "Intro"}}, qFormat, qSections))},
		{name: "reconnect while another session's question is pending", lines: `[cap:reconnect] await ALIAS question
[cap:reconnect] await OTHER question
[cap:reconnect] disconnect ALIAS main
[cap:reconnect] connect ALIAS again
[cap:reconnect] await -conn again -same ALIAS question
[cap:reconnect] pending -conn again ALIAS 1
[cap:reconnect] answer -conn again ALIAS
[cap:reconnect] answer OTHER
[cap:reconnect] await ALIAS answered
[cap:reconnect] await OTHER answered
[cap:reconnect] check ALIAS
[cap:reconnect] check OTHER
`,
			steps:      session(ask(map[string]any{qFormat.Question: "Detailed"}, qFormat)),
			otherSteps: session(ask(map[string]any{qDB.Question: "SQLite"}, qDB))},
		// A stream resumed mid-session (SSE's Last-Event-ID): what
		// happened while it was down comes once each, and nothing it
		// heard before comes again (no id twice). A held part of the
		// first answer gives the stream an event with an id before it
		// drops; another connection answers the rest and sees the second
		// question asked, so both are in the bridge's log before the
		// stream resumes.
		{name: "an event stream resumed mid-stream with Last-Event-ID", lines: `[cap:reconnect] supports ALIAS main resume
[cap:reconnect] await ALIAS question
[cap:reconnect] answer -partial -hold ALIAS 'Which database should I use?=SQLite'
[cap:reconnect] await -conn main ALIAS surface held
[cap:reconnect] drop ALIAS main
[cap:reconnect] connect ALIAS watch
[cap:reconnect] await -conn watch -same ALIAS question
[cap:reconnect] answer -conn watch ALIAS
[cap:reconnect] await ALIAS answered
[cap:reconnect] await -conn watch ALIAS question
[cap:reconnect] resume ALIAS main
[cap:reconnect] await -conn main -qid $ALIAS_Q1 ALIAS surface answered
[cap:reconnect] await -conn main ALIAS surface question
[cap:reconnect] answer -conn watch ALIAS
[cap:reconnect] await ALIAS answered
[cap:reconnect] await -conn main ALIAS surface answered
[cap:reconnect] ! await -for 300ms -conn main ALIAS repeated
[cap:reconnect] ! await -for 1ms -conn main ALIAS surface question 2
[cap:reconnect] ! await -for 1ms -conn main -qid $ALIAS_Q1 ALIAS surface question 2
[cap:reconnect] check ALIAS
`,
			steps: session(ask(map[string]any{qDB.Question: "SQLite", qFormat.Question: "Summary"}, qDB, qFormat), ask(map[string]any{qNote.Question: "No"}, qNote))},
		// A stream resumed while another session's events went by: it
		// gets what its session missed, and nothing of the other's (the
		// invariants check what it heard).
		{name: "an event stream resumed while another session answered", lines: `[cap:reconnect] supports ALIAS main resume
[cap:reconnect] await ALIAS question
[cap:reconnect] await OTHER question
[cap:reconnect] answer -partial -hold ALIAS 'Which database should I use?=SQLite'
[cap:reconnect] await -conn main ALIAS surface held
[cap:reconnect] drop ALIAS main
[cap:reconnect] answer OTHER
[cap:reconnect] await OTHER answered
[cap:reconnect] resume ALIAS main
[cap:reconnect] ! await -for 300ms -conn main ALIAS repeated
[cap:reconnect] invariants ALIAS
[cap:reconnect] answer ALIAS
[cap:reconnect] await ALIAS answered
[cap:reconnect] await -conn main ALIAS surface answered
[cap:reconnect] check ALIAS
[cap:reconnect] check OTHER
`,
			steps:      session(ask(map[string]any{qDB.Question: "SQLite", qFormat.Question: "Summary"}, qDB, qFormat)),
			otherSteps: session(ask(map[string]any{qNote.Question: "Yes"}, qNote))},
		// A client that lost the network with its page left open (a
		// laptop's Wi-Fi): it reconnects by itself once the network is
		// back, and then shows what is pending, and nothing that ended
		// while it was away as answerable.
		{name: "a page that lost the network while its question waited, and got it back", lines: `[cap:reconnect] supports ALIAS main offline
[cap:reconnect] await ALIAS question
[cap:reconnect] offline ALIAS main
[cap:reconnect] online ALIAS main
[cap:reconnect] pending -conn main ALIAS 1
[cap:reconnect] answer -conn main ALIAS
[cap:reconnect] await ALIAS answered
[cap:reconnect] check ALIAS
`,
			steps: session(ask(map[string]any{qGreek.Question: []string{"Beta", "Delta"}}, qGreek))},
		{name: "a page that was offline while its question was answered elsewhere and the next asked", lines: `[cap:reconnect] supports ALIAS main offline
[cap:reconnect] await ALIAS question
[cap:reconnect] offline ALIAS main
[cap:reconnect] connect ALIAS other
[cap:reconnect] await -conn other -same ALIAS question
[cap:reconnect] answer -conn other ALIAS
[cap:reconnect] await ALIAS answered
[cap:reconnect] await -conn other ALIAS question
[cap:reconnect] online ALIAS main
[cap:reconnect] pending -conn main ALIAS 1
[cap:reconnect] answer -conn main ALIAS
[cap:reconnect] await ALIAS answered
[cap:reconnect] check ALIAS
`,
			steps: session(ask(map[string]any{qColours.Question: []string{"Green", "Red, bright"}}, qColours), ask(map[string]any{qNote.Question: "Yes"}, qNote))},
	},
	"UI-STATUS": {
		{name: "a connection opened after another question was answered, and after the last", lines: `[cap:reconnect] await ALIAS question
[cap:reconnect] answer ALIAS
[cap:reconnect] await ALIAS answered
[cap:reconnect] await ALIAS question
[cap:reconnect] connect ALIAS later
[cap:reconnect] await -conn later -same ALIAS question
[cap:reconnect] status -conn later ALIAS
[cap:reconnect] answer -conn later ALIAS
[cap:reconnect] await ALIAS answered
[cap:reconnect] disconnect ALIAS later
[cap:reconnect] connect ALIAS last
[cap:reconnect] status -done -conn last ALIAS
[cap:reconnect] check ALIAS
`,
			steps: session(ask(map[string]any{qDB.Question: "Postgres"}, qDB), ask(map[string]any{qFormat.Question: "Detailed"}, qFormat))},
		// Each connection is told its own session's status only (the
		// invariants check what every connection heard).
		{name: "two sessions, each told its own status", lines: `[cap:reconnect] await ALIAS question
[cap:reconnect] await OTHER question
[cap:reconnect] answer OTHER
[cap:reconnect] await OTHER answered
[cap:reconnect] connect ALIAS later
[cap:reconnect] await -conn later -same ALIAS question
[cap:reconnect] status -conn later ALIAS
[cap:reconnect] connect OTHER later
[cap:reconnect] status -done -conn later OTHER
[cap:reconnect] invariants ALIAS OTHER
[cap:reconnect] answer -conn later ALIAS
[cap:reconnect] await ALIAS answered
[cap:reconnect] check ALIAS
[cap:reconnect] check OTHER
`,
			steps:      session(ask(map[string]any{qDB.Question: "Postgres"}, qDB)),
			otherSteps: session(ask(map[string]any{qFormat.Question: "Summary"}, qFormat))},
	},
	"UI-TAKEOVER": {
		{name: "a skip from the old connection after a takeover", lines: `[cap:takeover] await ALIAS question
[cap:takeover] connect ALIAS newer
[cap:takeover] await -conn newer -same ALIAS question
[cap:takeover] await -conn main ALIAS surface taken
[cap:takeover] ! skip-question -conn main ALIAS 'From the old tab'
[cap:takeover] ! await -for 300ms ALIAS answered
[cap:takeover] answer -conn newer ALIAS
[cap:takeover] await ALIAS answered
[cap:takeover] check ALIAS
`,
			steps: session(ask(map[string]any{qDB.Question: "SQLite"}, qDB))},
		{name: "a second takeover, after the first connection went away", lines: `[cap:takeover] await ALIAS question
[cap:takeover] connect ALIAS second
[cap:takeover] await -conn second -same ALIAS question
[cap:takeover] await -conn main ALIAS surface taken
[cap:takeover] disconnect ALIAS main
[cap:takeover] connect ALIAS third
[cap:takeover] await -conn third -same ALIAS question
[cap:takeover] await -conn second ALIAS surface taken
[cap:takeover] ! answer -conn second ALIAS 'Which database should I use?=SQLite'
[cap:takeover] ! await -for 300ms ALIAS answered
[cap:takeover] answer -conn third ALIAS
[cap:takeover] await ALIAS answered
[cap:takeover] check ALIAS
`,
			steps: session(ask(map[string]any{qDB.Question: "Postgres"}, qDB))},
	},
}

// generated is the script text and files the dimension rows add to
// requirement id's case ("" when it has none). Row i's session is d<i>, its
// other session o<i>.
func generated(id string) (script string, files map[string]string) {
	rows := dimensions[id]
	if len(rows) == 0 {
		return "", nil
	}
	files = map[string]string{}
	var b strings.Builder
	b.WriteString("\n# Dimension rows (generated: conformance/dimensions.go), one after another:\n# each row's question is asked only when the row begins, so none waits out a\n# short timeout behind the rows before it.\n")
	for i, r := range rows {
		alias, other := fmt.Sprintf("d%d", i+1), fmt.Sprintf("o%d", i+1)
		cond := conditionOf(r.lines)
		fmt.Fprintf(&b, "\ndimension %s\n", quote(r.name))
		for _, c := range conditions(cond) {
			// Where a condition leaves the row's lines out, the row says so.
			fmt.Fprintf(&b, "[%s] row-skip %s\n", negated(c), quote(conditionWhy(c)))
		}
		fmt.Fprintf(&b, "%sstart %s %s.jsonl\n", cond, alias, alias)
		files[alias+".jsonl"] = strings.Join(r.steps, "\n") + "\n"
		if r.otherSteps != nil {
			fmt.Fprintf(&b, "%sstart %s %s.jsonl\n", cond, other, other)
			files[other+".jsonl"] = strings.Join(r.otherSteps, "\n") + "\n"
		}
		b.WriteString(strings.NewReplacer("ALIAS", alias, "OTHER", other).Replace(r.lines))
	}
	return b.String(), files
}

// conditionOf is the conditions every line of a row begins with (a row of
// capability timeout runs only where the bridge declares it): those of its
// first line.
func conditionOf(lines string) string {
	first, _, _ := strings.Cut(lines, "\n")
	n := 0
	for strings.HasPrefix(first[n:], "[") {
		i := strings.Index(first[n:], "] ")
		if i < 0 {
			break
		}
		n += i + 2
	}
	return first[:n]
}

// conditions are the conditions a line begins with ("[cap:timeout] " →
// "cap:timeout").
func conditions(prefix string) []string {
	var out []string
	for _, f := range strings.Fields(prefix) {
		out = append(out, strings.TrimSuffix(strings.TrimPrefix(f, "["), "]"))
	}
	return out
}

func negated(c string) string {
	if n, ok := strings.CutPrefix(c, "!"); ok {
		return n
	}
	return "!" + c
}

// conditionWhy is why a row whose lines need condition c does not run
// where it does not hold.
func conditionWhy(c string) string {
	c, not := strings.CutPrefix(c, "!")
	kind, val, _ := strings.Cut(c, ":")
	switch {
	case kind == "cap" && !not:
		return "the bridge does not declare capability " + val
	case kind == "cap":
		return "it is for a bridge that does not declare capability " + val
	case kind == "policy" && !not:
		return "the profile's policy for other tools is not " + val
	case kind == "crash" && !not:
		return "the bridge declares no crash point " + val + " (capabilities.crash)"
	case kind == "surface" && !not:
		return "it needs a " + val + " surface"
	case kind == "agent" && !not:
		return "it needs the " + val + " agent"
	}
	return "its condition [" + map[bool]string{true: "!", false: ""}[not] + c + "] does not hold"
}

// quote is s as one testscript argument.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// quoteText is text as an argument of tool-result that names it byte for
// byte: quoted, or where it holds a newline or a tab, which no line of a
// case can, a pattern (~) that matches it alone.
func quoteText(s string) string {
	if !strings.ContainsAny(s, "\n\t") {
		return quote(s)
	}
	return quote("~" + strings.NewReplacer("\n", `\n`, "\t", `\t`).Replace(regexp.QuoteMeta(s)))
}

// DimensionRows lists each requirement's generated rows by name, for the
// documentation and its test.
func DimensionRows() map[string][]string {
	out := map[string][]string{}
	for id, rows := range dimensions {
		for _, r := range rows {
			out[id] = append(out[id], r.name)
		}
	}
	return out
}

// finalLines end every case: the rules that hold at every moment, over
// every session the case started (the lines before it may have left a
// row's name set).
var finalLines = []byte("\n# The rules that hold at every moment, over every session of the case.\ndimension -\ninvariants\n")

// CaseScript is case name's script as the suite runs it: the embedded
// hand-written case, then its generated dimension rows and their files.
func CaseScript(name string) ([]byte, error) {
	data, err := Cases.ReadFile("testdata/" + name + ".txtar")
	if err != nil {
		return nil, err
	}
	script, files := generated(name)
	a := txtar.Parse(data)
	// The comment is a slice of data: appending in place would write over
	// the files after it.
	a.Comment = append(slices.Clip(a.Comment), script...)
	a.Comment = append(a.Comment, finalLines...)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		a.Files = append(a.Files, txtar.File{Name: n, Data: []byte(files[n])})
	}
	return txtar.Format(a), nil
}
