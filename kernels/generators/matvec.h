#pragma once
// Task 4 of the gemm generator (gemm.h): matrix-vector, y = A x with A [M,K] read once
// (memory-bound), its own kernel (cuda/matvec.cuh) and knobs. Internal to gemm.cpp, which
// dispatches task 4 here; fp32 accumulation, 64-bit indices.
//
// Knobs, in token order:
//   variant     block_per_row, warp_per_row   a block, or each warp, reduces tile_m rows
//   block       128, 256, 512                 threads per block
//   tile_m      1, 2, 4                       rows per block / warp: each load of x serves them all
//   vec         1, 4                          float4 loads of A and x when aligned
//   unroll      1, 2, 4                       independent loads in flight per row per thread
//   cache_hint  none, streaming               streaming: A read with __ldcs (x via __ldg always)
//   fast_math   off, on                       on (unsafe): --use_fast_math
// Legal configurations: 432. Deterministic: fixed-order warp and block reductions.
//
// The source depends on tile_m, unroll and cache_hint (variant, vec and block are arguments /
// launch), plus fast_math's option: 36 units.
#include <kernels/generator.h>

namespace kbrl {

/// The task the gemm generator serves with the matrix-vector kernel.
constexpr int kMatvecTask = 4;

/// Task 4's knob space.
KnobSpace matvec_space();

/// Task 4's candidate for a `config` already checked against matvec_space(). Throws InputError
/// when the task's shapes are not A [M,K] times B [K,1].
Candidate matvec_generate(const TaskSpec& task, const Config& config);

/// Task 4's expert configuration.
Config matvec_expert();

}  // namespace kbrl
