#!/usr/bin/env bash
# ctest/with_budget.sh (label unit): a command past its budget is stopped, with the step it was in
# and exit 124; one within it keeps its own exit status (77, skipped, included) and its output,
# each line stamped with the second it came at.
#   ctest/ci/test_with_budget.sh SOURCE_DIR
set -u
src="${1:?usage: test_with_budget.sh SOURCE_DIR}"
failures=0
fail() { echo "FAILED: $*"; failures=$((failures + 1)); }

out=$(bash "$src/ctest/with_budget.sh" 2 bash -c 'echo "[ RUN      ] Slow.Step"; sleep 30; echo never' 2>&1); rc=$?
echo "--- past its budget (rc $rc):"; echo "$out"
[ "$rc" -eq 124 ] || fail "exit $rc, expected 124"
grep -q "stopped after 2 s, its budget" <<< "$out" || fail "no line saying the budget was spent"
grep -q "what it was doing): \[ RUN      \] Slow.Step" <<< "$out" || fail "the step it was in is not named"
grep -qE '^\[ +[0-9]+s\] never$' <<< "$out" && fail "the command was not stopped"

out=$(bash "$src/ctest/with_budget.sh" 20 bash -c 'echo one; echo two; exit 77' 2>&1); rc=$?
echo "--- within its budget (rc $rc):"; echo "$out"
[ "$rc" -eq 77 ] || fail "exit $rc, expected the command's 77"
grep -qE '^\[ +0s\] two$' <<< "$out" || fail "the output is not stamped"

[ "$failures" -eq 0 ] && echo "test_with_budget: all checks passed" && exit 0
echo "test_with_budget: $failures check(s) failed"
exit 1
