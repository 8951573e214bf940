#!/usr/bin/env python3
"""askctl exec adapter for {{.Name}}: plays the person on your bridge's
surface for askctl conformance. Written by askctl init; fill in each TODO.

askctl runs this program once per case and speaks JSON Lines with it: one
request a line on stdin, one reply (with the request's "id") or event a line
on stdout. The contract: askctl's conformance/README.md, "The exec contract".

Until an operation is written it replies "unsupported", and the suite says
which: until start is written no case can run (each is NOT-RUN, naming it);
after that, a case that needs a missing operation is a SKIP that names it.

    askctl conformance --bridge {{.Profile}}

Your limits, already scaled by --slow, are in the environment:
ASKCTL_LIMIT_OP, ASKCTL_LIMIT_START, ASKCTL_LIMIT_RECONNECT (Go durations,
"10s") and ASKCTL_SLOW. Python 3.8+, standard library only.
"""
import json
import sys
import threading

_out = threading.Lock()

# Where your bridge is: the profile passes them (surface.args), and may pass
# more; ${PORT} and ${STATE} are the bridge's port and state directory, as in
# start.args (a token file there, say).
BRIDGE_URL = sys.argv[1] if len(sys.argv) > 1 else ""
STATE_DIR = sys.argv[2] if len(sys.argv) > 2 else ""


def send(obj):
    """Write one reply or event (any thread)."""
    line = json.dumps(obj, separators=(",", ":"))
    with _out:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def event(conn, typ, **fields):
    """Tell askctl what connection conn's person now sees. typ is one of
    question, expired, answered, held, skipped, withdrawn, resumed, status,
    taken, closed; fields as they apply: question_id, session_id, questions
    (the request's questions as the agent sent them), reason, time (RFC 3339,
    when your bridge says it happened); for status, waiting_for_user and
    pending_question_id. A permission prompt of another tool is type
    "permission" with question_id, session_id, tool_name and input."""
    fields["type"] = typ
    send({"conn": conn, "event": fields})


class Refused(Exception):
    """Your bridge refused the operation. code: resolved (already answered,
    skipped, expired, withdrawn), invalid, not_found, session_taken or
    bad_request."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


class Unsupported(Exception):
    """Your surface has no such operation (a chat with no skip button)."""


class Ignored(Exception):
    """Your surface took it and did nothing (an empty message a chat drops)."""


class Surface:
    """One person on your bridge's surface. Each method is an operation of
    the contract; raise Refused, Unsupported or Ignored as it went."""

    def start(self, prompt):
        # TODO start a session of your bridge with this first message, the
        # way a person does, and return its id.
        raise Unsupported("TODO: start is not written yet ({{.Adapter}})")

    def open(self, session, conn):
        # TODO connect a person to session (a WebSocket, a chat thread…) and
        # call event(conn, ...) for what they see from now on, from a thread
        # of yours; show the questions that wait first. A second open of the
        # same session is a reconnect, or a takeover.
        raise Unsupported("TODO: open is not written yet ({{.Adapter}})")

    def close(self, conn):
        # TODO the person goes away: end conn's connection.
        raise Unsupported("TODO: close is not written yet ({{.Adapter}})")

    def drop(self, conn):
        # TODO only if your surface can resume a dropped link: end conn's
        # event stream as a network would (no more events), keeping where it
        # was; return once it is down.
        raise Unsupported("TODO: drop is not written yet ({{.Adapter}})")

    def resume(self, conn):
        # TODO reconnect conn's stream asking for what it missed since it
        # dropped (SSE's Last-Event-ID, a chat's history since a message):
        # every event after that point once, none before it.
        raise Unsupported("TODO: resume is not written yet ({{.Adapter}})")

    def pending(self, conn):
        # TODO the questions conn's person sees waiting, as
        # [{"question_id": …, "session_id": …, "questions": […]}].
        raise Unsupported("TODO: pending is not written yet ({{.Adapter}})")

    def answer(self, conn, question_id, answers):
        # TODO answer as the person would: answers maps each question's text
        # to the labels picked, in order (one element for a single-select
        # question or free text). Return {"status": "answered"}, or
        # {"status": "held", "missing": [...]} when your bridge holds a part.
        raise Unsupported("TODO: answer is not written yet ({{.Adapter}})")

    def skip(self, conn, question_id, reason):
        # TODO skip the question as the person would, with their reason.
        raise Unsupported("TODO: skip is not written yet ({{.Adapter}})")

    def raw(self, conn, question_id, data):
        # TODO send data as what a person's answer to question_id carries on
        # your surface (a chat message's text, an HTTP body): it is malformed
        # on purpose, and your bridge should refuse it (raise Refused).
        raise Unsupported("TODO: raw is not written yet ({{.Adapter}})")

    def permit(self, conn, question_id, allow, reason):
        # TODO only if your bridge puts other tools' permission prompts to
        # the person (capability "permissions"): allow, or deny with reason.
        raise Unsupported("TODO: permit is not written yet ({{.Adapter}})")


def handle(surface, req):
    op = req.get("op")
    if op == "start":
        return {"session": surface.start(req.get("prompt", ""))}
    if op == "open":
        surface.open(req.get("session", ""), req.get("conn", ""))
        return {}
    if op == "close":
        surface.close(req.get("conn", ""))
        return {}
    if op == "drop":
        surface.drop(req.get("conn", ""))
        return {}
    if op == "resume":
        surface.resume(req.get("conn", ""))
        return {}
    if op == "pending":
        return {"pending": surface.pending(req.get("conn", ""))}
    if op == "answer":
        return surface.answer(req.get("conn", ""), req.get("question_id", ""), req.get("answers", {})) or {"status": "answered"}
    if op == "skip":
        surface.skip(req.get("conn", ""), req.get("question_id", ""), req.get("reason", ""))
        return {}
    if op == "raw":
        surface.raw(req.get("conn", ""), req.get("question_id", ""), req.get("data", ""))
        return {}
    if op == "permit":
        surface.permit(req.get("conn", ""), req.get("question_id", ""), bool(req.get("allow")), req.get("reason", ""))
        return {}
    raise Unsupported("no operation %r" % op)


def main():
    surface = Surface()
    for line in sys.stdin:
        if not line.strip():
            continue
        req = json.loads(line)
        if req.get("probe"):
            # askctl asks whether you have an operation before it waits on
            # what only it can answer: unsupported while it is a TODO.
            try:
                handle(surface, req)
                reply = {}
            except Unsupported as e:
                reply = {"unsupported": True, "error": str(e)}
            except Exception:
                reply = {}  # it is written: it tried, and refused an empty request
            reply["id"] = req.get("id")
            send(reply)
            continue
        try:
            reply = handle(surface, req)
        except Refused as e:
            reply = {"error": str(e), "code": e.code}
        except Unsupported as e:
            reply = {"unsupported": True, "error": str(e)}
        except Ignored:
            reply = {"ignored": True}
        # Any other exception is a bug of the adapter's: it ends the program,
        # and askctl quotes the traceback's last lines (stderr) in the case's
        # error. (A reply with an error would pass for the bridge refusing.)
        reply["id"] = req.get("id")
        send(reply)


if __name__ == "__main__":
    main()
