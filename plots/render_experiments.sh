#!/usr/bin/env bash
# The plots case of `ctest -L experiments`: the figures of what the experiment cases just ran.
#   plots/render_experiments.sh KBRL_EXPERIMENT RESULTS_ROOT BUDGET ENV
# ENV is the --env the experiment cases ran with (auto or synthetic). Decided at run time, as the
# experiments decide it (`kbrl-experiment --check-gpu`):
#  - a GPU (ENV auto): the measured results, RESULTS_ROOT/BUDGET -> RESULTS_ROOT/BUDGET/figures;
#  - no GPU (or ENV synthetic): the synthetic results' figures (RESULTS_ROOT/synthetic/BUDGET/figures,
#    not measurements), then the committed measurements redrawn from the committed CSVs: every
#    results/DEVICE/BUDGET/ of the source tree that holds a figures/ folder is drawn into
#    RESULTS_ROOT/committed/DEVICE/BUDGET/figures (the committed files are only read).
# Exit: 0 when every set drew, 1 when a figure failed, 77 (CTest: skipped) when gnuplot is missing
# or nothing had data.
set -u
here="$(cd "$(dirname "$0")" && pwd)"
experiment="${1:?usage: render_experiments.sh KBRL_EXPERIMENT RESULTS_ROOT BUDGET ENV}"
root="${2:?usage: render_experiments.sh KBRL_EXPERIMENT RESULTS_ROOT BUDGET ENV}"
budget="${3:?usage: render_experiments.sh KBRL_EXPERIMENT RESULTS_ROOT BUDGET ENV}"
env="${4:?usage: render_experiments.sh KBRL_EXPERIMENT RESULTS_ROOT BUDGET ENV}"
committed_root="$(cd "$here/.." && pwd)/results"
if ! command -v gnuplot > /dev/null; then
  echo "plots: SKIPPED: gnuplot is not installed (Debian: apt-get install gnuplot-nox)"
  exit 77
fi

drew=0 failed=0
# draw LABEL RESULTS_DIR OUT_DIR: render.sh on one results folder, counting its outcome
draw() {
  echo "plots: $1: $2 -> $3"
  bash "$here/render.sh" "$2" "$3"
  case $? in
    0) drew=$((drew + 1)) ;;
    77) ;;
    *) failed=$((failed + 1)) ;;
  esac
}

if [ "$env" = auto ] && "$experiment" --check-gpu; then
  draw "measured results" "$root/$budget" "$root/$budget/figures"
else
  [ "$env" = auto ] || echo "plots: the experiments ran with --env $env"
  echo "plots: no GPU: the experiments ran on the synthetic reward table; their figures are not" \
       "measurements. The committed measurements' figures are redrawn from the committed CSVs" \
       "(results/DEVICE/BUDGET/) into $root/committed/, the committed files untouched."
  draw "synthetic results (not measurements)" "$root/synthetic/$budget" "$root/synthetic/$budget/figures"
  for figures in "$committed_root"/*/*/figures; do
    [ -d "$figures" ] || continue
    set_dir="$(dirname "$figures")"
    name="${set_dir#"$committed_root"/}"  # DEVICE/BUDGET
    draw "committed measurements $name (redrawn from its CSVs)" "$set_dir" "$root/committed/$name/figures"
  done
fi
echo "plots: $drew set(s) of figures drawn, $failed failed"
[ "$failed" -gt 0 ] && exit 1
[ "$drew" -eq 0 ] && exit 77
exit 0
