#pragma once
// The gemm generator: the level-1 matmul tasks 1, 2, 3, 6, 7, 8, 9, 10, 11, 13, 14, 15, 16, 17, 18
// (one tiled GEMM kernel) and task 4 (matrix-vector, its own kernel). fp32 accumulation, 64-bit
// indices, every tail bounds-checked.
//
// The GEMM computes C[z] = op(A[z]) op(B[z]) (z: task 3's batch, or task 6's K chunk) with
// M, N, K, leading dimensions, batch strides and the layout (task 16: A stored [K,M]; 17: B stored
// [N,K]; 18: both) passed as kernel arguments. Tasks 10 and 11 are plain GEMMs over the flattened
// leading dimensions of A; 13 (symmetric inputs) a plain GEMM. Tasks 14 / 15 (triu / tril of the
// product of upper / lower triangular inputs) use the zero structure: the tile at rows m0.., columns
// n0.. reduces only k in [m0, n0 + tile_n) (upper) or [n0, m0 + tile_m) (lower), tiles wholly
// outside the triangle do no math, and the other triangle of C is written as exact zeros (about a
// third of a full GEMM's FLOPs). Task 6 (256 x 256 output, K = 524288) splits K: each chunk writes
// its partial C to scratch, and a second launch sums the chunks in a fixed order (deterministic, no
// atomics). Blocks are rastered in groups of 8 tile rows for L2 reuse.
//
// GEMM knobs (tasks other than 4), in token order:
//   tile_m            32, 64, 128   rows of C per block
//   tile_n            32, 64, 128   columns of C per block
//   tile_k            8, 16, 32     k-depth of the shared-memory tiles
//   items_per_thread  4, 8          per-thread micro-tile of items_per_thread^2 outputs (fp32 SIMT,
//                                   conflict-free float4 reads of the k-major shared tiles); for
//                                   tensor cores, the warp tile has 32 * items_per_thread^2 outputs
//                                   (16x32 fragments for 4; 32x64, or 64x32 when tile_n = 32, for 8)
//   vec               1, 4          4: float4 global loads and stores wherever the address is
//                                   16-byte aligned and the chunk in bounds (checked in the kernel;
//                                   scalar otherwise, e.g. task 8's odd K)
//   stages            1, 2          2: double-buffered shared tiles (tile t+1's global loads in
//                                   registers while tile t is multiplied, one barrier per k-tile)
//   precision         fp32, tf32x3, tf32
//                                   fp32: FFMA; tf32x3 (unsafe): wmma m16n16k8 tensor cores with each
//                                   operand split into TF32 high + low parts, 3 products (near fp32,
//                                   the audit shows tf32); tf32 (unsafe): plain TF32 tensor cores
//   split_k           16, 64, 256   task 6 only: K chunks (rounded to whole k-tiles)
// Constraint: (tile_m, tile_n, items_per_thread) in {128x128/8, 128x64/8, 64x128/8, 64x64/8,
// 128x64/4, 64x128/4, 64x64/4, 32x32/4} (64 to 512 threads per block).
// Legal configurations: 288 per task (8 tiles x 3 x 2 x 2 x 3); task 6: 864 (x 3 split_k).
//
// Task 4 (y = A x, A [M,K] read once, memory-bound): its own kernel and knobs, matvec.h.
//
// The GEMM source depends only on tile_m, tile_n, tile_k, items_per_thread and whether precision is
// fp32 (SIMT) or not (tensor cores; tf32 vs tf32x3 is a kernel argument): 48 distinct units shared
// by all fifteen tasks and both scales. vec, stages, layout, triangularity, batch and split_k are
// kernel arguments or launch geometry.
#include <kernels/generator.h>

namespace kbrl {

const Generator& gemm_generator();

}  // namespace kbrl
