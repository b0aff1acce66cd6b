#!/usr/bin/env bash
# Runs examples/test_verifiers_env.py (verifiers_env.py through verifiers 0.4's own loader, scoring
# and CLIs) against $KBRL_SERVE_URL with the python of the verifiers 0.4 venv that .ci/setup-serve
# makes ($KBRL_SERVE_HOME/venv-verifiers04, default ~/.cache/kbrl/serve). Without it: exit 77
# (skipped), or 1 when KBRL_REQUIRE_VERIFIERS=1 (CI, which has PyPI).
py=${KBRL_SERVE_HOME:-$HOME/.cache/kbrl/serve}/venv-verifiers04/bin/python
if [ ! -x "$py" ]; then
  echo "run_verifiers_env: no verifiers 0.4 venv at ${py%/bin/python}: run bash .ci/setup-serve (needs PyPI)" >&2
  [ "${KBRL_REQUIRE_VERIFIERS:-0}" = 1 ] && exit 1
  exit 77
fi
exec "$py" "$(dirname "$0")/../../examples/test_verifiers_env.py"
