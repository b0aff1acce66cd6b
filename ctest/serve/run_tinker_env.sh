#!/usr/bin/env bash
# Runs examples/test_tinker_env.py (tinker_env.py through tinker-cookbook's own group rollout) against
# $KBRL_SERVE_URL with the python of the tinker venv that .ci/setup-serve makes
# ($KBRL_SERVE_HOME/venv-tinker, default ~/.cache/kbrl/serve). Without it: exit 77 (skipped), or 1
# when KBRL_REQUIRE_TINKER=1 (CI, which has PyPI).
py=${KBRL_SERVE_HOME:-$HOME/.cache/kbrl/serve}/venv-tinker/bin/python
if [ ! -x "$py" ]; then
  echo "run_tinker_env: no tinker-cookbook venv at ${py%/bin/python}: run bash .ci/setup-serve (needs PyPI)" >&2
  [ "${KBRL_REQUIRE_TINKER:-0}" = 1 ] && exit 1
  exit 77
fi
exec "$py" "$(dirname "$0")/../../examples/test_tinker_env.py"
