#!/usr/bin/env python3
"""An exec surface for askctl's harness: the reference bridge's HTTP API
behind askctl's exec contract (surface/exec.go, conformance/README.md).

askctl runs this program once per case, writes one JSON request a line on its
stdin, and reads one JSON reply or event a line from its stdout. A bridge
with a Slack, WhatsApp or any other surface ships a program like this one
that drives its own test channel; this one drives the reference bridge
(askctl serve) over HTTP and SSE. Python 3.8+, standard library only.

    python3 reference_surface.py --url http://127.0.0.1:7474 --token-file ~/.local/state/askctl/token
"""
import argparse
import http.client
import json
import socket
import sys
import threading
import urllib.parse

EVENT_TYPES = {
    "ask_user_question": "question",
    "ask_user_timeout": "expired",
    "ask_user_answered": "answered",
    "ask_user_held": "held",
    "ask_user_skipped": "skipped",
    "ask_user_withdrawn": "withdrawn",
    "ask_user_resumed": "resumed",
    "session_status": "status",
}

out_lock = threading.Lock()


def emit(obj):
    line = json.dumps(obj, separators=(",", ":"))
    with out_lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


class Bridge:
    def __init__(self, url, token):
        u = urllib.parse.urlsplit(url)
        self.host, self.port = u.hostname, u.port or 80
        self.token = token

    def request(self, method, path, body=None, raw=None):
        conn = http.client.HTTPConnection(self.host, self.port, timeout=10)
        data = raw.encode() if raw is not None else (json.dumps(body).encode() if body is not None else None)
        headers = {"Authorization": "Bearer " + self.token, "Content-Type": "application/json"}
        try:
            conn.request(method, path, body=data, headers=headers)
            resp = conn.getresponse()
            payload = resp.read()
        finally:
            conn.close()
        try:
            doc = json.loads(payload) if payload else {}
        except ValueError:
            doc = {"code": "internal", "error": payload.decode(errors="replace")}
        if resp.status >= 400:
            raise Rejected(doc.get("code", str(resp.status)), doc.get("error") or resp.reason)
        return resp.status, doc


