// The fused CUDA kernels of BatchDecoder's step (decoder_kernels.h). Element type T: float or
// __nv_bfloat16; arithmetic in float32, rounded to T where the torch-ops step rounds.
#include "decoder_kernels.h"
#include "kernel_math.cuh"

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <stdexcept>
#include <type_traits>
#include <string>

namespace kbrl::lm::kernels {
namespace {

using namespace math;

// Eight consecutive elements (16-byte aligned for bf16, 32 for float) as floats.
__device__ __forceinline__ void load8(const float* p, float (&v)[8]) {
  const float4 a = *reinterpret_cast<const float4*>(p), b = *reinterpret_cast<const float4*>(p + 4);
  v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
}
__device__ __forceinline__ void load8(const __nv_bfloat16* p, float (&v)[8]) {
  const uint4 u = *reinterpret_cast<const uint4*>(p);
  const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&u);
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const float2 f = __bfloat1622float2(h[k]);
    v[2 * k] = f.x;
    v[2 * k + 1] = f.y;
  }
}



// ---- add + RMSNorm: one block per row ----

template <class T>
__global__ void add_rmsnorm_kernel(T* x, const T* delta, const float* w, T* y, int hidden, float eps) {
  const int64_t row = blockIdx.x;
  T* xr = x + row * hidden;
  float local = 0;
  for (int c = threadIdx.x; c < hidden; c += blockDim.x) {
    float v = to_f(xr[c]);
    if (delta) {
      v = round_to<T>(v + to_f(delta[row * hidden + c]));
      xr[c] = from_f<T>(v);
    }
    local += v * v;
  }
  __shared__ float partial[32];
  local = warp_sum(local);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) partial[warp] = local;
  __syncthreads();
  if (warp == 0) {
    float t = lane < static_cast<int>(blockDim.x / 32) ? partial[lane] : 0.0f;
    t = warp_sum(t);
    if (lane == 0) partial[0] = t;
  }
  __syncthreads();
  const float r = rsqrtf(partial[0] / static_cast<float>(hidden) + eps);
  for (int c = threadIdx.x; c < hidden; c += blockDim.x) y[row * hidden + c] = from_f<T>(to_f(xr[c]) * r * w[c]);
}

// ---- q, k, v: bias, rotary embedding, into q and the own cache; block (row, head), thread d ----

template <class T>
__global__ void rope_qkv_kernel(const T* qkv, const T* bias, const float* cos, const float* sin,
                                const int64_t* prompt_length, const int64_t* step, T* q_out, T* own_k, T* own_v,
                                int n, int heads, int kv_heads, int head_dim, int max_tokens) {
  const int i = blockIdx.x, h = blockIdx.y, d = threadIdx.x, D = head_dim;
  const int width = (heads + 2 * kv_heads) * D, G = heads / kv_heads;
  const int s = static_cast<int>(*step);
  const int64_t pos = *prompt_length + s;
  auto value = [&](int dd) {
    const int c = h * D + dd;
    float v = to_f(qkv[static_cast<int64_t>(i) * width + c]);
    if (bias) v = round_to<T>(v + to_f(bias[c]));
    return v;
  };
  float v = value(d);
  if (h < heads + kv_heads) {  // q and k turn with their position (rotate-half form)
    const int half = D / 2;
    const float rot = d < half ? -value(d + half) : value(d - half);
    v = __fadd_rn(__fmul_rn(v, cos[pos * D + d]), __fmul_rn(rot, sin[pos * D + d]));
  }
  const T out = from_f<T>(v);
  if (h < heads) {
    q_out[((static_cast<int64_t>(h / G) * n + i) * G + h % G) * D + d] = out;
  } else {
    const int kv = h < heads + kv_heads ? h - heads : h - heads - kv_heads;
    T* cache = h < heads + kv_heads ? own_k : own_v;
    cache[((static_cast<int64_t>(kv) * n + i) * max_tokens + s) * D + d] = out;
  }
}

// ---- attention: block (sequence, kv head, split), 8 warps; a key is read by D/8 lanes (8 elements each) ----

constexpr int kWarps = 8;

