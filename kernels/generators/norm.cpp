#include "norm.h"

#include <algorithm>
#include <string>

#include <kbrl/error.h>

#include "family_common.h"

namespace kbrl {
namespace {

/// What a task reduces and how it normalizes.
enum class Kind {
  moments,  // mean and biased variance: y = (x - mean) / sqrt(var + eps) [* w + b]
  sumsq,    // y = x / sqrt(sum of squares) (37 over the whole tensor, 39 over each row)
  sumabs,   // y = x / mean(|x|) over each row (38)
  rms,      // y = x / sqrt(mean over dim 1 of x^2 + eps) (36)
};

/// The affine of a moment norm: none; one weight/bias per piece of a segment (a channel); or an
/// element-wise weight/bias over the segment (LayerNorm).
enum class Affine { none, per_piece, element };

struct NormTask {
  int id;
  Kind kind;
  Affine affine;
  const char* math;
  bool block_per_segment;  // enough segments (>= 896 at KernelBench scale) for a block each
  bool split_inline;       // few enough chunk statistics per segment to merge in every block
};

constexpr NormTask kTasks[] = {
    {33, Kind::moments, Affine::per_piece,
     "BatchNorm2d (training): per-channel batch mean and biased variance over N, H, W", false, true},
    {34, Kind::moments, Affine::none, "InstanceNorm2d: per-(n, c) mean and biased variance", true,
     true},
    {35, Kind::moments, Affine::per_piece,
     "GroupNorm (8 groups): per-(n, group) mean and biased variance, per-channel affine", true,
     true},
    {36, Kind::rms, Affine::none, "RMSNorm: x / sqrt(mean over dim 1 of x^2 + eps)", false, false},
    {37, Kind::sumsq, Affine::none, "Frobenius norm: x / ||x||_F over the whole tensor", false,
     false},
    {38, Kind::sumabs, Affine::none, "L1 norm: x / mean(|x|) over dim 1", true, true},
    {39, Kind::sumsq, Affine::none, "L2 norm: x / ||x||_2 over dim 1", true, true},
    {40, Kind::moments, Affine::element,
     "LayerNorm over the last three dims: mean and biased variance, element-wise affine", false,
     true},
};

constexpr double kEps = 1e-5;       // every module's default eps, and task 36's
constexpr int64_t kChannels = 64;   // dim 1 of tasks 33-37 and 40 at both scales
constexpr int64_t kGroups = 8;      // task 35
constexpr int64_t kMaxGrid = 2147483647;

const NormTask* find_task(int id) { return find_entry(kTasks, &NormTask::id, id); }

const NormTask& task_of(const TaskSpec& task) {
  const NormTask* t = find_task(task.id);
  check_covered(t != nullptr, "norm", task);
  KBRL_CHECK_INPUT(task.inputs.size() == 1 && task.outputs.size() == 1 &&
                       task.outputs[0].shape == task.inputs[0].shape,
                   "task {}: the norm generator expects y = f(x) in x's shape", task.id);
  return *t;
}

/// The statistic domains of a planar task: S segments, each P contiguous pieces of Lp elements;
/// piece p of segment s starts at s * seg_stride + p * piece_stride. A per-piece affine reads
/// channel (s % cs_mod) * cs_mul + p * cp_mul.
struct Geometry {
  int64_t S = 1, P = 1, Lp = 1, seg_stride = 0, piece_stride = 0;
  int64_t cs_mod = 1, cs_mul = 0, cp_mul = 0;
};

Geometry geometry_of(const NormTask& t, const TaskSpec& task) {
  const auto& shape = task.inputs[0].shape;
  Geometry g;
  const int64_t numel = task.inputs[0].numel();
  switch (t.id) {
    case 33: {  // segment = channel c: N pieces of H*W at stride C*H*W
      KBRL_CHECK_INPUT(shape.size() == 4, "task 33: expected x:[N,C,H,W]");
      const int64_t n = shape[0], c = shape[1], hw = shape[2] * shape[3];
      g = {c, n, hw, hw, c * hw, c, 1, 0};
      break;
    }
    case 34: {  // segment = plane (n, c)
      KBRL_CHECK_INPUT(shape.size() == 4, "task 34: expected x:[N,C,H,W]");
      const int64_t hw = shape[2] * shape[3];
      g = {shape[0] * shape[1], 1, hw, hw, hw, 1, 0, 0};
      break;
    }
    case 35: {  // segment = (n, group): C/G pieces (channels) of H*W
      KBRL_CHECK_INPUT(shape.size() == 4 && shape[1] % kGroups == 0,
                       "task 35: expected x:[N,C,H,W] with C divisible by {}", kGroups);
      const int64_t cg = shape[1] / kGroups, hw = shape[2] * shape[3];
      g = {shape[0] * kGroups, cg, hw, cg * hw, hw, kGroups, cg, 1};
      break;
    }
    case 37:  // one segment: the whole tensor
      g = {1, 1, numel, numel, numel, 1, 0, 0};
      break;
    case 38:
    case 39:  // segment = row
      KBRL_CHECK_INPUT(shape.size() == 2, "task {}: expected x:[rows, cols]", t.id);
      g = {shape[0], 1, shape[1], shape[1], shape[1], 1, 0, 0};
      break;
    case 40: {  // segment = sample n: C*H*W elements, weight/bias [C,H,W]
      KBRL_CHECK_INPUT(shape.size() == 4 && task.parameters.size() == 2 &&
                           task.parameters[0].numel() == numel / shape[0],
                       "task 40: expected x:[N,C,H,W] and weight, bias:[C,H,W]");
      g = {shape[0], 1, numel / shape[0], numel / shape[0], numel / shape[0], 1, 0, 0};
      break;
    }
    default:
      throw InternalError(fmt::format("norm: no geometry for task {}", t.id));
  }
  if (t.affine == Affine::per_piece)
    KBRL_CHECK_INPUT(task.parameters.size() == 2 && task.parameters[0].numel() == shape[1],
                     "task {}: expected per-channel weight and bias", t.id);
  return g;
}

const char* const kPlanarDevice =
R"KBRL(
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

// Elements before `p` is 16-byte aligned (p is 4-byte aligned), at most n.
__device__ __forceinline__ i64 head_of(const float* p, i64 n) {
  const i64 h = (i64)((4u - (unsigned)(((u64)p >> 2) & 3u)) & 3u);
  return h < n ? h : n;
}

// Adds in[0, n) to the thread's statistic, the block's threads striding over it: with vec4,
// float4 over the 16-byte-aligned body (scalar head and tail). Out of line (one copy per unit; a
// run is thousands of elements).
__device__ __noinline__ TStat stats_run(const float* __restrict__ in, i64 n, TStat t, int vec4) {
  const i64 tid = threadIdx.x, nt = blockDim.x;
  i64 i = tid;
  if (vec4) {
    const i64 head = head_of(in, n);
    if (tid < head) t_add1(t, in[tid]);
    const float4* body = reinterpret_cast<const float4*>(in + head);
    const i64 nb = (n - head) >> 2;
    i64 j = tid;
    for (; j + 3 * nt < nb; j += 4 * nt) {
      const float4 q0 = body[j], q1 = body[j + nt], q2 = body[j + 2 * nt], q3 = body[j + 3 * nt];
      t_add4(t, q0);
      t_add4(t, q1);
      t_add4(t, q2);
      t_add4(t, q3);
    }
    for (; j < nb; j += nt) t_add4(t, body[j]);
    i = head + 4 * nb + tid;
  }
  for (; i + 3 * nt < n; i += 4 * nt) {
    const float v0 = in[i], v1 = in[i + nt], v2 = in[i + 2 * nt], v3 = in[i + 3 * nt];
    t_add1(t, v0);
    t_add1(t, v1);
    t_add1(t, v2);
    t_add1(t, v3);
  }
  for (; i < n; i += nt) t_add1(t, in[i]);
  return t;
}

__device__ __forceinline__ float4 apply4(float4 q, float sc, float sh) {
  return make_float4(k_apply(q.x, sc, sh), k_apply(q.y, sc, sh), k_apply(q.z, sc, sh),
                     k_apply(q.w, sc, sh));
}

// out[i] = in[i] * sc + sh over [0, n). Out of line, as stats_run.
__device__ __noinline__ void apply_run(const float* __restrict__ in, float* __restrict__ out,
                                       i64 n, float sc, float sh, int vec4) {
  const i64 tid = threadIdx.x, nt = blockDim.x;
  i64 i = tid;
  if (vec4 && (((u64)in ^ (u64)out) & 15u) == 0) {  // the same offset from 16-byte alignment
    const i64 head = head_of(in, n);
    if (tid < head) ST(out + tid, k_apply(LD_LAST(in + tid), sc, sh));
    const float4* bin = reinterpret_cast<const float4*>(in + head);
    float4* bout = reinterpret_cast<float4*>(out + head);
    const i64 nb = (n - head) >> 2;
    i64 j = tid;
    for (; j + 3 * nt < nb; j += 4 * nt) {
      const float4 q0 = LD_LAST(bin + j), q1 = LD_LAST(bin + j + nt);
      const float4 q2 = LD_LAST(bin + j + 2 * nt), q3 = LD_LAST(bin + j + 3 * nt);
      ST(bout + j, apply4(q0, sc, sh));
      ST(bout + j + nt, apply4(q1, sc, sh));
      ST(bout + j + 2 * nt, apply4(q2, sc, sh));
      ST(bout + j + 3 * nt, apply4(q3, sc, sh));
    }
    for (; j < nb; j += nt) ST(bout + j, apply4(LD_LAST(bin + j), sc, sh));
    i = head + 4 * nb + tid;
  }
  for (; i + 3 * nt < n; i += 4 * nt) {
    const float v0 = LD_LAST(in + i), v1 = LD_LAST(in + i + nt);
    const float v2 = LD_LAST(in + i + 2 * nt), v3 = LD_LAST(in + i + 3 * nt);
    ST(out + i, k_apply(v0, sc, sh));
    ST(out + i + nt, k_apply(v1, sc, sh));
    ST(out + i + 2 * nt, k_apply(v2, sc, sh));
    ST(out + i + 3 * nt, k_apply(v3, sc, sh));
  }
  for (; i < n; i += nt) ST(out + i, k_apply(LD_LAST(in + i), sc, sh));
}

#if KBRL_AFFINE == 2
// out[i] = (in[i] - mean) * rstd * w[i] + b[i] over [0, n).
__device__ __noinline__ void apply_run_e(const float* __restrict__ in, float* __restrict__ out,
                                            const float* __restrict__ w,
                                            const float* __restrict__ b, i64 n, float mean,
                                            float rstd, int vec4) {
  const i64 tid = threadIdx.x, nt = blockDim.x;
  i64 i = tid;
  const u64 a = (u64)in;
  if (vec4 && (((a ^ (u64)out) | (a ^ (u64)w) | (a ^ (u64)b)) & 15u) == 0) {
    const i64 head = head_of(in, n);
    if (tid < head) ST(out + tid, k_apply_e(LD_LAST(in + tid), mean, rstd, w[tid], b[tid]));
    const float4* bin = reinterpret_cast<const float4*>(in + head);
    const float4* bw = reinterpret_cast<const float4*>(w + head);
    const float4* bb = reinterpret_cast<const float4*>(b + head);
    float4* bout = reinterpret_cast<float4*>(out + head);
    const i64 nb = (n - head) >> 2;
    for (i64 j = tid; j < nb; j += nt) {
      const float4 q = LD_LAST(bin + j), g = bw[j], c = bb[j];
      ST(bout + j, make_float4(k_apply_e(q.x, mean, rstd, g.x, c.x),
                               k_apply_e(q.y, mean, rstd, g.y, c.y),
                               k_apply_e(q.z, mean, rstd, g.z, c.z),
                               k_apply_e(q.w, mean, rstd, g.w, c.w)));
    }
    i = head + 4 * nb + tid;
  }
  for (; i < n; i += nt) ST(out + i, k_apply_e(LD_LAST(in + i), mean, rstd, w[i], b[i]));
}
#endif

// Normalizes the run [lo, lo + n) of piece p of segment s with the segment's coefficients c.
// Per-piece affine (KBRL_AFFINE 1): channel = (s % cs_mod) * cs_mul + p * cp_mul.
__device__ __forceinline__ void apply_chunk(const float* __restrict__ x, float* __restrict__ y KBRL_WB,
                                            i64 s, i64 p, i64 lo, i64 n, i64 Lp, i64 seg_stride,
                                            i64 piece_stride, i64 cs_mod, i64 cs_mul, i64 cp_mul,
                                            float2 c, int vec4) {
  const i64 off = s * seg_stride + p * piece_stride + lo;
#if KBRL_AFFINE == 2
  apply_run_e(x + off, y + off, weight + p * Lp + lo, bias + p * Lp + lo, n, c.x, c.y, vec4);
#else
#if KBRL_KIND <= 1
#if KBRL_AFFINE == 1
  const i64 ch = (s % cs_mod) * cs_mul + p * cp_mul;
  const float sc = c.y * weight[ch];
  const float sh = fmaf(-c.x, sc, bias[ch]);
#else
  const float sc = c.y;
  const float sh = -c.x * c.y;
#endif
#else
  const float sc = c.y, sh = 0.0f;
#endif
  apply_run(x + off, y + off, n, sc, sh, vec4);
#endif
}

// variant=block_per_segment: one block per segment (grid-stride), statistics then normalization.
extern "C" __global__ void __launch_bounds__(1024) kbrl_norm_segment(const float* __restrict__ x, float* __restrict__ y KBRL_WB,
                                             i64 S, i64 P, i64 Lp, i64 seg_stride,
                                             i64 piece_stride, i64 cs_mod, i64 cs_mul, i64 cp_mul,
                                             float eps, int vec4) {
  __shared__ DStat red[32];
  __shared__ float2 bc;
  for (i64 s = blockIdx.x; s < S; s += gridDim.x) {
    TStat t = {0.0f, 0.0f, 0.0f};
    for (i64 p = 0; p < P; ++p) t = stats_run(x + s * seg_stride + p * piece_stride, Lp, t, vec4);
    const DStat d = block_reduce(DStat{t.n, t.a, t.b}, red);
    if (threadIdx.x == 0) bc = coef_of(d, eps);
    __syncthreads();
    const float2 c = bc;
    for (i64 p = 0; p < P; ++p)
      apply_chunk(x, y KBRL_WB_PASS, s, p, 0, Lp, Lp, seg_stride, piece_stride, cs_mod, cs_mul,
                  cp_mul, c, vec4);
    __syncthreads();  // bc is rewritten for the next segment
  }
}

// Chunk i of the split plans: chunk q of piece p of segment s (Q chunks of cl elements per piece).
__device__ __forceinline__ void chunk_of(i64 i, i64 P, i64 Q, i64& s, i64& p, i64& q) {
  q = i % Q;
  const i64 r = i / Q;
  p = r % P;
  s = r / P;
}

__device__ __forceinline__ i64 chunk_len(i64 q, i64 Lp, i64 cl) {
  const i64 rest = Lp - q * cl;
  return rest < cl ? rest : cl;
}

// Split plans, launch 1: each block's chunk statistic to part[i] (the count follows from the
// geometry).
extern "C" __global__ void __launch_bounds__(1024) kbrl_norm_stats(const float* __restrict__ x, float2* __restrict__ part,
                                           i64 S, i64 P, i64 Q, i64 Lp, i64 cl, i64 seg_stride,
                                           i64 piece_stride, int vec4) {
  __shared__ DStat red[32];
  const i64 total = S * P * Q;
  for (i64 i = blockIdx.x; i < total; i += gridDim.x) {
    i64 s, p, q;
    chunk_of(i, P, Q, s, p, q);
    const i64 lo = q * cl;
    const TStat t = stats_run(x + s * seg_stride + p * piece_stride + lo, chunk_len(q, Lp, cl),
                              TStat{0.0f, 0.0f, 0.0f}, vec4);
    const DStat d = block_reduce(DStat{t.n, t.a, t.b}, red);
    if (threadIdx.x == 0) part[i] = make_float2((float)d.a, (float)d.b);
  }
}

// Merges segment s's P * Q chunk statistics in a fixed order (fp64) into its coefficients; every
// thread of the block gets them.
__device__ __noinline__ float2 segment_coef(const float2* __restrict__ part, i64 s, i64 P, i64 Q, i64 Lp, i64 cl,
                               float eps, DStat* red, float2* bc) {
  const i64 m = P * Q;
  const float2* ps = part + s * m;
  DStat acc = {0.0, 0.0, 0.0};
  for (i64 k = threadIdx.x; k < m; k += blockDim.x) {
    const float2 v = ps[k];
    acc = d_merge(acc, DStat{(double)chunk_len(k % Q, Lp, cl), (double)v.x, (double)v.y});
  }
  const DStat d = block_reduce(acc, red);
  if (threadIdx.x == 0) *bc = coef_of(d, eps);
  __syncthreads();
  const float2 c = *bc;
  __syncthreads();
  return c;
}

// variant=split, launch 2: one block per segment, coefficients to coef[s].
extern "C" __global__ void __launch_bounds__(1024) kbrl_norm_finalize(const float2* __restrict__ part, float2* __restrict__ coef,
                                              i64 S, i64 P, i64 Q, i64 Lp, i64 cl, float eps) {
  __shared__ DStat red[32];
  __shared__ float2 bc;
  for (i64 s = blockIdx.x; s < S; s += gridDim.x) {
    const float2 c = segment_coef(part, s, P, Q, Lp, cl, eps, red, &bc);
    if (threadIdx.x == 0) coef[s] = c;
  }
}

// variant=split, launch 3: normalizes each chunk with its segment's coefficients.
extern "C" __global__ void __launch_bounds__(1024) kbrl_norm_apply(const float* __restrict__ x, float* __restrict__ y KBRL_WB,
                                           const float2* __restrict__ coef, i64 S, i64 P, i64 Q,
                                           i64 Lp, i64 cl, i64 seg_stride, i64 piece_stride,
                                           i64 cs_mod, i64 cs_mul, i64 cp_mul, int vec4) {
  const i64 total = S * P * Q;
  for (i64 i = blockIdx.x; i < total; i += gridDim.x) {
    i64 s, p, q;
    chunk_of(i, P, Q, s, p, q);
    apply_chunk(x, y KBRL_WB_PASS, s, p, q * cl, chunk_len(q, Lp, cl), Lp, seg_stride,
                piece_stride, cs_mod, cs_mul, cp_mul, coef[s], vec4);
  }
}

// variant=split_inline, launch 2: every block merges its segment's chunk statistics itself (the
// same order in every block), then normalizes its chunk.
extern "C" __global__ void __launch_bounds__(1024) kbrl_norm_apply_inline(const float* __restrict__ x, float* __restrict__ y KBRL_WB,
                                                  const float2* __restrict__ part, i64 S, i64 P,
                                                  i64 Q, i64 Lp, i64 cl, i64 seg_stride,
                                                  i64 piece_stride, i64 cs_mod, i64 cs_mul,
                                                  i64 cp_mul, float eps, int vec4) {
  __shared__ DStat red[32];
  __shared__ float2 bc;
  const i64 total = S * P * Q;
  for (i64 i = blockIdx.x; i < total; i += gridDim.x) {
    i64 s, p, q;
    chunk_of(i, P, Q, s, p, q);
    const float2 c = segment_coef(part, s, P, Q, Lp, cl, eps, red, &bc);
    apply_chunk(x, y KBRL_WB_PASS, s, p, q * cl, chunk_len(q, Lp, cl), Lp, seg_stride,
                piece_stride, cs_mod, cs_mul, cp_mul, c, vec4);
  }
}
)KBRL"
    ;

const char* const kRmsDevice =
R"KBRL(
typedef long long i64;
typedef unsigned long long u64;

#if KBRL_STREAM
#define LD_LAST(p) __ldcs(p)
#define ST(p, v) __stcs((p), (v))
#else
#define LD_LAST(p) (*(p))
#define ST(p, v) (*(p) = (v))
#endif

// v[0, VEC) = p[0, VEC): one vector access when `full`, else the first `valid` elements.
template <bool kLast>
__device__ __forceinline__ void load_v(const float* __restrict__ p, float (&v)[KBRL_VEC], bool full,
                                       i64 valid) {
  if (full) {
#if KBRL_VEC == 4
    const float4 q = kLast ? LD_LAST(reinterpret_cast<const float4*>(p))
                           : *reinterpret_cast<const float4*>(p);
    v[0] = q.x; v[1] = q.y; v[2] = q.z; v[3] = q.w;
#elif KBRL_VEC == 2
    const float2 q = kLast ? LD_LAST(reinterpret_cast<const float2*>(p))
                           : *reinterpret_cast<const float2*>(p);
    v[0] = q.x; v[1] = q.y;
#else
    v[0] = kLast ? LD_LAST(p) : *p;
#endif
  } else {
#pragma unroll
    for (int k = 0; k < KBRL_VEC; ++k) v[k] = k < valid ? (kLast ? LD_LAST(p + k) : p[k]) : 0.0f;
  }
}

__device__ __forceinline__ void store_v(float* __restrict__ p, const float (&v)[KBRL_VEC], bool full,
                                        i64 valid) {
  if (full) {
#if KBRL_VEC == 4
    ST(reinterpret_cast<float4*>(p), make_float4(v[0], v[1], v[2], v[3]));
#elif KBRL_VEC == 2
    ST(reinterpret_cast<float2*>(p), make_float2(v[0], v[1]));
#else
    ST(p, v[0]);
#endif
  } else {
#pragma unroll
    for (int k = 0; k < KBRL_VEC; ++k)
      if (k < valid) ST(p + k, v[k]);
  }
}

// 1 / sqrt(mean of squares + eps)
__device__ __forceinline__ float k_rstd(float sumsq, float eps) {
#if KBRL_FAST
  return rsqrtf(sumsq * (1.0f / (float)kC) + eps);
#else
  return 1.0f / sqrtf(sumsq / (float)kC + eps);
#endif
}

__device__ __forceinline__ float k_scale(float v, float r) {
#if KBRL_HALF
  return __half2float(__hmul(__float2half(v), __float2half(r)));
#else
  return v * r;
#endif
}

// x, y: [N, kC, HW]. Each thread normalizes VEC consecutive positions of one image over the kC
// channels (stride HW): a warp's accesses are contiguous along HW.
extern "C" __global__ void __launch_bounds__(KBRL_MAX_THREADS) kbrl_rms_norm(const float* __restrict__ x, float* __restrict__ y, i64 N,
                                         i64 HW, float eps) {
  const i64 nv = (HW + KBRL_VEC - 1) / KBRL_VEC;
  const i64 total = N * nv;
  const bool vec_ok = HW % KBRL_VEC == 0 && (((u64)x | (u64)y) & (4u * KBRL_VEC - 1u)) == 0;
  for (i64 t = (i64)blockIdx.x * blockDim.x + threadIdx.x; t < total;
       t += (i64)gridDim.x * blockDim.x) {
    const i64 n = t / nv;
    const i64 h0 = (t - n * nv) * KBRL_VEC;
    const i64 valid = HW - h0 < KBRL_VEC ? HW - h0 : KBRL_VEC;
    const i64 base = n * kC * HW + h0;
    const float* in = x + base;
    float* out = y + base;
    float acc[KBRL_VEC];
#pragma unroll
    for (int k = 0; k < KBRL_VEC; ++k) acc[k] = 0.0f;
#if KBRL_REGISTERS
    // variant=registers: all kC values stay in registers between the two passes.
    float v[kC][KBRL_VEC];
#pragma unroll
    for (int c = 0; c < kC; ++c) load_v<true>(in + c * HW, v[c], vec_ok, valid);
#pragma unroll
    for (int c = 0; c < kC; ++c)
#pragma unroll
      for (int k = 0; k < KBRL_VEC; ++k) acc[k] = fmaf(v[c][k], v[c][k], acc[k]);
#else
#pragma unroll KBRL_UNROLL
    for (int c = 0; c < kC; ++c) {
      float v[KBRL_VEC];
      load_v<false>(in + c * HW, v, vec_ok, valid);
#pragma unroll
      for (int k = 0; k < KBRL_VEC; ++k) acc[k] = fmaf(v[k], v[k], acc[k]);
    }
#endif
    float r[KBRL_VEC];
#pragma unroll
    for (int k = 0; k < KBRL_VEC; ++k) r[k] = k_rstd(acc[k], eps);
#if KBRL_REGISTERS
#pragma unroll
    for (int c = 0; c < kC; ++c) {
      float o[KBRL_VEC];
#pragma unroll
      for (int k = 0; k < KBRL_VEC; ++k) o[k] = k_scale(v[c][k], r[k]);
      store_v(out + c * HW, o, vec_ok, valid);
    }
#else
    // variant=two_pass: x is read again for the normalizing pass.
#pragma unroll KBRL_UNROLL
    for (int c = 0; c < kC; ++c) {
      float v[KBRL_VEC], o[KBRL_VEC];
      load_v<true>(in + c * HW, v, vec_ok, valid);
#pragma unroll
      for (int k = 0; k < KBRL_VEC; ++k) o[k] = k_scale(v[k], r[k]);
      store_v(out + c * HW, o, vec_ok, valid);
    }
#endif
  }
}
)KBRL"
    ;

