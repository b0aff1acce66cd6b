// The loss generator's shared device code (loss.cpp: tasks 94-96, 98-100), emitted before the
// task's partial kernel (loss_partial.cuh). Every section is emitted byte for byte.
//   unit_header          the unit's opening comment (@TASK@ id, @NAME@, @MATH@ in words, @KNOBS@
//                        the knob settings the source depends on)
//   fp16_include         precision=fp16_compute
//   half_exp_note        cross-entropy under fp16_compute: k_exp in __half (device_snippets)
//   k_sqrt, k_sq, k_sq_half   k_sq_half: triplet under fp16_compute
//   run_acc, run_half    the thread's running sum Run: Acc, or __half (fp16_compute, flat and
//                        hinge tasks)
//   load_scalar, load_vec4, load_vec1   kbrl_ld, kbrl_ldv and kbrl_ldv_keep (@LOAD@, @LOAD4@: the
//                        streamed load expressions of cache_hint)
//   reduce               SumOp, kbrl_shfl, kbrl_warp_reduce, kbrl_block_reduce (@BLOCK_REDUCE@,
//                        device_snippets) and the second-stage kernel kbrl_loss_final
//   term_94, term_96, term_98, term_100   the per-element term of the flat and hinge tasks
//   cross_entropy_state  MaxSum (@MAX_SUM_STATE@, device_snippets), its merge and shuffle
//   triplet_state        the two squared-distance sums of a triplet row
//@section unit_header
// kbrl loss generator: task @TASK@ (@NAME@): @MATH@.
// @KNOBS@
// Stage 1 (kbrl_loss_partial): one partial sum per block into scratch; stage 2
// (kbrl_loss_final): one block reduces the partials in a fixed order. No atomics.
//@section fp16_include
#include <cuda_fp16.h>

//@section half_exp_note
// precision=fp16_compute (unsafe): exp(x - max) is evaluated in __half.
//@section k_sqrt
__device__ __forceinline__ float k_sqrt(float v) { return sqrtf(v); }
//@section k_sq
__device__ __forceinline__ float k_sq(float d) { return d * d; }
//@section k_sq_half
// precision=fp16_compute (unsafe): each squared difference is taken in __half.
__device__ __forceinline__ float k_sq(float d) {
  const __half h = __float2half(d);
  return __half2float(__hmul(h, h));
}
//@section run_acc
typedef Acc Run;  // the thread's running sum
__device__ __forceinline__ Run kbrl_run_zero() { return (Run)0; }
__device__ __forceinline__ Run kbrl_run_add(Run r, float v) { return r + (Run)v; }
__device__ __forceinline__ Acc kbrl_run_out(Run r) { return r; }
//@section run_half
// precision=fp16_compute (unsafe): the thread's running sum is a __half.
typedef __half Run;
__device__ __forceinline__ Run kbrl_run_zero() { return __float2half(0.0f); }
__device__ __forceinline__ Run kbrl_run_add(Run r, float v) { return __hadd(r, __float2half(v)); }
__device__ __forceinline__ Acc kbrl_run_out(Run r) { return (Acc)__half2float(r); }
//@section load_scalar
__device__ __forceinline__ float kbrl_ld(const float* p) { return @LOAD@; }
//@section load_vec4
__device__ __forceinline__ void kbrl_ldv(const float* __restrict__ p, long long j, float (&v)[kVec]) {
  const float4 q = @LOAD4@;
  v[0] = q.x; v[1] = q.y; v[2] = q.z; v[3] = q.w;
}
__device__ __forceinline__ void kbrl_ldv_keep(const float* __restrict__ p, long long j, float (&v)[kVec]) {
  const float4 q = __ldg(reinterpret_cast<const float4*>(p) + j);
  v[0] = q.x; v[1] = q.y; v[2] = q.z; v[3] = q.w;
}
//@section load_vec1
__device__ __forceinline__ void kbrl_ldv(const float* __restrict__ p, long long j, float (&v)[kVec]) { v[0] = kbrl_ld(p + j); }
__device__ __forceinline__ void kbrl_ldv_keep(const float* __restrict__ p, long long j, float (&v)[kVec]) { v[0] = __ldg(p + j); }
//@section reduce

