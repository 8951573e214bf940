#!/usr/bin/env bash
# The suite under a saturated CPU: one busy loop per CPU runs in the
# background while askctl conformance runs against the reference bridge,
# with fakeclaude and with the real CLI (against askctl's fake model API),
# and while the suite's own tests run: the reference bridge over every
# surface kind passes, the chat example's verdicts hold, and every broken
# bridge is still caught.
# A shared CI runner is at least this busy; the suite must still pass, with
# no --slow. CI runs it (see .ci/run). Needs bin/askctl (make build) and,
# for the real agent, the pinned CLI (make real-cli).
set -euo pipefail
cd "$(dirname "$0")/.."
n=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)
pids=()
stop() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap stop EXIT INT TERM
for _ in $(seq "$n"); do
	sh -c 'while :; do :; done' &
	pids+=($!)
done
echo "under-load: $n busy loops running (pids ${pids[*]})"
for agent in fake real; do
	start=$(date +%s)
	./bin/askctl conformance --verbose --agent "$agent" # (a failing case prints its step log: what the bridge and the agent did)
	echo "under-load: conformance --agent $agent passed in $(( $(date +%s) - start ))s with every CPU busy"
done
start=$(date +%s)
go test -count=1 -timeout 30m -run 'TestReferenceBridge$|TestChatbotExample|TestBrokenBridges$' ./conformance
echo "under-load: the suite's tests (every surface kind, the chat example, the broken bridges) passed in $(( $(date +%s) - start ))s with every CPU busy"
