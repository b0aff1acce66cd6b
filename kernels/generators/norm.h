#pragma once
// The norm generator: BatchNorm (33, training mode: batch statistics), InstanceNorm (34),
// GroupNorm (35), RMSNorm (36), Frobenius (37), L1 (38) and L2 (39) normalization and LayerNorm
// (40). All are memory-bound; 64-bit indices throughout; every reduction is deterministic (fixed
// merge orders, no atomics): thread statistics in fp32, merged across threads and blocks in fp64.
//
// Planar tasks (all but 36): a statistic per segment; S segments of P contiguous pieces of Lp
// elements (33: channel = N pieces of H*W; 34: an (n, c) plane; 35: an (n, group) = 8 channel
// planes; 37: the whole tensor; 38, 39: a row of 65535 (odd: a scalar head up to 16-byte
// alignment, float4 body, scalar tail); 40: a sample's C*H*W).
// Moment norms normalize with the mean and biased variance, y = (x - mean) / sqrt(var + eps)
// (eps 1e-5) then the affine (per channel for 33 and 35, element-wise for 40); 37 and 39 divide
// by the 2-norm, 38 by the mean of |x|.
//   variant          block_per_segment (34, 35, 38, 39: one block per segment, one launch),
//                    split (chunk statistics to scratch, a finalize launch of one block per
//                    segment, a normalizing launch), split_inline (33, 34, 35, 38, 39, 40: chunk
//                    statistics, then every normalizing block merges its segment's chunk
//                    statistics itself; two launches)
//   stats            welford, sum_sumsq (moment norms 33, 34, 35, 40 only; sum_sumsq computes
//                    var = E[x^2] - mean^2 from fp32 sums: fast, safe for moderate mean/std)
//   block            256, 512, 1024
//   vec              1, 4   (float4 over the 16-byte-aligned body of each run)
//   items_per_thread segment (block_per_segment), 8, 32, 128 (split plans: a chunk is
//                    block * vec * items_per_thread elements of one piece)
//   cache_hint       none, streaming (__ldcs for the last read of x, __stcs for y)
//   precision        fp32, fp16_compute (unsafe: the normalizing arithmetic on __half)
//   fast_math        off, on (unsafe: --use_fast_math, rsqrtf, approximate division)
// RMSNorm (36), over the 64 channels of x:[N,64,H,W] (stride H*W), one thread per vec positions:
//   variant          registers (the 64 values of a position stay in registers: x read once),
//                    two_pass (x read again for the normalizing pass)
//   block            128, 256, 512
//   vec              1, 2, 4 (registers: 1, 2; registers with 2: block <= 256)
//   unroll           8, 64 (channels loaded before use, two_pass; registers: 64)
//   cache_hint, precision, fast_math as above.
// Constraints: fast_math=on only with precision=fp32; items_per_thread=segment exactly with
// block_per_segment; the variants per task as listed. Legal configurations: 504 (34, 35),
// 432 (33, 40), 252 (38, 39), 108 (37), 138 (36).
//
// The source depends on the task's kind (moment norms by stats, sum of squares for 37 and 39
// alike, sum of |x|), its affine (none, per channel, element-wise), cache_hint, precision and
// fast_math; variant, block, vec and items_per_thread only change the launches (all kernels are
// in every unit; vec is an i32 argument choosing the float4 path), shapes are i64 arguments.
// For 36 it depends on variant, vec, unroll, cache_hint, precision and fast_math.
// Files: norm.cpp (the planar tasks, and the Generator, which hands task 36 to rms_norm.cpp),
// norm_internal.h (what both halves share); the device code in cuda/norm_planar_math.cuh,
// cuda/norm_planar_kernels.cuh (planar) and cuda/rms_norm.cuh (36).
#include <kernels/generator.h>

namespace kbrl {

const Generator& norm_generator();

}  // namespace kbrl