#define KBRL_NEG_INF (__int_as_float(0xff800000))

struct SumOp {
  template <class T>
  __device__ __forceinline__ T operator()(T a, T b) const { return a + b; }
};

__device__ __forceinline__ float kbrl_shfl(float v, int o) { return __shfl_xor_sync(0xffffffffu, v, o); }
__device__ __forceinline__ double kbrl_shfl(double v, int o) { return __shfl_xor_sync(0xffffffffu, v, o); }

template <class T, class Op>
__device__ __forceinline__ T kbrl_warp_reduce(T v, Op op) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = op(v, kbrl_shfl(v, o));
  return v;
}

@BLOCK_REDUCE@
// The second stage: one block sums the partials in a fixed order and divides as torch's reduction.
extern "C" __global__ void kbrl_loss_final(const Acc* __restrict__ part, float* __restrict__ out,
                                           long long parts, long long denom) {
  __shared__ Acc smem[32];
  Acc v = (Acc)0;
  for (long long i = threadIdx.x; i < parts; i += blockDim.x) v += part[i];
  v = kbrl_block_reduce(v, (Acc)0, smem, SumOp{});
  if (threadIdx.x == 0) out[0] = (float)((double)v / (double)denom);
}
//@section term_94

// (p - t)^2, as torch's pow(2): d * d
__device__ __forceinline__ float kbrl_term(float p, float t) {
  const float d = p - t;
  return d * d;
}
//@section term_96

// smooth_l1 with beta = 1 (torch's default): z < beta ? 0.5 z^2 / beta : z - 0.5 beta
constexpr float kBeta = 1.0f;
__device__ __forceinline__ float kbrl_term(float p, float t) {
  const float z = fabsf(p - t);
  return z < kBeta ? 0.5f * z * z / kBeta : z - 0.5f * kBeta;
}
//@section term_98

// kl_div(log(p), t): xlogy(t, t) - t * log(p) (xlogy: NaN for NaN t, 0 for t == 0)
__device__ __forceinline__ float kbrl_term(float p, float t) {
  const float xl = t != t ? t : (t == 0.0f ? 0.0f : t * k_log(t));
  return xl - t * k_log(p);
}
//@section term_100

// clamp_min(1 - p * t, 0), the product rounded as torch's separate multiply
__device__ __forceinline__ float kbrl_term(float p, float t) {
  const float v = 1.0f - __fmul_rn(p, t);
  return v < 0.0f ? 0.0f : v;  // NaN stays NaN
}
//@section cross_entropy_state

@MAX_SUM_STATE@
struct MergeOp {
  __device__ __forceinline__ MaxSum operator()(MaxSum a, MaxSum b) const {
    const float m = kbrl_max(a.m, b.m);
    if (m == KBRL_NEG_INF) return MaxSum{m, a.s + b.s};  // both empty
    return MaxSum{m, a.s * k_exp(a.m - m) + b.s * k_exp(b.m - m)};
  }
};

__device__ __forceinline__ MaxSum kbrl_shfl(MaxSum v, int o) {
  return MaxSum{__shfl_xor_sync(0xffffffffu, v.m, o), __shfl_xor_sync(0xffffffffu, v.s, o)};
}
//@section triplet_state

struct Pair {
  float p;  // sum of (a - positive + eps)^2
  float n;  // sum of (a - negative + eps)^2
};
struct PairSumOp {
  __device__ __forceinline__ Pair operator()(Pair a, Pair b) const { return Pair{a.p + b.p, a.n + b.n}; }
};
__device__ __forceinline__ Pair kbrl_shfl(Pair v, int o) {
  return Pair{__shfl_xor_sync(0xffffffffu, v.p, o), __shfl_xor_sync(0xffffffffu, v.n, o)};
}
