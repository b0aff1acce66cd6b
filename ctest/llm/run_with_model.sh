#!/usr/bin/env bash
# Runs a command against the local language-model server that the llama_server CTest fixture
# started: every argument's "@LLM_URL@" becomes the server's URL (read from STATE_DIR/url).
#   run_with_model.sh STATE_DIR COMMAND [ARG ...]
# Without a server (no llama-server or model installed: see .ci/setup-llm) it reports SKIPPED and
# exits 77, which CTest counts as skipped; with KBRL_REQUIRE_LLM=1 (CI) that is a failure instead.
set -euo pipefail
state=$1
shift
url=$(cat "$state/url" 2>/dev/null || true)
if [ -z "$url" ]; then
  if [ "${KBRL_REQUIRE_LLM:-0}" = 1 ]; then
    echo "run_with_model: no language-model server (see $state/server.log; install with .ci/setup-llm), and KBRL_REQUIRE_LLM=1" >&2
    exit 1
  fi
  echo "run_with_model: SKIPPED: no language-model server (install one with bash .ci/setup-llm)"
  exit 77
fi
args=()
for a in "$@"; do args+=("${a//@LLM_URL@/$url}"); done
exec "${args[@]}"