// Eight consecutive elements as loaded (kept packed until used, so that several keys' loads are in
// flight at once without holding them as floats).
template <class T>
struct Raw8;
template <>
struct Raw8<__nv_bfloat16> {
  uint4 u;
  __device__ __forceinline__ void load(const __nv_bfloat16* p) { u = *reinterpret_cast<const uint4*>(p); }
  __device__ __forceinline__ void zero() { u = make_uint4(0, 0, 0, 0); }
  __device__ __forceinline__ void unpack(float (&v)[8]) const {
    const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&u);
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const float2 f = __bfloat1622float2(h[k]);
      v[2 * k] = f.x;
      v[2 * k + 1] = f.y;
    }
  }
};
template <>
struct Raw8<float> {
  float4 a, b;
  __device__ __forceinline__ void load(const float* p) {
    a = *reinterpret_cast<const float4*>(p);
    b = *reinterpret_cast<const float4*>(p + 4);
  }
  __device__ __forceinline__ void zero() { a = b = make_float4(0, 0, 0, 0); }
  __device__ __forceinline__ void unpack(float (&v)[8]) const {
    v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
  }
};

constexpr int kMaxSplits = 64;  // attention_splits' upper bound
constexpr int kMaxGroup = 8;

// The shares of one (sequence, kv head) merged by the block that finished last: warp g weighs head
// g's shares (each share's weight exp(m_s - max) / sum, its lanes over the shares), then every
// thread (g, d) sums the shares' values under those weights. Reads the shares from L2 (written by
// other blocks).
template <class T>
__device__ void merge_shares(const float* partial, T* out, int i, int kv, int kv_heads, int G, int D, int splits) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t stride = static_cast<int64_t>(G) * (D + 2);  // between one share and the next
  const float* base = partial + static_cast<int64_t>(i * kv_heads + kv) * splits * stride;
  __shared__ float weight[kMaxSplits][kMaxGroup];
  if (warp < G) {
    const int g = warp;
    float ms[2], ls[2];
#pragma unroll
    for (int k = 0; k < 2; ++k) {
      const int s = lane + 32 * k;
      ms[k] = s < splits ? __ldcg(base + s * stride + g * (D + 2)) : -1e30f;
      ls[k] = s < splits ? __ldcg(base + s * stride + g * (D + 2) + 1) : 0.0f;
    }
    const float mx = warp_reduce(fmaxf(ms[0], ms[1]), Max{});
    const float f0 = expf(ms[0] - mx), f1 = expf(ms[1] - mx);
    const float sum = warp_sum(ls[0] * f0 + ls[1] * f1);
    if (lane < splits) weight[lane][g] = f0 / sum;
    if (lane + 32 < splits) weight[lane + 32][g] = f1 / sum;
  }
  __syncthreads();
  for (int idx = threadIdx.x; idx < G * D; idx += blockDim.x) {
    const int g = idx / D, d = idx % D;
    const float* v = base + g * (D + 2) + 2 + d;
    float value = 0.0f;
#pragma unroll 8
    for (int s = 0; s < splits; ++s) value += weight[s][g] * __ldcg(v + s * stride);
    out[static_cast<int64_t>(i) * kv_heads * G * D + (static_cast<int64_t>(kv) * G + g) * D + d] = from_f<T>(value);
  }
}