class Rejected(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code, self.message = code, message


class Stream(threading.Thread):
    """One connection: the session's SSE stream, turned into events."""

    def __init__(self, bridge, session, conn_id, last_id=None):
        super().__init__(daemon=True)
        self.bridge, self.session, self.conn_id = bridge, session, conn_id
        self.closing = False
        self.last_id = last_id  # the id of the last event heard, for a resume
        path = "/api/events?" + urllib.parse.urlencode({"session": session})
        self.http = http.client.HTTPConnection(bridge.host, bridge.port, timeout=None)
        headers = {"Authorization": "Bearer " + bridge.token, "Accept": "text/event-stream"}
        if last_id is not None:
            headers["Last-Event-ID"] = last_id  # what was missed, and nothing before
        self.http.request("GET", path, headers=headers)
        self.resp = self.http.getresponse()
        if self.resp.status != 200:
            body = self.resp.read()
            try:
                doc = json.loads(body)
            except ValueError:
                doc = {}
            raise Rejected(doc.get("code", str(self.resp.status)), doc.get("error", self.resp.reason))

    def run(self):
        data = []
        event_id = None
        reason = "the event stream ended"
        try:
            while True:
                line = self.resp.fp.readline()
                if not line:
                    break
                line = line.decode().rstrip("\r\n")
                if line.startswith("data: "):
                    data.append(line[len("data: "):])
                elif line.startswith("id: "):
                    event_id = line[len("id: "):]
                elif line == "" and data:
                    if self.closing:
                        break  # dropped: what comes after is the resume's
                    self.forward(json.loads("".join(data)), event_id)
                    self.last_id = event_id
                    data = []
        except Exception as e:  # the connection was cut
            reason = str(e)
        if not self.closing:
            emit({"conn": self.conn_id, "event": {"type": "closed", "session_id": self.session, "reason": reason}})

    def forward(self, e, event_id=None):
        ev = {
            "type": EVENT_TYPES.get(e.get("type"), "other"),
            "question_id": e.get("question_id", ""),
            "session_id": e.get("session_id", ""),
            "time": e.get("time"),
        }
        if event_id and event_id.isdigit():
            ev["seq"] = int(event_id)
        if e.get("questions"):
            ev["questions"] = e["questions"]
        if e.get("type") == "ask_user_timeout":
            ev["reason"] = e.get("error", "")
        elif e.get("reason"):
            ev["reason"] = e["reason"]
        if e.get("type") == "session_status":
            ev["waiting_for_user"] = bool(e.get("waiting_for_user"))
            ev["pending_question_id"] = e.get("pending_question_id") or ""
        emit({"conn": self.conn_id, "event": ev})

    def close(self):
        self.closing = True
        try:
            self.http.sock.shutdown(socket.SHUT_RDWR)
        except (OSError, AttributeError):
            pass
        self.http.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", required=True, help="the bridge, e.g. http://127.0.0.1:7474")
    ap.add_argument("--token-file", required=True, help="the bridge's token file")
    ap.add_argument("--no-skip", action="store_true", help="play a chat surface with no skip button: the skip op is unsupported")
    ap.add_argument("--drop-empty", action="store_true", help="play a chat that drops an empty message: a blank answer is ignored")
    ap.add_argument("--lacks", default="", help="comma-separated operations to play as missing (unsupported), as an adapter not written yet")
    ap.add_argument("--no-resume", action="store_true", help="play a surface that cannot resume a dropped stream: drop is unsupported")
    ap.add_argument("--drop-refused", action="store_true", help="play a chat that says nothing when the bridge refuses an answer or skip (too late, malformed): it is ignored")
    args = ap.parse_args()
    with open(args.token_file) as f:
        bridge = Bridge(args.url, f.read().strip())
    conns = {}  # conn id -> (session, Stream)

    def q(qid, session, action):
        return "/api/questions/%s/%s?%s" % (urllib.parse.quote(qid), action, urllib.parse.urlencode({"session": session}))

    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        req = json.loads(line)
        rid, op = req.get("id"), req.get("op")
        if op in args.lacks.split(","):
            emit({"id": rid, "unsupported": True, "error": "TODO: %s is not written yet" % op})
            continue
        try:
            if op == "start":
                _, s = bridge.request("POST", "/api/sessions", {"prompt": req["prompt"]})
                emit({"id": rid, "session": s["id"]})
            elif op == "open":
                st = Stream(bridge, req["session"], req["conn"])
                conns[req["conn"]] = (req["session"], st)
                st.start()
                emit({"id": rid})
            elif op == "pending":
                session = conns[req["conn"]][0]
                _, qs = bridge.request("GET", "/api/questions?" + urllib.parse.urlencode({"session": session}))
                emit({"id": rid, "pending": [{"question_id": x["question_id"], "session_id": x["session_id"], "questions": x["questions"]} for x in qs]})
            elif op == "answer" and args.drop_empty and any(not "".join(v).strip() for v in req["answers"].values()):
                emit({"id": rid, "ignored": True})
            elif op == "answer":
                session = conns[req["conn"]][0]
                answers = {k: (v[0] if len(v) == 1 else v) for k, v in req["answers"].items()}
                status, res = bridge.request("POST", q(req["question_id"], session, "answer"), {"answers": answers})
                if status == 202:
                    emit({"id": rid, "status": "held", "missing": res.get("missing", [])})
                else:
                    emit({"id": rid, "status": "answered"})
            elif op == "skip" and args.no_skip:
                emit({"id": rid, "unsupported": True, "error": "this chat has no skip button"})
            elif op == "skip":
                session = conns[req["conn"]][0]
                bridge.request("POST", q(req["question_id"], session, "skip"), {"reason": req.get("reason", "")})
                emit({"id": rid})
            elif op == "raw":
                session = conns[req["conn"]][0]
                bridge.request("POST", q(req["question_id"], session, "answer"), raw=req["data"])
                emit({"id": rid})
            elif op == "close":
                session, st = conns.pop(req["conn"])
                st.close()
                emit({"id": rid})
            elif op == "drop" and args.no_resume:
                emit({"id": rid, "unsupported": True, "error": "this surface cannot resume a dropped stream"})
            elif op == "drop":
                # The link drops as a network's would: the stream ends, and
                # the id of the last event heard is kept for the resume.
                session, st = conns[req["conn"]]
                st.close()
                st.join(5)
                emit({"id": rid})
            elif op == "resume":
                session, st = conns[req["conn"]]
                again = Stream(bridge, session, req["conn"], st.last_id)
                conns[req["conn"]] = (session, again)
                again.start()
                emit({"id": rid})
            else:
                emit({"id": rid, "unsupported": True, "error": "this surface has no %r operation" % op})
        except Rejected as e:
            if args.drop_refused and op in ("answer", "skip", "raw"):
                emit({"id": rid, "ignored": True})
            else:
                emit({"id": rid, "error": e.message, "code": e.code})
        except KeyError as e:
            emit({"id": rid, "error": "missing or unknown %s" % e, "code": "bad_request"})
        except OSError as e:
            emit({"id": rid, "error": "bridge unreachable: %s" % e, "code": "unreachable"})
    for _, st in conns.values():
        st.close()


if __name__ == "__main__":
    main()