std::string common_defines(const Config& c) {
  const bool half = c.at("precision") == "fp16_compute";
  const bool fast = c.at("fast_math") == "on";
  std::string s = fmt::format(
      "#define KBRL_STREAM {}  // cache_hint={}\n"
      "#define KBRL_HALF {}    // precision={}{}\n"
      "#define KBRL_FAST {}    // fast_math={}{}\n",
      c.at("cache_hint") == "streaming" ? 1 : 0, c.at("cache_hint"), half ? 1 : 0,
      c.at("precision"), half ? " (unsafe: the normalizing arithmetic runs on __half)" : "",
      fast ? 1 : 0, c.at("fast_math"),
      fast ? " (unsafe: rsqrtf and approximate division under --use_fast_math)" : "");
  if (half) s += "#include <cuda_fp16.h>\n";
  return s;
}

std::string planar_source(const NormTask& t, const Config& c) {
  int kind = 0;
  const char* what = "";
  switch (t.kind) {
    case Kind::moments:
      kind = c.at("stats") == "welford" ? 0 : 1;
      what = kind == 0 ? "mean and biased variance by Welford's updates and Chan's merges"
                       : "mean and biased variance from fp32 sums and sums of squares";
      break;
    case Kind::sumsq:
      kind = 2;
      what = "y = x / sqrt(sum of x^2)";
      break;
    case Kind::sumabs:
      kind = 3;
      what = "y = x / mean(|x|)";
      break;
    case Kind::rms:
      throw InternalError("norm: task 36 has its own kernel");
  }
  const int affine = t.affine == Affine::none ? 0 : t.affine == Affine::per_piece ? 1 : 2;
  std::string s = fmt::format(
      "// kbrl norm generator: a statistic per segment (S segments of P pieces of Lp contiguous\n"
      "// elements), then y normalized with it: {}.\n"
      "// Thread statistics in fp32, merged in fp64 in a fixed order (deterministic). Affine: {}.\n"
      "// Kernels: kbrl_norm_segment (variant=block_per_segment); kbrl_norm_stats, then\n"
      "// kbrl_norm_finalize and kbrl_norm_apply (split) or kbrl_norm_apply_inline (split_inline).\n"
      "// vec4 (an argument): float4 accesses over each run's 16-byte-aligned body.\n",
      what,
      affine == 0   ? "none"
      : affine == 1 ? "one weight/bias per piece (channel)"
                    : "element-wise weight/bias over the segment");
  s += fmt::format("#define KBRL_KIND {}\n#define KBRL_AFFINE {}\n", kind, affine);
  s += common_defines(c);
  s += kPlanarDevice;
  return s;
}

