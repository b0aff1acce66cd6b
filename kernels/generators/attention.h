#pragma once
// The attention generator: task 97, softmax(Q K^T / sqrt(D)) V over Q, K, V:[B,H,L,D] (no mask,
// no dropout; KernelBench: B = H = 32, L = 512, D = 1024). Three launches over a scratch score
// matrix [B*H, L, L] (1 GiB fp32 at KernelBench scale):
//   1. kbrl_attn_scores: scores = scale * Q K^T, a batched tiled SIMT GEMM (blockIdx.z = b*H + h);
//   2. kbrl_attn_softmax_warp / _block: row softmax of the scores in place (online max and sum,
//      then exp(x - max) / sum, as torch);
//   3. kbrl_attn_output: out = P V, the same GEMM with B stored [K][N].
// fp32 accumulation in k order; no atomics (deterministic). Tails in L and D are zero-filled; D and
// L must be multiples of 4 (float4 accesses).
//
// Knobs, in token order:
//   tile_m      64, 128     rows of the block tile (each thread an 8 x 8 register tile)
//   tile_n      64, 128     columns of the block tile; threads = tile_m * tile_n / 64
//   tile_k      8, 16       k-step through shared memory
//   stages      1, 2        shared-memory buffers (2: the next k-step's global loads overlap the
//                           math, one barrier per step)
//   variant     warp_per_row, block_per_row   (the softmax launch: a warp or a 256-thread block
//                           per score row)
//   precision   fp32, fp16_compute (unsafe: Q, K, P, V tiles rounded to __half in shared memory;
//                           products and sums stay fp32)
//   fast_math   off, on     (unsafe: __expf/__fdividef in the softmax and --use_fast_math)
// Constraint: fast_math=on only with precision=fp32. Legal configurations: 96.
//
// The source depends on tile_m, tile_n, tile_k, stages, precision and fast_math (both softmax
// kernels are in every unit: variant changes only the launch); shapes are i64 arguments.
#include <kernels/generator.h>

namespace kbrl {

const Generator& attention_generator();

}  // namespace kbrl
