// The softmax generator's device code (softmax.cpp, tasks 23 softmax and 24 log_softmax): one
// kernel, kbrl_softmax, assembled from these sections by the variant, vec, cache_hint, precision
// and fast_math knobs. Order of a unit: header; fp16_compute_note (or snippets.cuh's
// fast_math_note); the k_exp / k_log / k_div helpers; neg_inf, snippets.cuh's max_sum_state,
// merge_ops and snippets.cuh's block_reduce; cache_size (cached variant); kernel_begin, the
// shared arrays, row_begin, row_aligned (vec=4), the reduction passes, the normalizing pass,
// cache_refill (cached variant) and kernel_end.
//   header, formula_*       the unit's opening comment (the formula by task)
//   read_* and body_*       a read-only pass over the row (float4 loop, scalar tail) whose body
//                           is one of body_max, body_sum, body_online; *_fill: the cached variant
//                           stores the row's prefix in shared memory
//   write_* and fn_*        the normalizing pass: y = fn(x) (fn_softmax or fn_log_softmax), the
//                           loads and stores (cache-hint expressions) filled in by the C++
//@section header
// kbrl softmax generator: task @TASK@ (@NAME@), @FORMULA@ over dim 1.
// variant=@VARIANT@ vec=@VEC@ cache_hint=@CACHE_HINT@ precision=@PRECISION@ fast_math=@FAST_MATH@
//@section formula_softmax nonl
y = exp(x - max) / sum(exp(x - max))
//@section formula_log_softmax nonl
y = x - max - log(sum(exp(x - max)))
//@section fp16_compute_note
#include <cuda_fp16.h>

// precision=fp16_compute (unsafe): exp(x - max) is evaluated in __half; sums stay fp32.
//@section neg_inf

#define KBRL_NEG_INF (__int_as_float(0xff800000))

// A running softmax state: the maximum seen and the sum of exp(v - max) over the values seen.
//@section merge_ops

__device__ __forceinline__ MaxSum kbrl_merge(MaxSum a, MaxSum b) {
  const float m = kbrl_max(a.m, b.m);
  if (m == KBRL_NEG_INF) return MaxSum{m, a.s + b.s};  // both empty
  return MaxSum{m, a.s * k_exp(a.m - m) + b.s * k_exp(b.m - m)};
}

struct MergeOp {
  __device__ MaxSum operator()(MaxSum a, MaxSum b) const { return kbrl_merge(a, b); }
};
struct MaxOp {
  __device__ float operator()(float a, float b) const { return kbrl_max(a, b); }
};
struct SumOp {
  __device__ float operator()(float a, float b) const { return a + b; }
};

__device__ __forceinline__ float kbrl_shfl(float v, int o) {
  return __shfl_xor_sync(0xffffffffu, v, o);
}
__device__ __forceinline__ MaxSum kbrl_shfl(MaxSum v, int o) {
  return MaxSum{__shfl_xor_sync(0xffffffffu, v.m, o), __shfl_xor_sync(0xffffffffu, v.s, o)};
}

//@section cache_size

// The row's first kCache elements stay in shared memory between the passes.
constexpr long long kCache = @CACHE_FLOATS@;
//@section kernel_begin

extern "C" __global__ void kbrl_softmax(const float* __restrict__ x, float* __restrict__ y, long long rows, long long cols) {
//@section smem_float
  __shared__ float warp_f[32];
//@section smem_max_sum
  __shared__ MaxSum warp_ms[32];
//@section smem_cache
  __shared__ __align__(16) float cache[kCache];
//@section row_begin
  for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
    const float* in = x + row * cols;
    float* out = y + row * cols;
//@section row_aligned
    // float4 over the row when both row pointers are 16-byte aligned; a scalar tail.
    const bool aligned = (((unsigned long long)in | (unsigned long long)out) & 15) == 0;
    const long long nv = aligned ? cols / 4 : 0;
//@section three_pass_max
    // pass 1: the row's maximum
    float m = KBRL_NEG_INF;
//@section three_pass_sum
    m = kbrl_block_reduce(m, KBRL_NEG_INF, warp_f, MaxOp{});
    // pass 2: the sum of exp(x - max)
    float sum = 0.0f;
//@section three_pass_end
    sum = kbrl_block_reduce(sum, 0.0f, warp_f, SumOp{});
//@section online_begin
    // pass 1: an online (max, sum of exp(x - max)) per thread, merged over the block
    MaxSum st = {KBRL_NEG_INF, 0.0f};
//@section online_end
    st = kbrl_block_reduce(st, MaxSum{KBRL_NEG_INF, 0.0f}, warp_ms, MergeOp{});
    const float m = st.m, sum = st.s;
//@section normalize_softmax
    // last pass: normalize
//@section normalize_log_softmax
    // last pass: normalize
    const float logsum = k_log(sum);
//@section cache_refill
    __syncthreads();  // the cache is refilled for the next row
//@section kernel_end
  }
}
//@section read_vec4_begin
    for (long long j = threadIdx.x; j < nv; j += blockDim.x) {
      const float4 q = reinterpret_cast<const float4*>(in)[j];
//@section read_vec4_fill
      if (4 * j + 4 <= kCache) reinterpret_cast<float4*>(cache)[j] = q;
//@section read_vec4_body
      { const float v = q.x; @BODY@ }
      { const float v = q.y; @BODY@ }
      { const float v = q.z; @BODY@ }
      { const float v = q.w; @BODY@ }
    }
//@section read_scalar_begin
    for (long long i = @FIRST@ + threadIdx.x; i < cols; i += blockDim.x) {
      const float v = in[i];
//@section read_scalar_fill
      if (i < kCache) cache[i] = v;
//@section read_scalar_body
      @BODY@
    }
//@section body_max nonl
m = kbrl_max(m, v);
//@section body_sum nonl
sum += k_exp(v - m);
//@section body_online nonl
kbrl_add(st, v);
//@section write_vec4_begin
    for (long long j = threadIdx.x; j < nv; j += blockDim.x) {
//@section write_vec4_load_cached
      float4 q = 4 * j + 4 <= kCache ? reinterpret_cast<const float4*>(cache)[j] : @LOAD@;
//@section write_vec4_load
      float4 q = @LOAD@;
//@section write_vec4_end
      q.x = @FX@;
      q.y = @FY@;
      q.z = @FZ@;
      q.w = @FW@;
      @STORE@;
    }
//@section write_scalar_begin
    for (long long i = @FIRST@ + threadIdx.x; i < cols; i += blockDim.x) {
//@section write_scalar_load_cached
      const float v = i < kCache ? cache[i] : @LOAD@;
//@section write_scalar_load
      const float v = @LOAD@;
//@section write_scalar_end
      @STORE@;
    }
//@section fn_softmax nonl
k_div(k_exp(@V@ - m), sum)
//@section fn_log_softmax nonl
@V@ - m - logsum