std::string rms_source(const Config& c) {
  const bool registers = c.at("variant") == "registers";
  std::string s =
      "// kbrl norm generator: RMSNorm over dim 1 of x:[N, 64, H, W] (stride H*W):\n"
      "// y = x / sqrt(mean over the 64 channels of x^2 + eps); one thread per VEC positions.\n";
  // registers with vec=2 holds 128 values per thread: at most 256 threads per block.
  const int max_threads = registers && c.integer("vec") == 2 ? 256 : 512;
  s += fmt::format(
      "// variant={} unroll={}\n#define KBRL_REGISTERS {}\n#define KBRL_VEC {}\n"
      "#define KBRL_MAX_THREADS {}\n",
      c.at("variant"), c.at("unroll"), registers ? 1 : 0, c.at("vec"), max_threads);
  s += common_defines(c);
  s += fmt::format("constexpr int kC = {};\n", kChannels);
  std::string body = kRmsDevice;
  replace_all(body, "KBRL_UNROLL", c.at("unroll"));
  s += body;
  return s;
}

std::vector<KernelArg> with_affine(const NormTask& t, std::vector<KernelArg> args) {
  // x, y [, weight, bias]
  if (t.affine != Affine::none) {
    args.push_back(KernelArg{ArgKind::parameter, 0});
    args.push_back(KernelArg{ArgKind::parameter, 1});
  }
  return args;
}

