// The norm generator's planar kernels (norm.cpp: tasks 33-35 and 37-40), part 1 of 2: the unit's
// header comment and its statistics. Every unit holds the same text; the C++ writes the
// configuration (#define KBRL_KIND, KBRL_AFFINE, KBRL_STREAM, KBRL_HALF, KBRL_FAST) before it and
// norm_planar_kernels.cuh after it.
//   unit_header  the comment opening the unit (@WHAT@: the task's normalization, @AFFINE@: its
//                affine, in words)
//   statistics   i64/u64, the LD_LAST/ST cache-hint macros, the affine parameter macros, the
//                thread (fp32) and merged (fp64) statistics, the block merge, the segment's
//                coefficients and the per-element normalizing arithmetic

//@section unit_header
// kbrl norm generator: a statistic per segment (S segments of P pieces of Lp contiguous
// elements), then y normalized with it: @WHAT@.
// Thread statistics in fp32, merged in fp64 in a fixed order (deterministic). Affine: @AFFINE@.
// Kernels: kbrl_norm_segment (variant=block_per_segment); kbrl_norm_stats, then
// kbrl_norm_finalize and kbrl_norm_apply (split) or kbrl_norm_apply_inline (split_inline).
// vec4 (an argument): float4 accesses over each run's 16-byte-aligned body.
//@section statistics

typedef long long i64;
typedef unsigned long long u64;

#if KBRL_STREAM
// cache_hint=streaming: the last read of x and the store of y are evict-first.
#define LD_LAST(p) __ldcs(p)
#define ST(p, v) __stcs((p), (v))
#else
#define LD_LAST(p) (*(p))
#define ST(p, v) (*(p) = (v))
#endif

#if KBRL_AFFINE
#define KBRL_WB , const float* __restrict__ weight, const float* __restrict__ bias
#define KBRL_WB_PASS , weight, bias
#else
#define KBRL_WB
#define KBRL_WB_PASS
#endif

// A thread's running statistic (fp32) and a merged one (fp64). (n, a, b) is
// (count, mean, M2) for Welford, (count, sum, sum of squares) for sum_sumsq,
// (count, sum of squares, -) or (count, sum of |x|, -) for the normalizations.
struct TStat { float n, a, b; };
struct DStat { double n, a, b; };

__device__ __forceinline__ void t_add1(TStat& t, float v) {
  t.n += 1.0f;
#if KBRL_KIND == 0
  const float d = v - t.a;
  t.a += d / t.n;
  t.b = fmaf(d, v - t.a, t.b);
#elif KBRL_KIND == 1
  t.a += v;
  t.b = fmaf(v, v, t.b);
#elif KBRL_KIND == 2
  t.a = fmaf(v, v, t.a);
#else
  t.a += fabsf(v);
#endif
}

__device__ __forceinline__ void t_add4(TStat& t, float4 q) {
#if KBRL_KIND == 0
  // The four values' own mean and M2, merged into the running state (Chan et al.).
  const float m = ((q.x + q.y) + (q.z + q.w)) * 0.25f;
  const float dx = q.x - m, dy = q.y - m, dz = q.z - m, dw = q.w - m;
  const float m2 = (dx * dx + dy * dy) + (dz * dz + dw * dw);
  const float n = t.n + 4.0f;
  const float f = 4.0f / n;
  const float d = m - t.a;
  t.b += m2 + d * d * (t.n * f);
  t.a = fmaf(d, f, t.a);
  t.n = n;
#else
  t_add1(t, q.x);
  t_add1(t, q.y);
  t_add1(t, q.z);
  t_add1(t, q.w);
#endif
}

#if KBRL_KIND == 0
__device__ __forceinline__ DStat d_merge(DStat x, DStat y) {
  if (y.n == 0.0) return x;
  if (x.n == 0.0) return y;
  const double n = x.n + y.n;
  const double f = y.n / n;
  const double d = y.a - x.a;
  return DStat{n, x.a + d * f, x.b + y.b + d * d * (x.n * f)};
}
#else
__device__ __forceinline__ DStat d_merge(DStat x, DStat y) {
  return DStat{x.n + y.n, x.a + y.a, x.b + y.b};
}
#endif

__device__ __forceinline__ DStat d_shfl_down(DStat v, int o) {
  return DStat{__shfl_down_sync(0xffffffffu, v.n, o), __shfl_down_sync(0xffffffffu, v.a, o),
               __shfl_down_sync(0xffffffffu, v.b, o)};
}

// Merges one value per thread over the block (blockDim.x a multiple of 32, at most 1024) in a
// fixed order; thread 0 gets the result. `red` holds 32 values and may be reused on return.
__device__ __noinline__ DStat block_reduce(DStat v, DStat* red) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = d_merge(v, d_shfl_down(v, o));
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) red[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < (int)(blockDim.x >> 5) ? red[lane] : DStat{0.0, 0.0, 0.0};
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = d_merge(v, d_shfl_down(v, o));
  }
  __syncthreads();
  return v;
}

// The segment's coefficients from its statistic: (mean, 1/sqrt(var + eps)) for the moment norms
// (biased variance), (0, factor) with y = x * factor for the others.
__device__ __noinline__ float2 coef_of(DStat s, float eps) {
#if KBRL_KIND <= 1
#if KBRL_KIND == 0
  const double mean = s.a;
  const double var = s.b / s.n;
#else
  const double mean = s.a / s.n;
  double var = s.b / s.n - mean * mean;
  var = var > 0.0 ? var : 0.0;
#endif
#if KBRL_FAST
  return make_float2((float)mean, rsqrtf((float)var + eps));
#else
  return make_float2((float)mean, (float)(1.0 / sqrt(var + (double)eps)));
#endif
#elif KBRL_KIND == 2
  // 1 / ||x||_2
#if KBRL_FAST
  return make_float2(0.0f, rsqrtf((float)s.a));
#else
  return make_float2(0.0f, (float)(1.0 / sqrt(s.a)));
#endif
#else
  // 1 / mean(|x|)
#if KBRL_FAST
  return make_float2(0.0f, (float)s.n / (float)s.a);
#else
  return make_float2(0.0f, (float)(s.n / s.a));
#endif
#endif
}

// y = x * sc + sh (the moment norms fold mean, rstd and a per-piece affine into sc and sh).
__device__ __forceinline__ float k_apply(float v, float sc, float sh) {
#if KBRL_HALF
  return __half2float(__hfma(__float2half(v), __float2half(sc), __float2half(sh)));
#else
  return fmaf(v, sc, sh);
#endif
}

// y = (x - mean) * rstd * w + b with an element-wise affine.
__device__ __forceinline__ float k_apply_e(float v, float mean, float rstd, float w, float b) {
#if KBRL_HALF
  return __half2float(__hfma(__float2half((v - mean) * rstd), __float2half(w), __float2half(b)));
#else
  return fmaf((v - mean) * rstd, w, b);
#endif
}

