#pragma once
// The reduction generator: level-1 reductions over dim 1 of x:[B,R,K] (the middle dim; K is
// contiguous): sum (47, keepdim), mean (48), max (49), min (53) values, argmax (51) and argmin (52)
// with int64 indices. Threads run along K so that every row read is coalesced; each thread reduces
// rows of one column k, in ascending row order.
//
// Knobs, in token order:
//   variant        column_per_thread (one thread per column, looping over all R rows),
//                  split_rows (a block covers cols_per_block columns and splits R over its
//                  block / cols_per_block row slices, combined in shared memory),
//                  two_kernel (split_rows over row_splits chunks of R, partials in scratch, then a
//                  combine launch)
//   block          128, 256, 512 (threads per block)
//   cols_per_block 32, 64 (split_rows, two_kernel), block (column_per_thread: block columns)
//   row_splits     1 (column_per_thread, split_rows), 4, 16 (two_kernel)
//   unroll         1, 2, 4 (rows loaded before any is combined)
//   accumulators   1, 2, 4 (sum/mean only; unroll % accumulators == 0 via accumulators <= unroll)
//   cache_hint     none, ldg, streaming (__ldg; __ldcs)
//   precision      fp32, fp16_compute (sum/mean only; unsafe: the accumulators are __half)
//   tail           safe, dropped (max/min/argmax/argmin only; unsafe: the columns of the last
//                  partial cols_per_block group are never written)
// Sum and mean accumulate in fp32; max/min propagate NaN as torch; argmax/argmin take the first
// index on ties and the first NaN, as torch. Indices are 64-bit.
// Legal configurations: 756 for tasks 47 and 48, 378 for 49, 51, 52 and 53.
//
// The kernel source depends on variant, unroll, accumulators, cache_hint, precision/tail and the
// operation (sum and mean share it: mean passes scale = 1/R); block, cols_per_block and
// row_splits only change the launch (blockDim, gridDim and dynamic shared memory), except that
// tail=dropped with two_kernel names cols_per_block in the combine kernel.
#include <kernels/generator.h>

namespace kbrl {

const Generator& reduction_generator();

}  // namespace kbrl