Candidate planar_candidate(const NormTask& t, const TaskSpec& task, const Config& c) {
  const Geometry g = geometry_of(t, task);
  const int64_t block = c.integer("block");
  const int64_t vec = c.integer("vec");
  const std::string variant = c.at("variant");
  const double eps = t.kind == Kind::moments ? kEps : 0.0;
  Candidate cand;
  cand.task_id = task.id;
  cand.source = planar_source(t, c);
  const KernelArg x{ArgKind::input, 0}, y{ArgKind::output, 0};
  const uint32_t b32 = static_cast<uint32_t>(block);
  const KernelArg vec4 = i32_arg(vec == 4 ? 1 : 0);
  if (variant == "block_per_segment") {
    Launch l;
    l.kernel = "kbrl_norm_segment";
    l.grid = {static_cast<uint32_t>(std::min(g.S, kMaxGrid)), 1, 1};
    l.block = {b32, 1, 1};
    l.args = with_affine(t, {x, y});
    for (int64_t v : {g.S, g.P, g.Lp, g.seg_stride, g.piece_stride, g.cs_mod, g.cs_mul, g.cp_mul})
      l.args.push_back(i64_arg(v));
    l.args.push_back(f32_arg(eps));
    l.args.push_back(vec4);
    cand.launches.push_back(std::move(l));
  } else {
    const int64_t cl = std::min(g.Lp, block * vec * c.integer("items_per_thread"));
    const int64_t Q = (g.Lp + cl - 1) / cl;
    const int64_t total = g.S * g.P * Q;
    KBRL_CHECK_INPUT(total <= kMaxGrid, "task {}: {} chunks exceed CUDA's grid limit", task.id,
                     total);
    const uint32_t grid = static_cast<uint32_t>(total);
    cand.scratch.push_back({"chunk_stats", total * 8});
    Launch stats;
    stats.kernel = "kbrl_norm_stats";
    stats.grid = {grid, 1, 1};
    stats.block = {b32, 1, 1};
    stats.args = {x, KernelArg{ArgKind::scratch, 0}};
    for (int64_t v : {g.S, g.P, Q, g.Lp, cl, g.seg_stride, g.piece_stride})
      stats.args.push_back(i64_arg(v));
    stats.args.push_back(vec4);
    cand.launches.push_back(std::move(stats));
    Launch apply;
    apply.grid = {grid, 1, 1};
    apply.block = {b32, 1, 1};
    apply.args = with_affine(t, {x, y});
    if (variant == "split") {
      cand.scratch.push_back({"segment_coefficients", g.S * 8});
      Launch fin;
      fin.kernel = "kbrl_norm_finalize";
      fin.grid = {static_cast<uint32_t>(std::min(g.S, kMaxGrid)), 1, 1};
      fin.block = {b32, 1, 1};
      fin.args = {KernelArg{ArgKind::scratch, 0}, KernelArg{ArgKind::scratch, 1}};
      for (int64_t v : {g.S, g.P, Q, g.Lp, cl}) fin.args.push_back(i64_arg(v));
      fin.args.push_back(f32_arg(eps));
      cand.launches.push_back(std::move(fin));
      apply.kernel = "kbrl_norm_apply";
      apply.args.push_back(KernelArg{ArgKind::scratch, 1});
    } else {
      apply.kernel = "kbrl_norm_apply_inline";
      apply.args.push_back(KernelArg{ArgKind::scratch, 0});
    }
    for (int64_t v : {g.S, g.P, Q, g.Lp, cl, g.seg_stride, g.piece_stride, g.cs_mod, g.cs_mul,
                      g.cp_mul})
      apply.args.push_back(i64_arg(v));
    if (variant == "split_inline") apply.args.push_back(f32_arg(eps));
    apply.args.push_back(vec4);
    cand.launches.push_back(std::move(apply));
  }
  add_fast_math_option(cand, c);
  return cand;
}

