#!/usr/bin/env bash
# Answers every question a running askctl serve holds with its first option,
# as they come, until none comes for 60 seconds. Needs askctl and jq on PATH.
set -o pipefail # a failed pending (bridge gone, nothing in time) ends the loop
while q=$(askctl pending --wait --timeout "${WAIT:-60s}" --json | jq -ce '.[0]'); do
  mapfile -t sets < <(jq -r '.questions | to_entries[] | "--set=\(.key + 1)=\(.value.options[0].label)"' <<<"$q")
  askctl answer --id "$(jq -r .question_id <<<"$q")" "${sets[@]}" || exit
done
