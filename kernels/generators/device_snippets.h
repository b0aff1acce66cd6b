#pragma once
// CUDA source text shared by the generator families (kernels/generators/*.cpp only). The text
// lives in cuda/snippets.cuh (the cache-hint expressions, one expression each, are built here).
// Every piece is the exact text the families emitted before it was shared; where their copies
// differed, a parameter picks the family's text, so generated sources stay byte-identical.
#include <string>
#include <string_view>

namespace kbrl {

/// A load of `*ptr` under a cache_hint knob value: "__ldg(ptr)" for ldg, "__ldcs(ptr)" for
/// streaming, "*(ptr)" otherwise.
std::string load_expr(std::string_view hint, const std::string& ptr);
/// A store of `value` to `*ptr` under a cache_hint knob value: "__stcs(ptr, value)" for
/// streaming, "*(ptr) = value" otherwise.
std::string store_expr(std::string_view hint, const std::string& ptr, const std::string& value);

/// How the float helpers k_exp, k_log and k_div evaluate.
enum class FloatMath {
  exact,     // expf, logf, a / b
  fast,      // fast_math=on: the __expf, __logf and __fdividef intrinsics
  half_exp,  // precision=fp16_compute: exp evaluated in __half; logf and a / b
};
/// One line each: `__device__ __forceinline__ float k_exp(float <arg>)`, `k_log(float v)` and
/// `k_div(float a, float b)`.
std::string k_exp_helper(FloatMath math, std::string_view arg);
std::string k_log_helper(FloatMath math);
std::string k_div_helper(FloatMath math);
/// The comment line a fast_math=on unit puts before its intrinsic helpers.
const std::string& fast_math_note();

/// The online softmax state: `struct MaxSum {m, s}` (the maximum seen and the sum of
/// exp(v - m)), `kbrl_max` (a max that propagates NaN, as torch's) and `kbrl_add(MaxSum&, float)`.
/// Uses k_exp and KBRL_NEG_INF, defined before it.
const std::string& max_sum_state();

/// How kbrl_block_reduce reduces within a warp: unrolled kbrl_shfl (xor) loops, or calls of the
/// unit's own kbrl_warp_reduce(v, op).
enum class WarpStep { shuffle_loop, warp_reduce_call };
/// `template <class T, class Op> T kbrl_block_reduce(T v, T identity, T* smem, Op op)`: a block
/// reduction in a fixed order (blockDim.x a multiple of 32, at most 1024) whose result every
/// thread gets; `smem` holds 32 values. Needs kbrl_shfl(T, int) (or kbrl_warp_reduce).
std::string block_reduce_helper(WarpStep step);

}  // namespace kbrl