// G query heads share a key/value head. Each lane group reads kUnroll keys per iteration (their loads
// in flight together), scores them for every head, and folds them into the running softmax under one
// common maximum.
template <class T, int D, int G>
__global__ void __launch_bounds__(kWarps * 32)
    attention_kernel(const T* q, const T* prompt_k, const T* prompt_v, const T* own_k, const T* own_v,
                     const int64_t* prompt_length, const int64_t* step, T* out, float* partial, int* arrived,
                     int n, int prompt_capacity, int max_tokens, float root_d) {
  constexpr int kLanes = D / 8;         // lanes per key
  constexpr int kPerWarp = 32 / kLanes;  // keys a warp reads at once
  constexpr int kUnroll = sizeof(T) == 2 && G <= 4 ? 4 : 2;
  const int i = blockIdx.x, kv = blockIdx.y, kv_heads = gridDim.y, split = blockIdx.z, splits = gridDim.z;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int sub = lane / kLanes, e0 = (lane % kLanes) * 8;
  const int P = static_cast<int>(*prompt_length), keys = P + static_cast<int>(*step) + 1;
  // This block's share of the keys (flash-decoding: with few sequences, the keys are split over
  // blocks so that every SM has work; a second kernel merges the shares).
  const int chunk = (keys + splits - 1) / splits, first = split * chunk, total = min(keys, first + chunk);
  const T* pk = prompt_k + static_cast<int64_t>(kv) * prompt_capacity * D;
  const T* pv = prompt_v + static_cast<int64_t>(kv) * prompt_capacity * D;
  const T* ok = own_k + (static_cast<int64_t>(kv) * n + i) * max_tokens * D;
  const T* ov = own_v + (static_cast<int64_t>(kv) * n + i) * max_tokens * D;

  float qv[G][8], acc[G][8], m[G], l[G];
#pragma unroll
  for (int g = 0; g < G; ++g) {
    m[g] = -1e30f;  // finite: exp(m - m') stays 0, never NaN
    l[g] = 0.0f;
#pragma unroll
    for (int e = 0; e < 8; ++e) acc[g][e] = 0.0f;
    load8(q + ((static_cast<int64_t>(kv) * n + i) * G + g) * D + e0, qv[g]);
  }
  for (int base = first + warp * kPerWarp * kUnroll; base < total; base += kWarps * kPerWarp * kUnroll) {
    Raw8<T> kr[kUnroll], vr[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int j = base + u * kPerWarp + sub;
      if (j < total) {
        kr[u].load((j < P ? pk + static_cast<int64_t>(j) * D : ok + static_cast<int64_t>(j - P) * D) + e0);
        vr[u].load((j < P ? pv + static_cast<int64_t>(j) * D : ov + static_cast<int64_t>(j - P) * D) + e0);
      } else {
        kr[u].zero();
        vr[u].zero();
      }
    }
    float score[kUnroll][G];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      float k8[8];
      kr[u].unpack(k8);
      const bool valid = base + u * kPerWarp + sub < total;
#pragma unroll
      for (int g = 0; g < G; ++g) {
        float part = 0.0f;
#pragma unroll
        for (int e = 0; e < 8; ++e) part += qv[g][e] * k8[e];
#pragma unroll
        for (int off = kLanes / 2; off > 0; off /= 2) part += __shfl_xor_sync(0xffffffffu, part, off);
        score[u][g] = valid ? round_to<T>(part) / root_d : -INFINITY;
      }
    }
#pragma unroll
    for (int g = 0; g < G; ++g) {
      float mn = m[g];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) mn = fmaxf(mn, score[u][g]);
      const float corr = expf(m[g] - mn);
      l[g] *= corr;
#pragma unroll
      for (int e = 0; e < 8; ++e) acc[g][e] *= corr;
      m[g] = mn;
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      float v8[8];
      vr[u].unpack(v8);
#pragma unroll
      for (int g = 0; g < G; ++g) {
        const float p = expf(score[u][g] - m[g]);  // 0 for a key past the end
        l[g] += p;
#pragma unroll
        for (int e = 0; e < 8; ++e) acc[g][e] += p * v8[e];
      }
    }
  }
  // The warp's key groups merged (lanes holding the same elements), then the warps through shared memory.
