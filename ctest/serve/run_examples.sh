#!/usr/bin/env bash
# Runs examples/test_examples.py against $KBRL_SERVE_URL with the serve venv's python when there is
# one (.ci/setup-serve: the real verifiers package from PyPI), else python3 (stubs stand in for
# every framework that is not installed; the test says which). Exit 77 without any python3.
py=${KBRL_SERVE_HOME:-$HOME/.cache/kbrl/serve}/venv/bin/python
[ -x "$py" ] || py=python3
command -v "$py" > /dev/null 2>&1 || { echo "run_examples: no python3: skipped"; exit 77; }
exec "$py" "$(dirname "$0")/../../examples/test_examples.py"
