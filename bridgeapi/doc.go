// Package bridgeapi is the wire contract of askctl's reference bridge
// (askctl serve, package bridge): the request and response types of its
// HTTP API, its events, the WebSocket and control-surface messages, a
// [Client], and the state directory where a running bridge leaves its token
// and endpoint. It is public: import it to talk to the reference bridge
// from Go (a UI, a bot, a test) without linking the server, its SQLite
// store or the agents it spawns.
//
// The answer rules (labels, joining, free text, partial sets) are not here
// but in package protocol, shared by the bridge, askctl's commands and the
// surface adapters.
//
// # HTTP API
//
// Every request names a Host the bridge answers to (a loopback name, or one
// it was given; 403 forbidden_host otherwise, against DNS rebinding), and
// every request but GET /api/health needs "Authorization: Bearer TOKEN"
// (the WebSocket and SSE endpoints also take ?token=, as browsers cannot set
// headers there; the WebSocket also takes the page's key, offered as the
// subprotocol "askctl.key.KEY" beside "askctl", which the bridge answers). Bodies are JSON, at most 1 MiB, with no unknown fields.
//
//	GET    /api/sessions                   every session, oldest first
//	POST   /api/sessions                   {"prompt":"…","scenario":"…"} → 201 the session
//	GET    /api/sessions/{id}              one session
//	DELETE /api/sessions/{id}              stop it (stdin closed, then killed after a grace)
//	GET    /api/sessions/{id}/log          what happened: its events in order, and the end of its agent's stderr (SessionLog)
//	GET    /api/questions?status=&session= pending ones by default; status=all for every one
//	GET    /api/questions/{id}             one question
//	POST   /api/questions/{id}/answer      {"answers":{"<question text or number from 1>":"<label or text>" | ["<label>",…]}}
//	                                       → 200 answered, 202 held (part of a request: "missing" lists the rest)
//	POST   /api/questions/{id}/skip        {"reason":"…","interrupt":false}
//	                                       answer and skip take ?session=ID: a question of another session is 404
//	POST   /api/mcp                        {"label":"…"} → 201 an MCP ask_user server's session (askctl mcp)
//	POST   /api/mcp/{id}/ask               {"questions":[…]} → 200 the question once resolved (held open until then;
//	                                       a client that goes away withdraws it)
//	GET    /api/events?session=            the event stream (SSE)
//	GET    /ws?session_id=                 the WebSocket surface
//	POST   /api/login                      → 201 {"path":"/login?code=…","expires_at"}: a one-time login link
//	GET    /login?code=                    logs a browser in to the page (once): hands it a key, then to /
//	GET    /                               the page: sessions and questions, over /ws
//	GET    /control?session_id=            the control surface: the CLI's own messages
//
// Errors are {"code":"…","error":"…"}: 400 bad_request (malformed JSON,
// wrong types, unknown fields), 401 unauthorized, 404 not_found, 409
// resolved (already answered, skipped, expired or withdrawn), 413 too_large,
// 422 invalid (unknown question, blank answer, several labels for a
// single-select question), 500 internal.
//
// # Events
//
// Every surface gets the same events ([Event]), numbered by seq:
//
//	ask_user_question   {"question_id","session_id","questions":[…],"timeout_seconds"}
//	ask_user_timeout    {"question_id","error":"User response timed out"}
//	ask_user_answered   {"question_id","answers":{…},"rule"}       rule: a policy's, not a person (serve --policy)
//	ask_user_held       {"question_id","answers":{…},"reason"}     part of a request answered
//	ask_user_skipped    {"question_id","reason","rule"}
//	ask_user_withdrawn  {"question_id","reason"}                   cancelled by the agent, or it exited
//	ask_user_resumed    {"question_id","answers","reason"}         a late answer resumed the session
//	session_status      {"session_id","status","waiting_for_user","pending_question_id","exit_code","detail"}
//	                    (exit_code and detail once the agent has ended: its status, and why, such as
//	                    its last error result)
//
// The SSE stream sends each as "id: <seq>\nevent: <type>\ndata: <json>".
// A client that reconnects with Last-Event-ID gets every event it missed;
// a new client first gets the pending questions (without ids), then events
// as they happen. A Last-Event-ID ahead of the bridge's log (another log's:
// a new database) is taken as a new client's.
//
// # WebSocket
//
// GET /ws?session_id=ID is one session's surface (without session_id, every
// session's), in the protocol of seed 003. On connect the bridge sends
// session_status (of every session, without session_id) and replays every
// pending question with its id, then the events above as they happen. The client answers with
//
//	{"type":"ask_user_response","data":{"question_id":"q_…","answers":{"<question text>":"<label>"},"cancelled":false}}
//
// (the data fields may also stand at the top level; "cancelled": true skips,
// with an optional "reason"), and gets
//
//	{"type":"ask_user_ack","question_id","status":"answered"|"held"|"skipped","missing":[…]}
//	{"type":"error","question_id","code":"invalid"|"resolved"|"not_found"|"session_taken"|"bad_request","error":"…"}
//
// A newer connection to the same session takes it over: the older one gets
// {"type":"session_taken","session_id"} and its answers are rejected with
// code session_taken. The upgrade checks Origin (a page of another site must
// not reach a loopback bridge; Server.OriginPatterns allows more), and a
// message over 1 MiB closes the connection with status 1009.
//
// # Control surface
//
// GET /control?session_id=ID forwards the CLI's own messages, as seed 001
// does: a question arrives as its can_use_tool control_request, with the
// question id as request_id, and the client answers with a control_response
// (allow with updatedInput.answers, or deny with a message to skip). The end
// of a question arrives as control_cancel_request with a status (answered,
// skipped, expired, withdrawn). Acks, errors, replay on connect and takeover
// are as on /ws. See [ControlMessage].
//
// # State
//
// [StateDir] holds the database, the token (0600) and serve.json, where a
// running bridge listens, so askctl's commands find it with no flags.
package bridgeapi