Candidate rms_candidate(const TaskSpec& task, const Config& c) {
  const auto& shape = task.inputs[0].shape;
  KBRL_CHECK_INPUT(shape.size() == 4 && shape[1] == kChannels,
                   "task 36: expected x:[N,{},H,W]", kChannels);
  const int64_t n = shape[0], hw = shape[2] * shape[3];
  const int64_t block = c.integer("block"), vec = c.integer("vec");
  const int64_t threads = n * ((hw + vec - 1) / vec);
  const int64_t grid = std::min((threads + block - 1) / block, kMaxGrid);
  Candidate cand;
  cand.task_id = task.id;
  cand.source = rms_source(c);
  Launch l;
  l.kernel = "kbrl_rms_norm";
  l.grid = {static_cast<uint32_t>(grid), 1, 1};
  l.block = {static_cast<uint32_t>(block), 1, 1};
  l.args = {KernelArg{ArgKind::input, 0}, KernelArg{ArgKind::output, 0}, i64_arg(n), i64_arg(hw),
            f32_arg(kEps)};
  cand.launches.push_back(std::move(l));
  add_fast_math_option(cand, c);
  return cand;
}

void add_precision_knobs(KnobSpace& space) {
  space
      .add_knob({"cache_hint", {"none", "streaming"},
                 "streaming: the last read of x with __ldcs and y stored with __stcs"})
      .add_knob({"precision", {"fp32", "fp16_compute"},
                 "fp16_compute (unsafe): the normalizing arithmetic runs on __half (statistics "
                 "stay fp32/fp64)"})
      .add_knob({"fast_math", {"off", "on"},
                 "on (unsafe): --use_fast_math, rsqrtf and approximate division"});
}