#pragma unroll
  for (int g = 0; g < G; ++g) {
    for (int off = kLanes; off < 32; off *= 2) {
      const float mo = __shfl_xor_sync(0xffffffffu, m[g], off), lo = __shfl_xor_sync(0xffffffffu, l[g], off);
      const float mn = fmaxf(m[g], mo), a = expf(m[g] - mn), b = expf(mo - mn);
      l[g] = l[g] * a + lo * b;
#pragma unroll
      for (int e = 0; e < 8; ++e) acc[g][e] = acc[g][e] * a + __shfl_xor_sync(0xffffffffu, acc[g][e], off) * b;
      m[g] = mn;
    }
  }
  __shared__ float merged[kWarps][G][2 + D];
  if (lane < kLanes) {
#pragma unroll
    for (int g = 0; g < G; ++g) {
      merged[warp][g][0] = m[g];
      merged[warp][g][1] = l[g];
#pragma unroll
      for (int e = 0; e < 8; ++e) merged[warp][g][2 + e0 + e] = acc[g][e];
    }
  }
  __syncthreads();
  for (int idx = threadIdx.x; idx < G * D; idx += blockDim.x) {
    const int g = idx / D, d = idx % D;
    float mx = -1e30f;
    for (int w = 0; w < kWarps; ++w) mx = fmaxf(mx, merged[w][g][0]);
    float sum = 0.0f, value = 0.0f;
    for (int w = 0; w < kWarps; ++w) {
      const float f = expf(merged[w][g][0] - mx);
      sum += merged[w][g][1] * f;
      value += merged[w][g][2 + d] * f;
    }
    if (splits == 1) {
      out[static_cast<int64_t>(i) * kv_heads * G * D + (static_cast<int64_t>(kv) * G + g) * D + d] =
          from_f<T>(value / sum);
    } else {  // this share's maximum, sum and unnormalized values, for merge_shares
      float* share = partial + (((static_cast<int64_t>(i) * kv_heads + kv) * splits + split) * G + g) * (D + 2);
      if (d == 0) share[0] = mx, share[1] = sum;
      share[2 + d] = value;
    }
  }
  if (splits == 1) return;
  // The last of the sequence's blocks to finish merges the shares (and zeroes the count for the next step).
  __threadfence();
  __syncthreads();
  __shared__ bool last;
  if (threadIdx.x == 0) {
    int* count = arrived + i * kv_heads + kv;
    last = atomicAdd(count, 1) == splits - 1;
    if (last) *count = 0;
  }
  __syncthreads();
  if (!last) return;
  __threadfence();
  merge_shares<T>(partial, out, i, kv, kv_heads, G, D, splits);
}

// ---- silu(gate) * up ----

template <class T>
__global__ void silu_mul_kernel(const T* gu, T* out, int64_t n, int64_t inter) {
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= n * inter) return;
  const int64_t row = idx / inter, c = idx % inter;
  const float g = to_f(gu[row * 2 * inter + c]), u = to_f(gu[row * 2 * inter + inter + c]);
  out[idx] = from_f<T>(round_to<T>(g / (1.0f + expf(-g))) * u);
}

// ---- small batches: each output column's dot products for every row by one warp ----

constexpr int kMatvecWarps = 8;

// What a matvec computes around the product (decoder_kernels.h's MatvecOut, as template arguments).
template <MatvecOut M>
constexpr bool kNormFirst = M != MatvecOut::add_to;

