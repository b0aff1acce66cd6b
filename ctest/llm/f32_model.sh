#!/usr/bin/env bash
# CTest fixture of the parity test: writes the float32 copy of .ci/setup-llm's SmolLM2 GGUF
# (`kbrl model f32`) to OUT, unless OUT is already newer than the model. Without the model it writes
# nothing and exits 0 (the llm tests then report skipped, or fail under KBRL_REQUIRE_LLM=1).
#   f32_model.sh KBRL OUT
set -euo pipefail
kbrl=$1 out=$2
home=${KBRL_LLM_HOME:-$HOME/.cache/kbrl/llm}
model="$home/models/SmolLM2-135M-Instruct.Q4_1.gguf"
if [ ! -s "$model" ]; then
  echo "f32_model.sh: no model under $home (run .ci/setup-llm): the llm tests will report skipped"
  exit 0
fi
if [ -s "$out" ] && [ "$out" -nt "$model" ]; then
  echo "f32_model.sh: $out is up to date"
  exit 0
fi
mkdir -p "$(dirname "$out")"
"$kbrl" model f32 "$model" --out "$out"
