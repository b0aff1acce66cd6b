#pragma once
// The pooling generator: max pooling (tasks 41 MaxPool1d, 42 MaxPool2d, 43 MaxPool3d) and average
// pooling (44 AvgPool1d, 45 AvgPool2d, 46 AvgPool3d) over x:[N, C, spatial...], with each task's
// window (kernel, stride, padding, dilation; ceil_mode=false, count_include_pad=true) baked into the
// source as constants and the shapes passed as kernel arguments (so both scales share units).
// Semantics follow torch's CUDA kernels: max pooling skips padding (a -inf identity), keeps the
// first of equal values and propagates NaN (`v > m || isnan(v)`, windows read in (d, h, w) order);
// average pooling sums the in-bounds values in (d, h, w) order in fp32 and divides by torch's
// count_include_pad divisor (the window clipped to the padded input, computed per output).
// 64-bit indices throughout.
//
// Knobs, in token order:
//   variant           direct, smem_tile
//                       direct: a flat grid-stride over the outputs, items_per_thread of them per
//                       thread (block-interleaved, so loads and stores are coalesced); the window is
//                       read from global memory (reuse through L1);
//                       smem_tile: a block computes a tile of TH x TW outputs of one (n, c, d) slice
//                       (TW = block * items_per_thread in 1-d; 128, 64, 32, 64 for tasks 42, 43, 45,
//                       46; TH = block * items_per_thread / TW); for each depth tap of the window it
//                       stages the input region of the tile in dynamic shared memory (coalesced,
//                       padding stored as the identity; task 45, whose windows do not overlap, one
//                       (depth, row) tap at a time: TH rows), then each thread reduces its outputs
//                       from shared memory
//   block             128, 256, 512      threads per block
//   items_per_thread  1, 2, 4            outputs per thread, block-strided along the innermost dim
//   grid              exact, waves       one tile per block; or at most two waves of an H100
//                                        (132 SMs x 2048 threads), grid-stride over the tiles
//   cache_hint        none, streaming    streaming: outputs stored with __stcs (evict first)
//   precision         fp32, fp16_compute (unsafe: the max / the sum is taken on __half values)
//   fast_math         off, on            (average pooling only; unsafe: __fdividef for the
//                                        division by the window size and --use_fast_math)
//   tail              safe, dropped      (unsafe: a tile that is partly outside the output is
//                                        never written)
// Constraints: fast_math=on only with precision=fp32 (and only for average pooling); smem_tile's
// staged region at most 128 KiB (a guard: the largest, task 45's 64 x 352 floats, is 88 KiB).
// Legal configurations: 288 (41, 42, 43), 432 (44, 45, 46).
//
// The source depends on the task, variant, items_per_thread, cache_hint, precision, fast_math and
// tail; block and grid change only the launch (and smem_tile's dynamic shared memory size).
#include <kernels/generator.h>

namespace kbrl {

const Generator& pooling_generator();

}  // namespace kbrl