KnobSpace planar_space(const NormTask& t) {
  KnobSpace space;
  space.add_knob({"variant", {"block_per_segment", "split", "split_inline"},
                  "block_per_segment: one block per segment, statistics then normalization in one "
                  "launch; split: chunk statistics to scratch, a finalize launch (one block per "
                  "segment) and a normalizing launch; split_inline: chunk statistics, then every "
                  "normalizing block merges its segment's chunk statistics itself"});
  if (t.kind == Kind::moments)
    space.add_knob({"stats", {"welford", "sum_sumsq"},
                    "welford: per-thread Welford updates (4 values at a time with vec=4) and "
                    "Chan merges; sum_sumsq: fp32 sums and sums of squares, var = E[x^2] - mean^2 "
                    "(safe for data of moderate mean/std ratio)"});
  space.add_knob({"block", {"256", "512", "1024"}, "threads per block"})
      .add_knob({"vec", {"1", "4"},
                 "floats per access: float4 over the 16-byte-aligned body of every run (scalar "
                 "head and tail), or element by element (a kernel argument)"})
      .add_knob({"items_per_thread", {"segment", "8", "32", "128"},
                 "split plans: a block covers block * vec * items_per_thread elements of a piece "
                 "(a chunk); segment: the whole segment (block_per_segment)"});
  add_precision_knobs(space);
  const bool bps = t.block_per_segment, inl = t.split_inline;
  space.add_constraint({fmt::format("variant in {{{}split{}}} for task {}",
                                    bps ? "block_per_segment, " : "", inl ? ", split_inline" : "",
                                    t.id),
                        {"variant"},
                        [bps, inl](const Config& c) {
                          const std::string& v = c.at("variant");
                          return v == "split" || (v == "block_per_segment" && bps) ||
                                 (v == "split_inline" && inl);
                        }});
  space.add_constraint({"items_per_thread=segment exactly when variant=block_per_segment",
                        {"variant", "items_per_thread"},
                        [](const Config& c) {
                          return (c.at("variant") == "block_per_segment") ==
                                 (c.at("items_per_thread") == "segment");
                        }});
  space.add_constraint(fast_math_needs_fp32());
  return space;
}

