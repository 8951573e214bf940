#!/usr/bin/env python3
"""A minimal bridge over Claude Code's SDK control protocol, standard library only.

It spawns claude (or fakeclaude) the way the Agent SDKs do, sends one prompt,
and answers every AskUserQuestion can_use_tool request from --answer rules;
a question with no rule gets its first option. Other tools are allowed as
asked. Run it against fakeclaude to test it with no model and no person:

    FAKECLAUDE_SCENARIO=ask-multi python3 minimal_bridge.py --claude fakeclaude \
        --answer 'How should I format the output?=Summary' \
        --answer 'Which sections?=Intro' --answer 'Which sections?=Outro'

It prints what it answered and the agent's exit status, and exits with it.
"""
import argparse
import json
import subprocess
import sys

SDK_FLAGS = ["--output-format", "stream-json", "--verbose", "--input-format", "stream-json",
             "--permission-prompt-tool", "stdio"]


def send(proc, msg):
    proc.stdin.write(json.dumps(msg) + "\n")
    proc.stdin.flush()


def answers_for(questions, rules):
    """Answers keyed by the full question text; multiSelect labels joined with ", "."""
    out = {}
    for q in questions:
        labels = rules.get(q["question"]) or [q["options"][0]["label"]]
        out[q["question"]] = ", ".join(labels) if q.get("multiSelect") else labels[0]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--claude", default="claude", help="the CLI to spawn (claude, fakeclaude)")
    ap.add_argument("--prompt", default="Ask me how to format.")
    ap.add_argument("--answer", action="append", default=[], metavar="QUESTION=LABEL",
                    help="answer QUESTION with LABEL; repeat for each label of a multiSelect question")
    args = ap.parse_args()
    rules = {}
    for rule in args.answer:
        question, _, label = rule.rpartition("=")
        rules.setdefault(question, []).append(label)

    proc = subprocess.Popen([args.claude] + SDK_FLAGS, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    send(proc, {"type": "control_request", "request_id": "req_1", "request": {"subtype": "initialize", "hooks": None}})
    send(proc, {"type": "user", "message": {"role": "user", "content": args.prompt},
                "parent_tool_use_id": None, "session_id": "default"})
    for line in proc.stdout:
        msg = json.loads(line)
        if msg["type"] == "control_request" and msg["request"]["subtype"] == "can_use_tool":
            req = msg["request"]
            if req["tool_name"] == "AskUserQuestion":
                answers = answers_for(req["input"]["questions"], rules)
                result = {"behavior": "allow", "updatedInput": {"questions": req["input"]["questions"], "answers": answers}}
                print("answered:", json.dumps(answers))
            else:
                result = {"behavior": "allow", "updatedInput": req["input"]}
            send(proc, {"type": "control_response",
                        "response": {"subtype": "success", "request_id": msg["request_id"], "response": result}})
        elif msg["type"] == "result":
            proc.stdin.close()  # one prompt, one turn: the CLI exits when stdin closes
    code = proc.wait()
    print("agent exited", code)
    sys.exit(code)


if __name__ == "__main__":
    main()
