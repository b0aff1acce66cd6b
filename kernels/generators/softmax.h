#pragma once
// The softmax generator: softmax (task 23) and log_softmax (task 24) over dim 1 of a 2-d x. One
// block per row (a grid-stride loop over rows when grid=waves); fp32 accumulation, 64-bit indices.
// softmax = exp(x - max) / sum; log_softmax = x - max - log(sum), sum = sum of exp(x - max), the
// same math and order as torch's kernels.
//
// Knobs, in token order:
//   variant     two_pass, three_pass, block_per_row_cached
//                 two_pass: one online (max, sum) pass, then the normalizing pass;
//                 three_pass: a max pass, a sum pass, the normalizing pass;
//                 block_per_row_cached: two_pass that keeps the row's first min(row length, 8192)
//                 elements in shared memory between the passes (the whole row at the small scale,
//                 a prefix at KernelBench's 393216; the cache size comes from the spec's row length)
//   block       128, 256, 512, 1024
//   vec         1, 4            (aligned float4 with a scalar tail; element by element otherwise)
//   grid        exact, waves    (one block per row; or at most two waves of an H100, 132 SMs)
//   cache_hint  none, streaming (streaming: __ldcs for the last read of x, __stcs for y)
//   precision   fp32, fp16_compute (unsafe: exp of (x - max) in __half; sums stay fp32)
//   fast_math   off, on         (unsafe: __expf/__logf/__fdividef and --use_fast_math)
// Constraint: fast_math=on only with precision=fp32. Legal configurations: 288 per task.
//
// The source depends on variant, vec, cache_hint, precision and fast_math (and, for the cached
// variant, on the row length); block and grid only change the launch.
#include <kernels/generator.h>

namespace kbrl {

const Generator& softmax_generator();

}  // namespace kbrl