KnobSpace rms_space() {
  KnobSpace space;
  space.add_knob({"variant", {"registers", "two_pass"},
                  "registers: the 64 channel values stay in registers between the sum of squares "
                  "and the normalizing pass (x read once); two_pass: x read again"})
      .add_knob({"block", {"128", "256", "512"}, "threads per block"})
      .add_knob({"vec", {"1", "2", "4"},
                 "consecutive H*W positions per thread (float2/float4 accesses when aligned)"})
      .add_knob({"unroll", {"8", "64"},
                 "channels loaded before any is used (two_pass); registers holds all 64"});
  add_precision_knobs(space);
  space.add_constraint({"variant=registers requires vec <= 2 and unroll=64 (64 * vec registers)",
                        {"variant", "vec", "unroll"},
                        [](const Config& c) {
                          return c.at("variant") == "two_pass" ||
                                 (c.integer("vec") <= 2 && c.at("unroll") == "64");
                        }});
  space.add_constraint({"variant=registers with vec=2 requires block <= 256 (128 values held per "
                        "thread)",
                        {"variant", "block", "vec"},
                        [](const Config& c) {
                          return c.at("variant") == "two_pass" || c.integer("vec") == 1 ||
                                 c.integer("block") <= 256;
                        }});
  space.add_constraint(fast_math_needs_fp32());
  return space;
}