// R rows of `in` [R, K] (the residual stream when the norm comes first): out's columns
// c = blockIdx.x * 8 + warp, stepping by the grid's warps. Each lane reads 8 elements of a weight
// row at a time and the same 8 of every input row (through L1: every warp reads them).
template <class T, int R, MatvecOut M>
__global__ void __launch_bounds__(kMatvecWarps * 32)
    matvec_kernel(const T* in, const float* norm_w, float eps, const T* W, void* out, int K, int N) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __shared__ float scale[R];  // each row's rsqrt(mean(x^2) + eps), as add_rmsnorm computes it
  if (kNormFirst<M>) {
    for (int r = warp; r < R; r += kMatvecWarps) {
      float ss = 0.0f;
      for (int c = lane; c < K; c += 32) {
        const float v = to_f(in[static_cast<int64_t>(r) * K + c]);
        ss += v * v;
      }
      ss = warp_sum(ss);
      if (lane == 0) scale[r] = rsqrtf(ss / static_cast<float>(K) + eps);
    }
    __syncthreads();
  }
  constexpr int kCols = M == MatvecOut::silu ? 2 : 1;  // silu: gate row c and up row N + c
  for (int c = blockIdx.x * kMatvecWarps + warp; c < N; c += gridDim.x * kMatvecWarps) {
    float acc[kCols][R];
#pragma unroll
    for (int j = 0; j < kCols; ++j)
#pragma unroll
      for (int r = 0; r < R; ++r) acc[j][r] = 0.0f;
#pragma unroll 2
    for (int k = lane * 8; k < K; k += 256) {
      float x[R][8];
#pragma unroll
      for (int r = 0; r < R; ++r) load8(in + static_cast<int64_t>(r) * K + k, x[r]);
      if (kNormFirst<M>) {  // the normed input, rounded to T as the stored norm is
        float w8[8];
        load8(norm_w + k, w8);
#pragma unroll
        for (int r = 0; r < R; ++r)
#pragma unroll
          for (int e = 0; e < 8; ++e) x[r][e] = round_to<T>(x[r][e] * scale[r] * w8[e]);
      }
#pragma unroll
      for (int j = 0; j < kCols; ++j) {
        float w8[8];
        load8(W + (static_cast<int64_t>(j) * N + c) * K + k, w8);
#pragma unroll
        for (int r = 0; r < R; ++r)
#pragma unroll
          for (int e = 0; e < 8; ++e) acc[j][r] += w8[e] * x[r][e];
      }
    }
#pragma unroll
    for (int r = 0; r < R; ++r) {
#pragma unroll
      for (int j = 0; j < kCols; ++j) acc[j][r] = warp_sum(acc[j][r]);
      if (lane != r % 32) continue;
      const int64_t at = static_cast<int64_t>(r) * N + c;
      const float v = round_to<T>(acc[0][r]);  // the product as a T tensor holds it
      if (M == MatvecOut::store) {
        static_cast<T*>(out)[at] = from_f<T>(v);
      } else if (M == MatvecOut::store_float) {
        static_cast<float*>(out)[at] = v;
      } else if (M == MatvecOut::silu) {
        const float u = round_to<T>(acc[kCols - 1][r]);
        static_cast<T*>(out)[at] = from_f<T>(round_to<T>(v / (1.0f + expf(-v))) * u);
      } else {  // add_to: the residual stream, rounded to T after the sum as add_rmsnorm does
        T* x = static_cast<T*>(out);
        x[at] = from_f<T>(to_f(x[at]) + v);
      }
    }
  }
}

template <class T, MatvecOut M, int R>
void launch_matvec(const void* in, const float* norm_w, float eps, const void* W, void* out, int64_t K, int64_t N,
                   int max_blocks, cudaStream_t stream) {
  const int64_t blocks = std::min<int64_t>((N + kMatvecWarps - 1) / kMatvecWarps, std::max(1, max_blocks));
  matvec_kernel<T, R, M><<<static_cast<unsigned>(blocks), kMatvecWarps * 32, 0, stream>>>(
      static_cast<const T*>(in), norm_w, eps, static_cast<const T*>(W), out, static_cast<int>(K), static_cast<int>(N));
}

template <class T, MatvecOut M>
void matvec_rows(int64_t rows, const void* in, const float* norm_w, float eps, const void* W, void* out, int64_t K,
                 int64_t N, int max_blocks, cudaStream_t stream) {
  switch (rows) {
    case 1: return launch_matvec<T, M, 1>(in, norm_w, eps, W, out, K, N, max_blocks, stream);
    case 2: return launch_matvec<T, M, 2>(in, norm_w, eps, W, out, K, N, max_blocks, stream);
    case 3: return launch_matvec<T, M, 3>(in, norm_w, eps, W, out, K, N, max_blocks, stream);
    case 4: return launch_matvec<T, M, 4>(in, norm_w, eps, W, out, K, N, max_blocks, stream);
    case 5: return launch_matvec<T, M, 5>(in, norm_w, eps, W, out, K, N, max_blocks, stream);
    case 6: return launch_matvec<T, M, 6>(in, norm_w, eps, W, out, K, N, max_blocks, stream);
    case 7: return launch_matvec<T, M, 7>(in, norm_w, eps, W, out, K, N, max_blocks, stream);
    default: return launch_matvec<T, M, 8>(in, norm_w, eps, W, out, K, N, max_blocks, stream);
  }
}

template <class T>
void matvec_typed(MatvecOut mode, int64_t rows, const void* in, const float* norm_w, float eps, const void* W,
                  void* out, int64_t K, int64_t N, int max_blocks, cudaStream_t stream) {
  switch (mode) {
    case MatvecOut::store: return matvec_rows<T, MatvecOut::store>(rows, in, norm_w, eps, W, out, K, N, max_blocks, stream);
    case MatvecOut::store_float:
      return matvec_rows<T, MatvecOut::store_float>(rows, in, norm_w, eps, W, out, K, N, max_blocks, stream);
    case MatvecOut::silu: return matvec_rows<T, MatvecOut::silu>(rows, in, norm_w, eps, W, out, K, N, max_blocks, stream);
    case MatvecOut::add_to: return matvec_rows<T, MatvecOut::add_to>(rows, in, norm_w, eps, W, out, K, N, max_blocks, stream);
  }
}

