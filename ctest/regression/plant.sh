#!/usr/bin/env bash
# Planted regressions, to measure what `kbrl regress` catches (.ci/gpu regression): suite manifests
# made from kbrl's known-good kernels, whose kernel names match the known-good baseline's.
#   plant.sh KNOWN_GOOD_DIR OUT_DIR PERCENT...
# OUT_DIR/slower-PERCENT/suite.json: relu.cu, softmax.cu and gemm.cu, each made PERCENT% slower than
#   itself: the last block to finish waits PERCENT% of the time the kernel has run so far (read from
#   the GPU's global timer), so the planted delay scales with whatever the kernel takes on this GPU.
#   The outputs are unchanged.
# OUT_DIR/wrong/suite.json: relu.cu passing values below -4 through instead of zeroing them (a wrong
#   answer on a few elements of KernelBench's inputs).
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: plant.sh KNOWN_GOOD_DIR OUT_DIR PERCENT..." >&2; exit 2; }
src=$1 out=$2
shift 2
slowed=(relu.cu:19 softmax.cu:23 gemm.cu:1)

# The kernel file with the delay: the helper before `extern "C" __global__`, planted_begin() at the top of
# the kernel's body and planted_end() before its closing brace (the file's last line that is just "}").
slow_down() {  # FILE PERCENT
  awk -v percent="$2" '
    { line[NR] = $0 }
    /^extern "C" __global__/ && !kernel { kernel = NR }
    kernel && !body && /\{[ \t]*$/ { body = NR }
    /^}[ \t]*$/ { last = NR }
    END {
      if (!kernel || !body || last <= body) { print "plant.sh: no kernel found in " FILENAME > "/dev/stderr"; exit 1 }
      for (i = 1; i <= NR; ++i) {
        if (i == kernel) {
          print "// Planted by ctest/regression/plant.sh: the last block to finish waits " percent "% of the time so far."
          print "__device__ unsigned long long planted_start_ns;"
          print "__device__ unsigned int planted_blocks_done;"
          print "__device__ __forceinline__ unsigned long long planted_now_ns() {"
          print "  unsigned long long t;"
          print "  asm volatile(\"mov.u64 %0, %%globaltimer;\" : \"=l\"(t));"
          print "  return t;"
          print "}"
          print "__device__ __forceinline__ void planted_begin() {"
          print "  if (threadIdx.x + threadIdx.y + threadIdx.z == 0) atomicCAS(&planted_start_ns, 0ull, planted_now_ns());"
          print "}"
          print "__device__ __forceinline__ void planted_end() {"
          print "  __syncthreads();"
          print "  if (threadIdx.x + threadIdx.y + threadIdx.z != 0) return;"
          print "  __threadfence();"
          print "  const unsigned blocks = gridDim.x * gridDim.y * gridDim.z;"
          print "  if (atomicInc(&planted_blocks_done, blocks - 1) != blocks - 1) return;  // wraps to 0 for the next launch"
          print "  const unsigned long long start = atomicExch(&planted_start_ns, 0ull), now = planted_now_ns();"
          print "  const unsigned long long until = now + (now - start) * " percent " / 100;"
          print "  while (planted_now_ns() < until) {}"
          print "}"
          print ""
        }
        if (i == last) print "  planted_end();"
        print line[i]
        if (i == body) print "  planted_begin();"
      }
    }' "$1"
}

manifest() {  # NAME FILE:TASK...
  local name=$1 sep=""
  shift
  printf '{"suite": "%s", "kernels": [' "$name"
  for k in "$@"; do printf '%s{"file": "%s", "task": %s}' "$sep" "${k%%:*}" "${k##*:}"; sep=", "; done
  printf ']}\n'
}

for percent in "$@"; do
  [[ "$percent" =~ ^[1-9][0-9]?$ ]] || { echo "plant.sh: PERCENT must be 1..99 (got $percent)" >&2; exit 2; }
  dir="$out/slower-$percent"
  mkdir -p "$dir"
  for k in "${slowed[@]}"; do slow_down "$src/${k%%:*}" "$percent" > "$dir/${k%%:*}"; done
  manifest "known-good, $percent% slower" "${slowed[@]}" > "$dir/suite.json"
done

mkdir -p "$out/wrong"
grep -q 'v < 0.f ? 0.f : v' "$src/relu.cu" || { echo "plant.sh: relu.cu's relu() is not as expected" >&2; exit 1; }
sed 's/v < 0.f ? 0.f : v/v < -4.f ? v : (v < 0.f ? 0.f : v)/' "$src/relu.cu" > "$out/wrong/relu.cu"
manifest "known-good, a wrong answer" relu.cu:19 > "$out/wrong/suite.json"
echo "planted: $(ls -d "$out"/*/ | tr '\n' ' ')"
