#pragma once
// The elementwise generator: level-1 tasks that map each output element from one input element
// (activations 19-22, 25-32, 88), scalar multiplication (5: C = A * s) and diagonal row scaling
// (12: C = A.unsqueeze(1) * B). One grid-stride kernel over tiles of block * vec *
// items_per_thread elements, 64-bit indices throughout (task 19 has 1.6e9 elements).
//
// Knobs, in token order:
//   block            128, 256, 512, 1024
//   vec              1, 2, 4            (float2/float4 accesses when both pointers are aligned)
//   items_per_thread 1, 2, 4, 8         (vector items loaded before any is computed)
//   grid             exact, waves       (cdiv(n, tile) blocks; or at most two waves of an H100)
//   cache_hint       none, ldg, streaming (__ldg; __ldcs/__stcs)
//   precision        fp32, fp16_compute (unsafe: the math runs on __half)
//   fast_math        off, on            (unsafe: --use_fast_math and __expf/__logf/__fdividef)
//   tail             safe, dropped      (unsafe: the last partial tile is never written)
// Constraints: vec * items_per_thread <= 8; block * vec * items_per_thread <= 2048; fast_math=on
// only for tasks whose math has a transcendental or a division, and only with precision=fp32.
// That gives 972 legal configurations for tasks with transcendental math, 648 for the others.
//
// The kernel source depends on vec, items_per_thread, cache_hint, precision, fast_math and tail
// (and, for task 12, on the row length); block and grid only change the launch.
#include <kernels/generator.h>

namespace kbrl {

const Generator& elementwise_generator();

}  // namespace kbrl