// ---- sampling: a block per row; thread t reads a contiguous chunk of the vocabulary ----

constexpr int kSampleThreads = 1024;

// Block-wide exclusive prefix sums of one value per thread (blockDim.x == kSampleThreads, 32 warps):
// `before` gets the sum over the threads before this one, `next` the following thread's `before`
// (the block's total for the last thread). Nondecreasing in the thread for values >= 0, so the
// intervals [before, next) partition [0, total). `offsets`: 33 floats of shared memory.
__device__ __forceinline__ void exclusive_scan(float v, float* offsets, float& before, float& next) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  float inclusive = v;
#pragma unroll
  for (int off = 1; off < 32; off *= 2) {
    const float up = __shfl_up_sync(0xffffffffu, inclusive, off);
    if (lane >= off) inclusive += up;
  }
  float exclusive = __shfl_up_sync(0xffffffffu, inclusive, 1);
  if (lane == 0) exclusive = 0.0f;
  if (lane == 31) offsets[warp] = inclusive;  // the warp's total
  __syncthreads();
  if (warp == 0) {
    const float mine = offsets[lane];
    float running = mine;
#pragma unroll
    for (int off = 1; off < 32; off *= 2) {
      const float up = __shfl_up_sync(0xffffffffu, running, off);
      if (lane >= off) running += up;
    }
    __syncwarp();
    offsets[lane + 1] = running;  // the warps up to lane's, inclusive
    if (lane == 0) offsets[0] = 0.0f;
  }
  __syncthreads();
  before = offsets[warp] + exclusive;
  const float after_lane = __shfl_down_sync(0xffffffffu, before, 1);
  next = lane == 31 ? offsets[warp + 1] : after_lane;
}

// Row `blockIdx.x` of logits [n, vocab]: the greedy token (the first index of the maximum) or the
// inverse CDF's token at u = uniforms[step * n + row] over exp(logit / temperature - max).
__global__ void __launch_bounds__(kSampleThreads)
    sample_kernel(const float* logits, int vocab, float temperature, bool greedy, const float* uniforms,
                  const int64_t* step, int max_tokens, int64_t* chosen, int64_t* tokens, float* logprobs) {
  const int row = blockIdx.x, n = gridDim.x, t = threadIdx.x;
  const float* x = logits + static_cast<int64_t>(row) * vocab;
  const int chunk = (vocab + kSampleThreads - 1) / kSampleThreads;
  const int lo = min(vocab, t * chunk), hi = min(vocab, lo + chunk);
  __shared__ float scratch[33];
  __shared__ int pick;
  if (t == 0) pick = vocab;
  float local_max = -INFINITY;
  int arg = vocab;
  for (int j = lo; j < hi; ++j) {
    const float v = x[j] / temperature;
    if (v > local_max) local_max = v, arg = j;
  }
  const float mx = block_max(local_max, scratch);
  float mass = 0.0f;
  for (int j = lo; j < hi; ++j) mass += expf(x[j] / temperature - mx);
  float before = 0.0f, next = 0.0f;
  exclusive_scan(mass, scratch, before, next);
  const float total = scratch[32];
  const int s = static_cast<int>(*step);
  if (greedy) {
    if (local_max == mx) atomicMin(&pick, arg);
  } else {
    const float target = uniforms[static_cast<int64_t>(s) * n + row] * total;
    if (before <= target && (t + 1 == kSampleThreads || target < next)) {  // the crossing is in this chunk
      float running = before;
      int c = max(lo, hi - 1);
      for (int j = lo; j < hi; ++j) {
        running += expf(x[j] / temperature - mx);
        if (running > target) {
          c = j;
          break;
        }
      }
      atomicMin(&pick, c);
    }
  }
  __syncthreads();
  if (t == 0) {
    const int c = pick < vocab ? pick : vocab - 1;  // none crossed (rounding): the last token, as the torch sampler clamps
    chosen[row] = c;
    tokens[static_cast<int64_t>(row) * max_tokens + s] = c;
    logprobs[static_cast<int64_t>(row) * max_tokens + s] = x[c] / temperature - (mx + logf(total));
  }
}

