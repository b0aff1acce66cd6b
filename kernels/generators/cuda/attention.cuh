// The attention generator's device code (attention.cpp, task 97): softmax(Q K^T * scale) V in
// three launches over a scratch score matrix. A unit is `header`, the notes of the unsafe knobs
// (fp16_compute_note, fast_math_note) where set, the #define / constexpr block of the
// configuration, the k_exp and k_div helpers (snippets.cuh), then `prelude`, `gemm`, `softmax`.
//   header             the unit's opening comment (the knob values filled in)
//   fp16_compute_note  <cuda_fp16.h> and the precision=fp16_compute comment
//   fast_math_note     the fast_math=on comment
//   prelude            i64, KBRL_NEG_INF, the shared-memory element type SmemT (float or __half)
//                      and the block's thread and load counts
//   gemm               gemm_block (the batched tiled SIMT GEMM) and its two launches,
//                      kbrl_attn_scores (scale * Q K^T) and kbrl_attn_output (P V)
//   softmax            the online (max, sum) state and the row softmax kernels
//                      kbrl_attn_softmax_warp and kbrl_attn_softmax_block
//@section header
// kbrl attention generator: softmax(Q K^T * scale) V in three launches over a scratch
// score matrix. tile_m=@TILE_M@ tile_n=@TILE_N@ tile_k=@TILE_K@ stages=@STAGES@ precision=@PRECISION@ fast_math=@FAST_MATH@
//@section fp16_compute_note
#include <cuda_fp16.h>
// precision=fp16_compute (unsafe): GEMM tiles rounded to __half in shared memory.
//@section fast_math_note
// fast_math=on (unsafe): __expf/__fdividef and --use_fast_math.
//@section prelude

typedef long long i64;
#define KBRL_NEG_INF (__int_as_float(0xff800000))

#if KBRL_HALF
typedef __half SmemT;
__device__ __forceinline__ SmemT to_smem(float v) { return __float2half(v); }
__device__ __forceinline__ float from_smem(SmemT v) { return __half2float(v); }
#else
typedef float SmemT;
__device__ __forceinline__ SmemT to_smem(float v) { return v; }
__device__ __forceinline__ float from_smem(SmemT v) { return v; }
#endif

constexpr int kThreads = (kBM / kTM) * (kBN / kTN);
constexpr int kAF = kBM * kBK / 4 / kThreads;  // float4 of the A tile per thread
constexpr int kBF = kBK * kBN / 4 / kThreads;  // float4 of the B tile per thread
static_assert(kAF >= 1 && kBF >= 1, "tile too small for the block");
//@section gemm

