// Package harness drives any bridge with no model and no person: it starts
// the bridge a Profile describes, points it at a claude that is fakeclaude
// (or the real CLI, through a shim), plays the person through the bridge's
// own surface, and waits for what must happen with deadlines.
//
// It is public: a bridge author's own tests import it, and so does the
// conformance suite. It plays the person through package surface (which
// askctl answer uses alone), and reaches the reference bridge only through
// its wire contract, package bridgeapi, never through the server.
//
// # The parts
//
//   - A Profile says how to start the bridge, how it finds its CLI, and its
//     surface (a surface.Spec): ws, control-ws, http, exec or browser (the
//     last with package surface/browser imported). surface.New returns the
//     adapter; a surface.Conn is one person's connection (Pending, Sync,
//     Answer, Skip, SendRaw).
//   - An Env is one run: the bridge, its surface, and State — every record
//     the agents write and every event the surfaces tell, turned into typed
//     facts as they arrive (SessionState: requests with their responses
//     and tool_results, turns, the exit, failures, questions shown).
//   - A Session is a handle on one session of the Env, by alias: what the
//     person does (AwaitQuestion, Answer, Skip) and what is read back
//     (Response, Delivered, ToolResult, Check).
//
// # Writing a test
//
//	env, err := harness.NewEnv(ctx, profile, harness.Options{Work: t.TempDir()})
//	…
//	defer env.Close()
//	sc, _ := scenarios.Builtin("ask-single")
//	if err := env.Start(ctx, "s1", sc, 30*time.Second); err != nil { … }
//	s := env.Session("s1")
//	qid, err := s.AwaitQuestion(ctx, "main", false)
//	answers, _ := s.ScenarioAnswers(qid)
//	if _, err := s.Answer(ctx, "main", qid, answers); err != nil { … }
//	problems, err := s.Check(ctx) // after the agent's own verdict
//
// # Expressing expectations
//
// An Expectation is a read-only check over State with a three-valued
// Verdict: Met, Unmet, or Unmeetable (it can no longer hold: the agent
// exited, the connection closed), so Env.Await fails at once rather than
// at its deadline, with the condition and the reason. They live in
// expectations.go (NewQuestion, SurfaceSaw, Responses, Verdicts, Turns,
// Exited, …) and combine with AllOf, AnyOf and Not; Env.Hold checks that one
// stays met for a while ("this never happens").
//
// # Tips
//
//   - Await a precondition, never sleep: every wait has a context deadline,
//     and an expectation that cannot be met fails at once.
//   - Read the agent's verdict last: Session.Check waits until the agent
//     has reacted to every answer it received before it reads its failures.
//   - A failure to set the bridge up (start it, start a session through it)
//     is a *SetupError, distinct from a requirement failing.
package harness