struct AttentionArgs {
  const void *q, *pk, *pv, *ok, *ov;
  const int64_t *plen, *step;
  void* out;
  float* partial;
  int* arrived;
  int64_t n, kv_heads, group, prompt_capacity, max_tokens, splits;
  cudaStream_t stream;
};

template <class T, int D, int G>
void launch_attention(const AttentionArgs& a) {
  const dim3 grid(static_cast<unsigned>(a.n), static_cast<unsigned>(a.kv_heads), static_cast<unsigned>(a.splits));
  attention_kernel<T, D, G><<<grid, kWarps * 32, 0, a.stream>>>(
      static_cast<const T*>(a.q), static_cast<const T*>(a.pk), static_cast<const T*>(a.pv),
      static_cast<const T*>(a.ok), static_cast<const T*>(a.ov), a.plen, a.step, static_cast<T*>(a.out), a.partial,
      a.arrived, static_cast<int>(a.n), static_cast<int>(a.prompt_capacity), static_cast<int>(a.max_tokens),
      sqrtf(static_cast<float>(D)));
}

template <class T, int D>
void attention_for_group(const AttentionArgs& a) {
  switch (a.group) {
    case 1: return launch_attention<T, D, 1>(a);
    case 2: return launch_attention<T, D, 2>(a);
    case 3: return launch_attention<T, D, 3>(a);
    case 4: return launch_attention<T, D, 4>(a);
    case 5: return launch_attention<T, D, 5>(a);
    case 6: return launch_attention<T, D, 6>(a);
    case 7: return launch_attention<T, D, 7>(a);
    default: return launch_attention<T, D, 8>(a);
  }
}

}  // namespace

bool fused_step_supported(int64_t head_dim, int64_t group) {
  return (head_dim == 64 || head_dim == 128) && group >= 1 && group <= 8;
}

void add_rmsnorm(void* x, const void* delta, const float* w, void* y, int64_t rows, int64_t hidden, float eps,
                 bool bf16, void* stream) {
  const auto s = static_cast<cudaStream_t>(stream);
  if (bf16)
    add_rmsnorm_kernel<__nv_bfloat16><<<static_cast<unsigned>(rows), 256, 0, s>>>(
        static_cast<__nv_bfloat16*>(x), static_cast<const __nv_bfloat16*>(delta), w, static_cast<__nv_bfloat16*>(y),
        static_cast<int>(hidden), eps);
  else
    add_rmsnorm_kernel<float><<<static_cast<unsigned>(rows), 256, 0, s>>>(
        static_cast<float*>(x), static_cast<const float*>(delta), w, static_cast<float*>(y), static_cast<int>(hidden),
        eps);
  check_launch("add_rmsnorm");
}

void rope_qkv(const void* qkv, const void* bias, const float* cos, const float* sin, const int64_t* prompt_length,
              const int64_t* step, void* q_out, void* own_k, void* own_v, int64_t n, int64_t heads, int64_t kv_heads,
              int64_t head_dim, int64_t max_tokens, bool bf16, void* stream) {
  const auto s = static_cast<cudaStream_t>(stream);
  const dim3 grid(static_cast<unsigned>(n), static_cast<unsigned>(heads + 2 * kv_heads));
  const auto args = [&](auto* type) {
    using T = std::remove_pointer_t<decltype(type)>;
    rope_qkv_kernel<T><<<grid, static_cast<unsigned>(head_dim), 0, s>>>(
        static_cast<const T*>(qkv), static_cast<const T*>(bias), cos, sin, prompt_length, step, static_cast<T*>(q_out),
        static_cast<T*>(own_k), static_cast<T*>(own_v), static_cast<int>(n), static_cast<int>(heads),
        static_cast<int>(kv_heads), static_cast<int>(head_dim), static_cast<int>(max_tokens));
  };
  if (bf16)
    args(static_cast<__nv_bfloat16*>(nullptr));
  else
    args(static_cast<float*>(nullptr));
  check_launch("rope_qkv");
}

