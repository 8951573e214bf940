// Package bridge is askctl's reference bridge, behind askctl serve: it holds
// Claude Code's questions for people, and sends each answer back exactly
// once.
//
// Each session spawns a claude CLI (or fakeclaude) with the SDK flags and
// drives it with package sdk. An AskUserQuestion can_use_tool request becomes
// a pending [Question] with a short id (q_…) that holds its 1 to 4
// questions; can_use_tool for other tools follows a policy (allow with the
// original input, or deny) at once. A question ends one way only, and the
// agent gets exactly one control_response:
//
//   - answered: every question has an answer, none blank; multiSelect labels
//     are joined with ", " in the order given; free text passes verbatim.
//     Answers to part of a request are held until the rest come;
//   - skipped: a deny whose message is the person's reason;
//   - expired: nobody answered within the timeout (300 s by default): a deny
//     saying it timed out, and ask_user_timeout on the surfaces;
//   - cancelled: the agent withdrew it (control_cancel_request);
//   - withdrawn: the agent exited, or its session was stopped.
//
// A later answer gets [ErrResolved]; a malformed one [ErrInvalid], and the
// question stays pending. Sessions, questions and events live in a SQLite
// file (WAL) and are written before any surface hears of them: a bridge
// killed with a question pending lists it again when it starts, marked
// orphaned, and an answer to it resumes the session (claude --resume with the
// CLI's session id) with a first message that states the question and the
// answer — seed 004's late-answer path — and the surfaces get
// ask_user_resumed.
//
// # Across a crash
//
// A reply (answer, skip, timeout) is stored "due" with its resolution and
// marked delivered once it is written whole to the agent; a session is
// stored "running" before its agent gets the prompt. A bridge that starts
// after a crash:
//
//   - starts the sessions still "starting" (they never got their prompt);
//   - for each reply still due, waits for the lost agent to end, reads the
//     agent's session file, and, unless the reply is there, resumes the
//     session with it: exactly once, whatever moment the crash came;
//   - stores, as orphaned questions, the AskUserQuestion calls the agents
//     of lost sessions made with no tool_result in their session files
//     (asked as the bridge died);
//   - keeps every pending question's deadline (an orphaned one expires
//     then, with no agent to tell), and has the policy decide them.
//
// Resumed sessions start in slots of their own, never behind a burst of new
// ones. [Config.Crash] names the points the kill tests stop the bridge at.
//
// # Wire contract
//
// The HTTP API, the events, the WebSocket and control surfaces, the client
// and the state directory are package [github.com/askctl/askctl/bridgeapi]:
// the server here and every adapter (askctl's commands, the conformance
// harness, a third-party UI written in Go) import it, and neither imports
// the other. This package is the server: it links the SQLite store and
// spawns agents through package claudecli, and nothing that only talks to a
// bridge should import it.
package bridge
