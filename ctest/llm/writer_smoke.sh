#!/usr/bin/env bash
# The committed writer adapter (SmolLM2 after SFT on the generators' corpus) writing kernels on a CPU:
# greedy answers to held-out (eval-split) elementwise tasks whose answers are short (KBRL_WRITER_SMOKE_TASKS,
# default 28: HardSigmoid, 782 tokens on the H100; 28,32 took 149 s on 2 idle cores, 360 s beside
# the other llm tests in CI), compiled for sm_90 without a GPU (outcome not_run when it compiles).
# Prints the format-error and compile rates; fails when no answer compiles (SmolLM2 without the
# adapter compiles 0 of 9 greedy eval answers on an H100: results/h100-80gb-hbm3/lm-writer-smollm2/run4).
# Skipped (77) without the model, failed instead under KBRL_REQUIRE_LLM=1.
#   writer_smoke.sh KBRL ADAPTER OUT_DIR
set -uo pipefail
kbrl=${1:?usage: writer_smoke.sh KBRL ADAPTER OUT_DIR}
adapter=${2:?}
out=${3:?}
model=${KBRL_LLM_MODEL:-${KBRL_LLM_HOME:-$HOME/.cache/kbrl/llm}/models/SmolLM2-135M-Instruct.Q4_1.gguf}
if [ ! -f "$model" ]; then
  if [ "${KBRL_REQUIRE_LLM:-0}" = 1 ]; then
    echo "writer_smoke: no model at $model (install it with .ci/setup-llm), and KBRL_REQUIRE_LLM=1" >&2
    exit 1
  fi
  echo "writer_smoke: SKIPPED: no model at $model (install it with bash .ci/setup-llm)"
  exit 77
fi
tasks=${KBRL_WRITER_SMOKE_TASKS:-28}
"$kbrl" sample --policy "lm:$model,style=file,shots=0,max_tokens=1024,adapter=$adapter" --task "$tasks" --k 1 \
  --temperature 0 --seed 1 --arch sm_90 --out "$out" --force || exit 1
read -r samples format compiled < <(awk -F, '$1 == "all" { print $4, $5 * $4, $6 * $4 }' "$out/summary.csv")
echo "[ figures ] the writer adapter on eval tasks $tasks (greedy, compile-only): format errors $format of $samples, compiled $compiled of $samples"
[ "${compiled%.*}" -ge 1 ] || { echo "writer_smoke: no answer compiled: the adapter writes no kernel" >&2; exit 1; }
