#pragma once
// The loss generator: the level-1 losses, each a 0-d scalar from a reduction over up to ~1e9
// elements.
//   94 MSELoss           mean((p - t)^2)
//   95 CrossEntropyLoss  mean over rows of -log_softmax(x)[row, target[row]] (int64 targets)
//   96 HuberLoss         smooth_l1_loss, beta = 1 (torch's default), mean
//   98 KLDivLoss         kl_div(log(p), t, batchmean) = sum(xlogy(t, t) - t * log(p)) / rows
//   99 TripletMarginLoss mean over rows of clamp_min(1 + ||a - p + 1e-6|| - ||a - n + 1e-6||, 0)
//                        (torch's pairwise_distance adds eps to the difference; p = 2)
//   100 HingeLoss        mean(clamp_min(1 - p[i, j] * t[j], 0)) (targets [cols] broadcast along
//                        the LAST dimension, KernelBench's quirk)
// Two launches, deterministic (no atomics): kbrl_loss_partial writes one partial sum per block to
// scratch (each thread keeps a running sum of fp32 per-step sums, then a fixed shuffle/shared-memory
// tree over the block); kbrl_loss_final (one block of 256) sums the partials in a fixed order and
// divides by the count in double (numel for 94, 96, 100; rows for 95, 98, 99). 64-bit indices.
// 94, 96, 98 stream both inputs as one flat grid-stride range; 95, 99, 100 walk whole rows with a
// group of threads (a warp or a block) per row: 95 keeps an online (max, sum of exp) per thread and
// merges it over the group, 99 two sums of squares, 100 needs no per-row reduction (its group only
// fixes the column of each access, so t[j] is read with the row's element).
//
// Knobs, in token order (variant only for 95, 99, 100; cache_hint only for 94, 96, 98; fast_math
// only for 95, 98, 99):
//   variant          warp_per_row, block_per_row (a warp or a block walks each row; shuffle-only
//                    or block reductions per row)
//   block            128, 256, 512 (row-wise tasks); 128, 256, 512, 1024 (flat tasks)
//   vec              1, 4     (float4 when the pointers are 16-byte aligned, else element by element)
//   items_per_thread 1, 2, 4  (vec-wide accesses of each input in flight per thread per step)
//   grid             2, 4, 8  (partial blocks per SM of an H100, 132 SMs, capped by the work: rows
//                    for block_per_row, rows / warps per block for warp_per_row, one step of
//                    block * items_per_thread vectors per block for the flat tasks)
//   cache_hint       none, streaming (94, 96, 98 only; streaming: __ldcs on the read-once inputs.
//                    95, 99, 100 always read their rows with __ldcs; hinge's targets, read once
//                    per row, always go through __ldg)
//   accumulate       fp32, fp64 (the running sums, the block tree, partials and the final sum; both
//                    safe, per-step sums stay fp32)
//   precision        fp32, fp16_compute (unsafe: 94, 96, 98, 100 keep the threads' running sums
//                    in __half; 95 evaluates exp(x - max) in __half; 99 squares the differences
//                    in __half)
//   fast_math        off, on (unsafe: --use_fast_math and __expf/__logf)
//   tail             safe, dropped (unsafe: a thread's partial last step and the scalar tail of
//                    each row / of the flat range are skipped)
// Constraints: vec * items_per_thread >= 2; at most one unsafe value, and only with
// accumulate=fp32. Legal configurations: 480 (94, 96), 600 (98), 450 (95, 99), 360 (100).
//
// The source depends on the task, variant, vec, items_per_thread, cache_hint, accumulate,
// precision, fast_math and tail; never on block, grid or the shapes (passed as i64 arguments), so
// both scales share compile units: 40 (94, 96), 50 (98, 95, 99), 40 (100), 270 in all.
// Device code: cuda/loss.cuh (the math, load and reduction helpers, kbrl_loss_final, the
// per-element terms and row states) and cuda/loss_partial.cuh (kbrl_loss_partial per kind).
#include <kernels/generator.h>

namespace kbrl {

const Generator& loss_generator();

}  // namespace kbrl
