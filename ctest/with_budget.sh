#!/usr/bin/env bash
# Runs a test command within a time budget, each output line prefixed with the second it came at,
# so a slow test says where its time went. A command still running when its budget is spent is
# stopped (its whole process group: TERM, then KILL 5 s later) and this says so, with the step it
# was in, before CTest's own timeout would cut it off silently; the exit status is then 124.
# Otherwise the command's own exit status (77, skipped, included).
#   with_budget.sh BUDGET_SECONDS COMMAND [ARG ...]
set -uo pipefail
budget=${1:?usage: with_budget.sh BUDGET_SECONDS COMMAND [ARG ...]}
shift
last_file=$(mktemp "${TMPDIR:-/tmp}/kbrl-budget.XXXXXX")
trap 'rm -f "$last_file"' EXIT
start=$(date +%s)
stamp() {
  local line
  while IFS= read -r line || [ -n "$line" ]; do
    local now
    printf -v now '%(%s)T' -1  # a builtin: no process per line
    local at=$(( now - start ))
    printf '[%4ds] %s\n' "$at" "$line"
    printf '%s\t%s\n' "$at" "$line" > "$last_file"
  done
}
set -m  # the command gets a process group of its own, so all of it can be stopped
"$@" > >(stamp) 2>&1 &
pid=$!
set +m
sleep "$budget" > /dev/null 2>&1 &
sleeper=$!
wait -n "$pid" "$sleeper" 2>/dev/null
if kill -0 "$pid" 2>/dev/null && ! kill -0 "$sleeper" 2>/dev/null; then
  IFS=$'\t' read -r at line < "$last_file" 2>/dev/null || { at=-; line="(no output)"; }
  echo "with_budget: stopped after ${budget} s, its budget on this machine ($(nproc) cores): $*"
  echo "with_budget: its last output, at ${at} s (what it was doing): ${line}"
  echo "with_budget: the lines above give each step's start; raise the test's TIMEOUT or shrink its work"
  kill -TERM -- "-$pid" 2>/dev/null
  for _ in 1 2 3 4 5; do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
  kill -KILL -- "-$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  exit 124
fi
kill "$sleeper" 2>/dev/null
wait "$pid"
exit $?
