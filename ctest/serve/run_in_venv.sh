#!/usr/bin/env bash
# Runs an example test against $KBRL_SERVE_URL with the python of one of the venvs that
# .ci/setup-serve makes under $KBRL_SERVE_HOME (default ~/.cache/kbrl/serve):
#   run_in_venv.sh VENV REQUIRE_VAR WHAT SCRIPT
# e.g. `venv-tinker KBRL_REQUIRE_TINKER tinker-cookbook examples/test_tinker_env.py` (SCRIPT relative to
# the repository). Without the venv: exit 77 (skipped), or 1 when $REQUIRE_VAR is 1 (CI, which has PyPI).
set -u
if [ $# -ne 4 ]; then
  echo "usage: $0 VENV REQUIRE_VAR WHAT SCRIPT" >&2
  exit 2
fi
venv=$1 require=$2 what=$3 script=$4
py=${KBRL_SERVE_HOME:-$HOME/.cache/kbrl/serve}/$venv/bin/python
if [ ! -x "$py" ]; then
  echo "run_in_venv: no $what venv at ${py%/bin/python}: run bash .ci/setup-serve (needs PyPI)" >&2
  [ "${!require:-0}" = 1 ] && exit 1
  exit 77
fi
exec "$py" "$(dirname "$0")/../../$script"
