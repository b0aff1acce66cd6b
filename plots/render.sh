#!/usr/bin/env bash
# Renders every figure (plots/*.gp) from a budget's results folder into PNG and SVG.
#   plots/render.sh RESULTS_DIR [OUT_DIR]      (OUT_DIR defaults to RESULTS_DIR/figures)
# A figure whose CSVs are missing or hold no rows is skipped with a line saying which; exit 77
# (CTest: skipped) when gnuplot is missing or no figure had data, 1 when gnuplot fails on a figure.
set -u
here="$(cd "$(dirname "$0")" && pwd)"
results="${1:?usage: render.sh RESULTS_DIR [OUT_DIR]}"
out="${2:-$results/figures}"
if ! command -v gnuplot > /dev/null; then
  echo "plots: SKIPPED: gnuplot is not installed (Debian: apt-get install gnuplot-nox)"
  exit 77
fi
mkdir -p "$out"
rendered=0 failed=0
for script in "$here"/*.gp; do
  name="$(basename "$script" .gp)"
  [ "$name" = style ] && continue
  missing=""
  for csv in $(grep -o 'results\."/[^"]*\.csv"' "$script" | sed 's/results\."\(.*\)"/\1/'); do
    # Missing, or a header without rows (an experiment that stopped before writing any).
    [ "$(head -n 2 "$results$csv" 2> /dev/null | wc -l)" -ge 2 ] || missing="$missing $results$csv"
  done
  if [ -n "$missing" ]; then
    echo "plots: skip $name: missing or empty:$missing"
    continue
  fi
  for fmt in png svg; do
    if ! gnuplot -e "dir='$here'; results='$results'; out='$out/$name'; fmt='$fmt'" "$script" 2> "$out/$name.$fmt.log"; then
      echo "plots: FAILED $name ($fmt):"; cat "$out/$name.$fmt.log"; failed=$((failed + 1))
    elif [ -s "$out/$name.$fmt.log" ]; then
      echo "plots: $name ($fmt) warnings:"; cat "$out/$name.$fmt.log"
    fi
    rm -f "$out/$name.$fmt.log"
  done
  echo "plots: $out/$name.png, .svg"
  rendered=$((rendered + 1))
done
[ "$failed" -gt 0 ] && exit 1
[ "$rendered" -eq 0 ] && { echo "plots: SKIPPED: no figure had its data (run the experiments first)"; exit 77; }
exit 0
