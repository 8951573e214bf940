// Package fakeclaude is a stand-in for the claude CLI: a process a bridge can
// spawn instead of the real one, which plays a scenario over the real SDK wire
// protocol and records what it got.
//
// # Faithful by default
//
// fakeclaude does what Claude Code does in the same situation, as seen in
// captures of the real CLI. Its code writes one release, the base
// (claudecli.Base, 2.1.330); every other learned release is data
// (claudecli.Release: keys added and dropped per kind of message) that
// each message passes through on its way out, and what data cannot say is
// a claudecli.Behaviour gated by release. It plays the newest learned
// release unless FAKECLAUDE_CLI_VERSION or a recorded scenario's
// cli_version names another. It does this: it answers initialize; sends system/init
// at the start of each turn, offering AskUserQuestion only when a permission
// prompt surface is configured (--permission-prompt-tool); writes each
// scripted question as an assistant tool_use and a can_use_tool
// control_request; blocks until the matching control_response; and writes the
// tool_result the real CLI would for that answer — the canonical or neutral
// wording for an allow, the deny message, the rejection text and an
// error_during_execution result for deny+interrupt, the CLI's substitutions
// for an error response, an invalid permission result, or an updatedInput
// that fails the tool's schema. An SDK interrupt or stdin closing while a
// question is pending withdraws it with control_cancel_request, as the CLI
// does. A malformed stdin line ends the process at once, as in the CLI.
//
// # Loud on anything unexpected
//
// Unlike the real CLI, fakeclaude checks each answer against the scenario's
// expectations and fails — on stderr, in the transcript, and in its exit
// status — on a wrong answer, a response to an unknown or already answered
// request, an allow after a cancel, an unscripted prompt, stdin closing early,
// or a deadline passing. Every wait has a deadline (Options.Timeout, or
// FAKECLAUDE_TIMEOUT). The exit statuses are the Exit constants.
//
// # Misbehaviour, on purpose
//
// A scenario can make fakeclaude withdraw a pending question (cancel_after) or
// die while one is pending (exit_after), to check that a bridge copes.
//
// # Calls at once
//
// A model response that calls several tools the CLI may run concurrently
// (AskUserQuestion, Read, Glob, Grep, WebFetch, WebSearch) has them run at
// once: a step marked parallel joins the response of the call before it.
// fakeclaude then sends every control_request before any answer, writes
// each tool_result as its answer comes, and when one call aborts the turn
// (a deny with interrupt, a withdrawal) withdraws the others still pending
// before writing its result, as the real CLI does (seen with 2.1.318 to
// 2.1.332 against the fake model API).
//
// # Transcript and live events
//
// Everything fakeclaude sends and receives, with timestamps, plus notes,
// expectation checks, failures and the exit, goes to Options.Sink: from the
// command, a JSON Lines transcript file (FAKECLAUDE_TRANSCRIPT) and a live
// stream to a harness over a unix or TCP socket (FAKECLAUDE_EVENTS). The
// record format is package transcript's.
//
// # Entry points
//
// [Run] plays a scenario over any reader and writer, in-process. [Main] and
// [Command] are the command: they read flags and the environment (see [Help]).
//
// It is public: a test in another repository runs it in-process (Run) or
// spawns it, and sets its environment through Env, the only writer of its
// FAKECLAUDE_* variables.
package fakeclaude
