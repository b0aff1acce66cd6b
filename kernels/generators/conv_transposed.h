#pragma once
// The conv_transposed generator: ConvTranspose1d/2d/3d, tasks 57, 58, 61, 64, 65, 68, 69, 70, 71,
// 72, 73, 74, 75, 77, 78, 79, 81, in the gather formulation:
// y[n, co, o] = bias[co] + sum over ci of co's group and taps k with (o + pad - k * dil) divisible
// by stride, quotient i in range, of x[n, ci, i] * w[ci, co % (C_out/groups), k]. Every output
// element is written by exactly one thread with a fixed summation order (no atomics: reruns are
// bitwise identical); fp32 accumulation; 64-bit tensor offsets (32-bit inside one channel plane).
// 1-d and 2-d tasks run as 3-d with unit leading dims. Each task's stride/padding/dilation/
// output_padding/groups are a table here (reference/tasks_conv.cpp, quirks included: 73's groups
// never reach the module); kernel sizes and channels come from the spec and are checked.
//
// Knobs, in token order:
//   variant          direct, tiled_smem, tiled_global
//                      direct: one thread per output element in y's order, every (ci, tap) tested;
//                      tiled_smem: stride-phase decomposition (a block owns one phase (o mod s) of
//                      one sample, group and tile of output channels, so the valid taps are
//                      uniform and only they are visited), a register tile of items_per_thread
//                      positions x tile_n channels, weights of a chunk of input channels staged in
//                      shared memory as [ci][tap][tile_n] (float4 broadcasts, <= 48 KiB);
//                      tiled_global: the same tile, weights read with __ldg at block-uniform
//                      addresses (no shared memory)
//   block            64, 128, 256
//   items_per_thread 1, 2, 4, 8    (output positions per thread, blockDim apart in the phase)
//   tile_n           1, 4, 8, 16   (output channels per thread; a partial last tile is masked)
//   cache_hint       none, streaming (streaming: y stored with __stcs)
//   precision        fp32, fp16_compute (unsafe: each product x * w formed in __half)
// Constraints: direct only with items_per_thread=1 and tile_n=1; tile_n <= max(4, C_out/groups).
// Legal configurations: 396 per task (300 for task 72, whose C_out/groups is 8).
//
// The source depends on variant, items_per_thread, tile_n, precision (and whether the task has a
// bias: none of these does); shapes, strides, padding, dilation, groups, the channel chunk and the
// cache hint are kernel arguments, and block only changes the launch, so tasks share compile
// units (66 in all: 2 direct, 64 tiled). items_per_thread=8 with tile_n=16 spills a little
// in tiled_global (255 registers); every other tile fits in registers.
#include <kernels/generator.h>

namespace kbrl {

const Generator& conv_transposed_generator();

}  // namespace kbrl
