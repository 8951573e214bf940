#!/usr/bin/env bash
# make demo: the reference bridge with fakeclaude as its CLI, one session
# that asks two questions, answered from the command line; then what the
# agent received. Everything runs on loopback in a throwaway state directory.
set -euo pipefail
cd "$(dirname "$0")/.."
askctl=$PWD/bin/askctl
work=$(mktemp -d)
export ASKCTL_STATE_DIR=$work/state
trap 'kill "$serve" 2>/dev/null || true; wait "$serve" 2>/dev/null || true; rm -rf "$work"' EXIT

FAKECLAUDE_TRANSCRIPT=$work/agent.jsonl "$askctl" serve --claude fakeclaude --addr 127.0.0.1:0 2>"$work/serve.log" &
serve=$!
for _ in $(seq 100); do [ -f "$ASKCTL_STATE_DIR/serve.json" ] && break; sleep 0.05; done
[ -f "$ASKCTL_STATE_DIR/serve.json" ] || { cat "$work/serve.log"; exit 1; }

echo "\$ askctl session start --scenario ask-multi --prompt 'Ask me how to format.'"
"$askctl" session start --scenario ask-multi --prompt 'Ask me how to format.'
echo
echo "\$ askctl pending --wait"
"$askctl" pending --wait --timeout 10s
id=$("$askctl" pending --json | sed -n 's/.*"question_id": "\(q_[a-z0-9]*\)".*/\1/p' | head -1)
echo
echo "\$ askctl answer --id $id --set 1=Summary --set 2=Intro --set 2=Outro"
"$askctl" answer --id "$id" --set 1=Summary --set 2=Intro --set 2=Outro
for _ in $(seq 100); do grep -q '"event":"exit"' "$work/agent.jsonl" 2>/dev/null && break; sleep 0.05; done
echo
echo "What the agent (fakeclaude) received, and how it ended:"
grep '"dir":"to_cli"' "$work/agent.jsonl" | grep -o '"answers":{[^}]*}' | sed 's/^/  /'
grep -o '"event":"exit","code":[0-9]*' "$work/agent.jsonl" | sed 's/^/  /'
echo
"$askctl" session ls
