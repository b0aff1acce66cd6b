#!/usr/bin/env bash
# CTest `regression` (ctest -L regression): kbrl's known-good kernels against the baseline committed
# for this GPU model, results/<device>/regression/known_good_baseline.json, where <device> is the
# GPU's name lowercased, "NVIDIA " dropped and spaces as dashes ("NVIDIA H100 80GB HBM3" ->
# h100-80gb-hbm3). Skipped (77) without a GPU, and without a baseline for this GPU (the message says
# how to take one). JUnit XML and the Markdown summary go to OUT_DIR.
#   known_good.sh KBRL RESULTS_DIR OUT_DIR
set -uo pipefail
kbrl=$1 results=$2 out=$3
if ! name="$(nvidia-smi --query-gpu=name --format=csv,noheader 2> /dev/null | head -n 1)" || [ -z "$name" ]; then
  echo "regression: SKIPPED: no GPU (nvidia-smi found none); without a GPU, kbrl regress compiles only"
  exit 77
fi
device="$(echo "${name#NVIDIA }" | tr '[:upper:]' '[:lower:]' | tr ' ' '-')"
baseline="$results/$device/regression/known_good_baseline.json"
if [ ! -s "$baseline" ]; then
  echo "regression: SKIPPED: no baseline for $name ($baseline); take one on this GPU with"
  echo "  $kbrl baseline --suite known-good --out $baseline"
  exit 77
fi
mkdir -p "$out"
"$kbrl" regress --suite known-good --baseline "$baseline" --junit "$out/known_good.xml" \
  --markdown "$out/known_good.md" --out "$out/known_good_now.json"