class NormGenerator final : public Generator {
 public:
  std::string_view name() const override { return "norm"; }
  bool covers(int task_id) const override { return find_task(task_id) != nullptr; }

  KnobSpace space(const TaskSpec& task) const override {
    const NormTask& t = task_of(task);
    return t.kind == Kind::rms ? rms_space() : planar_space(t);
  }

  Candidate generate(const TaskSpec& task, const Config& given) const override {
    const NormTask& t = task_of(task);
    const Config config = checked_config(space(task), given);
    return t.kind == Kind::rms ? rms_candidate(task, config) : planar_candidate(t, task, config);
  }

  Config expert(const TaskSpec& task) const override {
    const NormTask& t = task_of(task);
    if (t.kind == Kind::rms)
      // x read once: the 64 channel values of a position stay in registers; consecutive
      // positions per warp make every channel's access one 128-byte line.
      return Config{{"variant", "registers"}, {"block", "256"},         {"vec", "1"},
                    {"unroll", "64"},         {"cache_hint", "streaming"}, {"precision", "fp32"},
                    {"fast_math", "off"}};
    // Rows (38, 39) and planes (34): one block per segment, one launch, and for 256 KiB rows the
    // second read mostly from L2 (1024 threads: few rows in flight). Few or large segments (33,
    // 35, 37, 40): 64K-element chunks (512 threads x float4 x 32) for parallelism, statistics
    // merged by a finalize launch.
    const bool bps = t.id == 34 || t.id == 38 || t.id == 39;
    Config c;
    c.set("variant", bps ? "block_per_segment" : "split");
    if (t.kind == Kind::moments) c.set("stats", "welford");
    c.set("block", t.id == 38 || t.id == 39 ? "1024" : "512");
    c.set("vec", "4");
    c.set("items_per_thread", bps ? "segment" : "32");
    c.set("cache_hint", "streaming");
    c.set("precision", "fp32");
    c.set("fast_math", "off");
    return c;
  }
};

}  // namespace

const Generator& norm_generator() {
  static const NormGenerator generator;
  return generator;
}

}  // namespace kbrl