int64_t attention_splits(int64_t n, int64_t kv_heads, int64_t max_keys, int multiprocessors) {
  const int64_t blocks = n * kv_heads, want = (2 * multiprocessors + blocks - 1) / blocks;
  return std::max<int64_t>(1, std::min<int64_t>({want, kMaxSplits, max_keys / 32}));
}

int64_t attention_workspace_floats(int64_t n, int64_t kv_heads, int64_t group, int64_t head_dim, int64_t splits) {
  return splits > 1 ? n * kv_heads * splits * group * (head_dim + 2) : 0;
}

void attention(const void* q, const void* prompt_k, const void* prompt_v, const void* own_k, const void* own_v,
               const int64_t* prompt_length, const int64_t* step, void* out, float* workspace, int* arrived,
               int64_t splits, int64_t n, int64_t kv_heads, int64_t group, int64_t head_dim, int64_t prompt_capacity,
               int64_t max_tokens, bool bf16, void* stream) {
  if (!fused_step_supported(head_dim, group))
    throw std::invalid_argument("kbrl decoder attention: head_dim " + std::to_string(head_dim) + ", group " +
                                std::to_string(group) + " not supported");
  const AttentionArgs a{q,        prompt_k,  prompt_v, own_k,           own_v,      prompt_length,
                        step,     out,       workspace, arrived,        n,          kv_heads,
                        group,    prompt_capacity, max_tokens, splits,   static_cast<cudaStream_t>(stream)};
  if (bf16) {
    if (head_dim == 64)
      attention_for_group<__nv_bfloat16, 64>(a);
    else
      attention_for_group<__nv_bfloat16, 128>(a);
  } else {
    if (head_dim == 64)
      attention_for_group<float, 64>(a);
    else
      attention_for_group<float, 128>(a);
  }
  check_launch("attention");
}

void silu_mul(const void* gu, void* out, int64_t n, int64_t intermediate, bool bf16, void* stream) {
  const auto s = static_cast<cudaStream_t>(stream);
  const int64_t total = n * intermediate;
  const unsigned blocks = static_cast<unsigned>((total + 255) / 256);
  if (bf16)
    silu_mul_kernel<__nv_bfloat16><<<blocks, 256, 0, s>>>(static_cast<const __nv_bfloat16*>(gu),
                                                          static_cast<__nv_bfloat16*>(out), n, intermediate);
  else
    silu_mul_kernel<float><<<blocks, 256, 0, s>>>(static_cast<const float*>(gu), static_cast<float*>(out), n,
                                                  intermediate);
  check_launch("silu_mul");
}

void sample_tokens(const float* logits, int64_t n, int64_t vocab, float temperature, bool greedy,
                   const float* uniforms, const int64_t* step, int64_t max_tokens, int64_t* chosen, int64_t* tokens,
                   float* logprobs, void* stream) {
  sample_kernel<<<static_cast<unsigned>(n), kSampleThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      logits, static_cast<int>(vocab), temperature, greedy, uniforms, step, static_cast<int>(max_tokens), chosen,
      tokens, logprobs);
  check_launch("sample_tokens");
}

bool matvec_supported(int64_t rows, int64_t in_features) {
  return rows >= 1 && rows <= kMatvecRows && in_features % 8 == 0;
}

void matvec(MatvecOut mode, const void* in, const float* norm_w, float eps, const void* weight, void* out,
            int64_t rows, int64_t in_features, int64_t out_features, int max_blocks, bool bf16, void* stream) {
  if (!matvec_supported(rows, in_features))
    throw std::invalid_argument("kbrl decoder matvec: " + std::to_string(rows) + " rows of " +
                                std::to_string(in_features) + " not supported");
  const auto s = static_cast<cudaStream_t>(stream);
  if (bf16)
    matvec_typed<__nv_bfloat16>(mode, rows, in, norm_w, eps, weight, out, in_features, out_features, max_blocks, s);
  else
    matvec_typed<float>(mode, rows, in, norm_w, eps, weight, out, in_features, out_features, max_blocks, s);
  check_launch("matvec");
}

}  // namespace kbrl::lm::kernels
