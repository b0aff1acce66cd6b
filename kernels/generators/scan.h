#pragma once
// The scan generator: scans along dim 1 of a 2-d x ([32768, 32768] at KernelBench's scale):
// 89 cumsum, 90 cumprod, 91 reverse cumsum (cumsum of the flipped row, flipped back: suffix sums),
// 92 exclusive cumsum (KernelBench's current module: a zero column, then the cumsum of all but the
// last column, i.e. y[:, i] = sum of x[:, j] for j < i, the shape of x), 93 masked cumsum
// (cumsum(x * mask) with a bool mask, the product taken in fp32 as torch does).
// Rows are scanned in chunks of `items_per_thread` contiguous elements per thread: each thread scans
// its items in registers, the threads' totals are scanned with warp shuffles (and, block per row,
// across warps through shared memory), and a carry runs across the chunks of the row (from the end
// of the row for the reverse scan). fp32 throughout, 64-bit indices, every output written once.
//
// Knobs, in token order:
//   variant           block_per_row, warp_per_row
//                       block_per_row: one block scans a row (chunks of block * items_per_thread,
//                       two barriers per chunk); warp_per_row: one warp scans a row (chunks of
//                       32 * items_per_thread, no barriers; block / 32 rows per block)
//   block             128, 256, 512, 1024   threads per block
//   items_per_thread  4, 8, 16              contiguous elements per thread per chunk
//   vec               1, 4                  float4 (and 4-byte mask) accesses when the row pointers
//                                           are aligned and the thread's items are inside the row;
//                                           element by element otherwise
//   cache_hint        none, streaming       streaming: __ldcs loads, __stcs stores (each element is
//                                           read once and written once)
//   precision         fp32, fp16_compute    (unsafe: the scan runs on __half values)
//   tail              safe, dropped         (unsafe: a row's last, partial chunk is never
//                                           processed; harmless when the row length is a multiple
//                                           of the chunk, as at KernelBench's scale)
// Constraint: one unsafe knob at a time (precision=fp16_compute requires tail=safe).
// Legal configurations: 288 per task.
//
// The source depends on the task, variant, items_per_thread, vec, cache_hint, precision and tail;
// block only changes the launch, and the shapes are kernel arguments (both scales share units).
#include <kernels/generator.h>

namespace kbrl {

const Generator& scan_generator();

}  // namespace kbrl
