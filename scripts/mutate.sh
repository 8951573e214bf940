#!/usr/bin/env bash
# make mutate: mutation testing of the reference bridge and the MCP ask
# server, with the conformance suite as the oracle (internal/mutation).
#
# gremlins (pinned below) mutates one package's source at a time and runs
# `go test -tags mutation` there: under that tag the package's tests are the
# conformance suite against askctl built from the mutated source. Each file
# group is checked through the surface that exercises it. Reports land in
# .mutate/ (JSON and gremlins' log, one each per group). Not in CI: over
# an hour on 2 cores with the explorer (MUTATE_WORKERS, default 2).
#
#   scripts/mutate.sh            every group
#   scripts/mutate.sh control    one group (see ALL_GROUPS)
#
# ASKCTL_MUTATE_EXPLORE=20s adds an exploration of that long (seed 1) to the
# oracle, after the cases pass: the score with the explorer (reports in
# .mutate/explore-*). Each group's ledger (.mutate/*-ledger.tsv) says
# for each mutant judged what killed it, the cases or the explorer, so one
# run with the explorer also gives the score without it.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
# The oracle's test binary does not change with the mutant (it builds askctl
# from source in a subprocess): go test must not serve a cached pass.
export GOFLAGS="${GOFLAGS:+$GOFLAGS }-count=1"
gremlins="go run github.com/go-gremlins/gremlins/cmd/gremlins@v0.6.0"
out="$root/.mutate"
prefix=""
[ -z "${ASKCTL_MUTATE_EXPLORE:-}" ] || prefix="explore-"
mkdir -p "$out"

# group: package dir, profiles (surfaces, in turn), the files mutated (a
# regexp). The core files run through http as well as ws: the SSE stream's
# ids (the events' sequence numbers) show only there.
declare -A DIR PROFILE FILES
DIR[core]=bridge;            PROFILE[core]=ws,http;          FILES[core]='^(bridge|session|question|publish|locks|store|events|model|mcp)\.go$'
DIR[ws]=bridge;              PROFILE[ws]=ws;            FILES[ws]='^ws\.go$'
DIR[http]=bridge;            PROFILE[http]=http;        FILES[http]='^http\.go$'
DIR[control]=bridge;         PROFILE[control]=control-ws; FILES[control]='^control\.go$'
DIR[mcpask]=internal/mcpask; PROFILE[mcpask]=ws;        FILES[mcpask]='^mcpask\.go$'
ALL_GROUPS=(core ws http control mcpask)

# The unmutated source the ledger finds each mutant against, as it was when
# the run began (so editing the tree meanwhile does not confuse it).
origin="$out/origin"
rm -rf "$origin"
for d in bridge internal/mcpask; do
	mkdir -p "$origin/$d"
	cp "$d"/*.go "$origin/$d/"
done

groups=("$@")
[ ${#groups[@]} -gt 0 ] || groups=("${ALL_GROUPS[@]}")
for g in "${groups[@]}"; do
	[ -n "${DIR[$g]:-}" ] || { echo "mutate: no group $g (groups: ${ALL_GROUPS[*]})" >&2; exit 2; }
	dir=${DIR[$g]}
	# Exclude every Go file of the package but the group's.
	excl=()
	for f in "$dir"/*.go; do
		b=$(basename "$f")
		[[ $b =~ _test\.go$ ]] && continue
		[[ $b =~ ${FILES[$g]} ]] && continue
		excl+=(-E "(^|/)$b\$")
	done
	ledger="$out/$prefix$g-ledger.tsv"
	: > "$ledger"
	echo "mutate: $g: $dir (${FILES[$g]}) through the ${PROFILE[$g]} surface"
	(cd "$dir" && ASKCTL_MUTATE_PROFILE=${PROFILE[$g]} ASKCTL_MUTATE_LEDGER=$ledger ASKCTL_MUTATE_ORIGIN=$origin $gremlins unleash \
		--tags mutation --coverpkg github.com/askctl/askctl/$dir \
		--workers "${MUTATE_WORKERS:-2}" --timeout-coefficient 4 \
		"${excl[@]}" -o "$out/$prefix$g.json" "$root/$dir") | tee "$out/$prefix$g.log"
done
# The score, by file: what the cases killed, what only the explorer did.
go run ./internal/mutation/report -prefix "$prefix" -survivors "$out" | tee "$out/${prefix}score.md"
