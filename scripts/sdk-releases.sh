#!/usr/bin/env bash
# The TypeScript Agent SDK tests, with the SDK release npm published with the
# newest and with the oldest learned claude release, each driving fakeclaude
# playing that claude release. Each SDK release is installed once, under
# bin/sdk/. Needs npm, node and jq (CI installs jq).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v jq >/dev/null || { echo "sdk-releases: jq not found (apt-get install jq)" >&2; exit 3; }
releases=$(./bin/askctl claude releases --json)
for which in last first; do
  cli=$(jq -r ".|$which|.version" <<<"$releases")
  sdk=$(jq -r ".|$which|.agent_sdk // empty" <<<"$releases")
  if [ -z "$sdk" ]; then
    echo "sdk-releases: claude $cli has no agent_sdk in claudecli/releases/$cli.json (askctl claude learn $cli writes it)" >&2
    exit 1
  fi
  dir=bin/sdk/$sdk
  if [ ! -e "$dir/node_modules/.installed" ]; then
    mkdir -p "$dir"
    printf '{"name":"askctl-sdk-%s","private":true,"type":"module","dependencies":{"@anthropic-ai/claude-agent-sdk":"%s"}}\n' "$sdk" "$sdk" >"$dir/package.json"
    (cd "$dir" && npm install --no-audit --no-fund --omit=optional --ignore-scripts --save-exact >/dev/null)
    touch "$dir/node_modules/.installed"
  fi
  cp testdata/sdk/*.mjs "$dir/"
  echo "== the TypeScript SDK $sdk driving fakeclaude as claude $cli"
  ASKCTL_SDK_DIR=$PWD/$dir FAKECLAUDE_CLI_VERSION=$cli ASKCTL_REQUIRE_NPM=1 go test -count=1 -run '^TestTypeScriptSDK' ./fakeclaude
done
