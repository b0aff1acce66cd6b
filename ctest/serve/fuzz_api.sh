#!/usr/bin/env bash
# Fuzzes a running kbrl serve ($KBRL_SERVE_URL) from its own OpenAPI document with schemathesis
# (every check: no 5xx, responses as documented, schema-invalid requests rejected, valid ones
# accepted), deterministically, for a bounded time. schemathesis comes from PyPI through
# .ci/setup-serve ($KBRL_SCHEMATHESIS, else ~/.cache/kbrl/serve/venv/bin/schemathesis). Without it:
# exit 77 (skipped), or 1 when KBRL_REQUIRE_SERVE_FUZZ=1 (CI, which has PyPI).
set -uo pipefail
st=${KBRL_SCHEMATHESIS:-${KBRL_SERVE_HOME:-$HOME/.cache/kbrl/serve}/venv/bin/schemathesis}
if [ ! -x "$st" ]; then
  echo "fuzz_api: schemathesis not found at $st: run bash .ci/setup-serve (needs PyPI)" >&2
  [ "${KBRL_REQUIRE_SERVE_FUZZ:-0}" = 1 ] && exit 1
  exit 77
fi
# /v1/openrlhf/reward takes parallel arrays (query, prompts, labels) whose equal lengths no JSON
# schema can state: there, a schema-valid request may be a 400 ("2 queries but 1 labels"), so that
# operation runs every check but the acceptance of schema-valid requests. /v1/evaluate answers an
# item that breaks the schema in its place (200, the item's error) when another item can be read,
# so it runs every check but the rejection of schema-invalid requests.
timeout 300 "$st" run "$KBRL_SERVE_URL/v1/openapi.json" --checks all --max-examples 100 \
  --exclude-path /v1/openrlhf/reward --exclude-path /v1/evaluate --generation-deterministic --request-timeout 120 \
  --no-color 2>&1 | tail -n 30
all=${PIPESTATUS[0]}
timeout 300 "$st" run "$KBRL_SERVE_URL/v1/openapi.json" --checks all --exclude-checks negative_data_rejection \
  --max-examples 100 --include-path /v1/evaluate --generation-deterministic --request-timeout 120 \
  --no-color 2>&1 | tail -n 30
evaluate=${PIPESTATUS[0]}
timeout 200 "$st" run "$KBRL_SERVE_URL/v1/openapi.json" --checks all --exclude-checks positive_data_acceptance \
  --max-examples 100 --include-path /v1/openrlhf/reward --generation-deterministic --request-timeout 120 \
  --no-color 2>&1 | tail -n 12
openrlhf=${PIPESTATUS[0]}
[ "$all" = 0 ] && [ "$evaluate" = 0 ] && [ "$openrlhf" = 0 ]