// C = alpha * A B for one batch entry: A [M][K] row-major; B [N][K] (kBT: C = A B^T) or [K][N].
// Block tile kBM x kBN, k-steps of kBK through shared memory (kStages buffers), a kTM x kTN
// register tile per thread, fp32 accumulation in k order. Tails in M, N and K are zero-filled
// (K and N multiples of 4).
template <bool kBT>
__device__ __forceinline__ void gemm_block(const float* __restrict__ A, const float* __restrict__ B,
                                           float* __restrict__ C, i64 M, i64 N, i64 K,
                                           float alpha) {
  __shared__ __align__(16) SmemT As[kStages][kBK][kBM];
  __shared__ __align__(16) SmemT Bs[kStages][kBK][kBN];
  const int t = threadIdx.x;
  const int tx = t % (kBN / kTN), ty = t / (kBN / kTN);
  const i64 m0 = (i64)blockIdx.y * kBM, n0 = (i64)blockIdx.x * kBN;
  float4 ra[kAF], rb[kBF];

  auto load = [&](i64 k0) {
#pragma unroll
    for (int i = 0; i < kAF; ++i) {
      const int idx = t + i * kThreads;
      const int r = idx / (kBK / 4), kq = idx % (kBK / 4);
      const i64 m = m0 + r, k = k0 + 4 * kq;
      ra[i] = (m < M && k < K) ? *reinterpret_cast<const float4*>(A + m * K + k)
                               : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
#pragma unroll
    for (int i = 0; i < kBF; ++i) {
      const int idx = t + i * kThreads;
      if (kBT) {
        const int r = idx / (kBK / 4), kq = idx % (kBK / 4);
        const i64 n = n0 + r, k = k0 + 4 * kq;
        rb[i] = (n < N && k < K) ? *reinterpret_cast<const float4*>(B + n * K + k)
                                 : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      } else {
        const int kr = idx / (kBN / 4), nq = idx % (kBN / 4);
        const i64 k = k0 + kr, n = n0 + 4 * nq;
        rb[i] = (k < K && n < N) ? *reinterpret_cast<const float4*>(B + k * N + n)
                                 : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      }
    }
  };
  auto store = [&](int buf) {
#pragma unroll
    for (int i = 0; i < kAF; ++i) {
      const int idx = t + i * kThreads;
      const int r = idx / (kBK / 4), kq = idx % (kBK / 4);
      As[buf][4 * kq + 0][r] = to_smem(ra[i].x);
      As[buf][4 * kq + 1][r] = to_smem(ra[i].y);
      As[buf][4 * kq + 2][r] = to_smem(ra[i].z);
      As[buf][4 * kq + 3][r] = to_smem(ra[i].w);
    }
#pragma unroll
    for (int i = 0; i < kBF; ++i) {
      const int idx = t + i * kThreads;
      if (kBT) {
        const int r = idx / (kBK / 4), kq = idx % (kBK / 4);
        Bs[buf][4 * kq + 0][r] = to_smem(rb[i].x);
        Bs[buf][4 * kq + 1][r] = to_smem(rb[i].y);
        Bs[buf][4 * kq + 2][r] = to_smem(rb[i].z);
        Bs[buf][4 * kq + 3][r] = to_smem(rb[i].w);
      } else {
        const int kr = idx / (kBN / 4), nq = idx % (kBN / 4);
        Bs[buf][kr][4 * nq + 0] = to_smem(rb[i].x);
        Bs[buf][kr][4 * nq + 1] = to_smem(rb[i].y);
        Bs[buf][kr][4 * nq + 2] = to_smem(rb[i].z);
        Bs[buf][kr][4 * nq + 3] = to_smem(rb[i].w);
      }
    }
  };

  float acc[kTM][kTN];
#pragma unroll
  for (int i = 0; i < kTM; ++i)
#pragma unroll
    for (int j = 0; j < kTN; ++j) acc[i][j] = 0.0f;

  auto compute = [&](int buf) {
#pragma unroll
    for (int k = 0; k < kBK; ++k) {
      float a[kTM], b[kTN];
#pragma unroll
      for (int i = 0; i < kTM; ++i) a[i] = from_smem(As[buf][k][ty * kTM + i]);
#pragma unroll
      for (int j = 0; j < kTN; ++j) b[j] = from_smem(Bs[buf][k][tx * kTN + j]);
#pragma unroll
      for (int i = 0; i < kTM; ++i)
#pragma unroll
        for (int j = 0; j < kTN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
  };

  const i64 nk = (K + kBK - 1) / kBK;
#if KBRL_STAGES == 2
  // Double buffering: the next k-step's global loads are in flight during this step's math.
  load(0);
  store(0);
  __syncthreads();
  for (i64 kt = 0; kt < nk; ++kt) {
    const int cur = (int)(kt & 1);
    if (kt + 1 < nk) load((kt + 1) * kBK);
    compute(cur);
    if (kt + 1 < nk) store(cur ^ 1);
    __syncthreads();
  }
#else
  for (i64 kt = 0; kt < nk; ++kt) {
    load(kt * kBK);
    store(0);
    __syncthreads();
    compute(0);
    __syncthreads();
  }
#endif

#pragma unroll
  for (int i = 0; i < kTM; ++i) {
    const i64 m = m0 + ty * kTM + i;
    if (m >= M) continue;
#pragma unroll
    for (int j = 0; j < kTN; j += 4) {
      const i64 n = n0 + tx * kTN + j;
      if (n < N)
        *reinterpret_cast<float4*>(C + m * N + n) =
            make_float4(alpha * acc[i][j], alpha * acc[i][j + 1], alpha * acc[i][j + 2],
                        alpha * acc[i][j + 3]);
    }
  }
}

// Launch 1: scores[z] = scale * Q[z] K[z]^T, z = blockIdx.z over batch * heads.
extern "C" __global__ void __launch_bounds__(kThreads)
kbrl_attn_scores(const float* __restrict__ q, const float* __restrict__ k, float* __restrict__ s,
                 i64 L, i64 S, i64 D, float scale) {
  const i64 z = blockIdx.z;
  gemm_block<true>(q + z * L * D, k + z * S * D, s + z * L * S, L, S, D, scale);
}

// Launch 3: out[z] = P[z] V[z].
extern "C" __global__ void __launch_bounds__(kThreads)
kbrl_attn_output(const float* __restrict__ p, const float* __restrict__ v, float* __restrict__ o,
                 i64 L, i64 S, i64 D) {
  const i64 z = blockIdx.z;
  gemm_block<false>(p + z * L * S, v + z * S * D, o + z * L * D, L, D, S, 1.0f);
}
//@section softmax


// An online softmax state: the maximum and the sum of exp(v - max).
struct MaxSum { float m, s; };

__device__ __forceinline__ MaxSum ms_add(MaxSum st, float v) {
  if (v > st.m) return MaxSum{v, st.s * k_exp(st.m - v) + 1.0f};
  return MaxSum{st.m, st.s + k_exp(v - st.m)};
}

__device__ __forceinline__ MaxSum ms_merge(MaxSum a, MaxSum b) {
  const float m = a.m > b.m ? a.m : b.m;
  if (m == KBRL_NEG_INF) return MaxSum{m, 0.0f};
  return MaxSum{m, a.s * k_exp(a.m - m) + b.s * k_exp(b.m - m)};
}

__device__ __forceinline__ MaxSum ms_warp(MaxSum st) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
    st = ms_merge(st, MaxSum{__shfl_xor_sync(0xffffffffu, st.m, o),
                             __shfl_xor_sync(0xffffffffu, st.s, o)});
  return st;
}

// Launch 2 (variant=warp_per_row): one warp per row of the scores, in place.
extern "C" __global__ void kbrl_attn_softmax_warp(float* __restrict__ s, i64 rows, i64 cols) {
  const int lane = threadIdx.x & 31;
  const i64 warps = (i64)gridDim.x * (blockDim.x >> 5);
  for (i64 r = (i64)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); r < rows; r += warps) {
    float* row = s + r * cols;
    MaxSum st = {KBRL_NEG_INF, 0.0f};
    for (i64 c = lane; c < cols; c += 32) st = ms_add(st, row[c]);
    st = ms_warp(st);
    for (i64 c = lane; c < cols; c += 32) row[c] = k_div(k_exp(row[c] - st.m), st.s);
  }
}

// Launch 2 (variant=block_per_row): one block per row, merged through shared memory.
extern "C" __global__ void kbrl_attn_softmax_block(float* __restrict__ s, i64 rows, i64 cols) {
  __shared__ MaxSum part[32];
  __shared__ MaxSum total;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (i64 r = blockIdx.x; r < rows; r += gridDim.x) {
    float* row = s + r * cols;
    MaxSum st = {KBRL_NEG_INF, 0.0f};
    for (i64 c = threadIdx.x; c < cols; c += blockDim.x) st = ms_add(st, row[c]);
    st = ms_warp(st);
    if (lane == 0) part[warp] = st;
    __syncthreads();
    if (warp == 0) {
      st = lane < (int)(blockDim.x >> 5) ? part[lane] : MaxSum{KBRL_NEG_INF, 0.0f};
      st = ms_warp(st);
      if (lane == 0) total = st;
    }
    __syncthreads();
    st = total;
    for (i64 c = threadIdx.x; c < cols; c += blockDim.x) row[c] = k_div(k_exp(row[c] - st.m), st.s);
    __syncthreads();
  }
}
