// Package scenarios holds the scenario format — one session of an agent that
// asks a person questions, hand-written or recorded — its strict parser and
// validator, and the built-in scenarios embedded in the binaries.
//
// # The format
//
// A scenario is a txtar archive. The archive comment says, in prose, what the
// session shows and why. These sections follow:
//
//	-- scenario.json --   the header: {"name","route","cli_version","origin"}
//	-- steps.jsonl --     the steps, one JSON object a line, run in order
//	-- resume.jsonl --    optional: the steps the agent plays when it is
//	                      started again with --resume ID (a bridge that
//	                      resumes a session for a late answer); without
//	                      it a resumed agent plays steps.jsonl again, as
//	                      the conversation's next turn(s); askctl replay
//	                      plays steps.jsonl, askctl fidelity both
//	-- wire.jsonl --      recorded scenarios only: every line both ways
//
// route is "sdk" (the default) or "mcp"; origin is "synthetic" (the default)
// or "recorded". Blank lines and lines starting with # in steps.jsonl are
// for people.
//
// # Steps
//
// Each step has exactly one kind:
//
//	{"prompt":"…"}              wait for the user's message; starts a turn;
//	                            "expect_prompt":"<regexp>" checks its text,
//	                            "refuse_prompt":"<regexp>" that it does not say it
//	{"text":"…"}                the assistant writes text
//	{"ask":{"questions":[…]}}   the assistant calls AskUserQuestion (1–4
//	                            questions, header ≤ 12 characters, 2–4 options,
//	                            label and description required, question texts
//	                            and labels unique)
//	{"tool":{"name","input",…}} the assistant calls another tool that needs
//	                            permission; "request" adds can_use_tool fields,
//	                            "output"/"result" are what it returns if allowed
//
//	{"mcp":{"server","tool","input"}}
//	                            route "mcp" only: the assistant calls an MCP
//	                            server's tool, mcp__<server>__<tool> ("tool"
//	                            defaults to ask_user, whose input is
//	                            {"question","options":[{"label","description"}],
//	                            "multiSelect"}); the agent makes the tools/call
//	                            and writes the CLI's tool_result for what the
//	                            server returns; "result" ({"content":[…],
//	                            "isError":…,"_meta":…}, what askctl record
//	                            keeps) is what askctl replay's scripted server
//	                            returns instead of playing "user"
//
// ask, tool and mcp steps also take:
//
//	"id"            the tool_use id (generated when absent)
//	"user"          the person's part, played by askctl replay:
//	                {"answers":{"<question>":"<label or text>" | ["<label>",…]}},
//	                {"allow":true} (tools), {"skip":"<reason>","interrupt":bool},
//	                or {"silent":true}; "after":"2s" delays it, "annotations"
//	                adds notes. A silent user never answers: with
//	                cancel_after or exit_after the agent withdraws the
//	                question or exits; alone, the bridge is expected to
//	                close stdin (askctl replay does), and the agent cancels
//	                the question and ends the turn as the real CLI does
//	"expect"        what the answer must be; derived from "user" when absent:
//	                {"behavior","answers":{"<question>":"<exact string>"},
//	                "interrupt","match":{"<gjson path>":<JSON>},"no_answer"};
//	                match paths are evaluated on the permission result
//	                ({"behavior":…,"updatedInput":…}); in gjson paths escape
//	                ".", "?" and "*" in question texts with a backslash
//	                (written "\\?" inside JSON)
//	"cancel_after"  withdraw the request after this long without an answer;
//	                on an mcp step (silent, 1s at least), it is the CLI's
//	                MCP tool timeout (MCP_TOOL_TIMEOUT), one for the
//	                session: every call with no result by then is ended
//	                (notifications/cancelled to the server, and the
//	                timeout's is_error tool_result), so every silent mcp
//	                step of the session takes it, and the person answers
//	                the others sooner
//	"exit_after"    exit the agent after this long without an answer, with
//	                "exit_code" (default 1)
//	"parallel"      true: the call is in the same model response as the
//	                call before it, and runs at once with it, as the CLI
//	                runs AskUserQuestion, Read, Glob, Grep, WebFetch and
//	                WebSearch (ConcurrentTools): both requests are pending
//	                together, each ends on its own, and the CLI writes each
//	                tool_result as its answer comes. A call that aborts the
//	                turn (a deny with interrupt, a withdrawal) withdraws the
//	                others still pending first (control_cancel_request).
//	                route sdk only; seen with the real CLI 2.1.318–2.1.332
//	"delay"         with parallel: the model writes this call this long
//	                after the one before it, so its request comes later
//	                (the CLI starts each call as its block is complete)
//
// On an mcp step the person answers through the server's bridge: "answers"
// (keyed by the question), "skip" (the server returns isError, the user
// declined) or "silent" (the server's timeout returns isError, or the
// CLI's ends the call: cancel_after); "expect" is
// what the call returns: "behavior" "allow" (no isError) or "deny"
// (isError), "answers" whose labels the result text must name, and "match"
// paths on the result ({"content":[…],"isError":…}).
//
// A route "mcp" scenario is one turn played in print mode (claude -p
// "prompt" --mcp-config …), where AskUserQuestion is not offered.
//
// A text step followed by a tool call is one model response, as a model
// writes them. Each turn ends with a result.
//
// # Errors
//
// [Parse] reports every problem it finds, each with the file, line and field:
//
//	my.txtar:5: ask.questions[0].options: want 2 to 4 options, got 1
//
// It is public: a test in another repository loads and writes scenarios with
// it, and hands them to fakeclaude or the harness.
package scenarios
