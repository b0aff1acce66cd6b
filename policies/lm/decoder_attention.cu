// The fused step's attention (decoder_kernels.h): flash-decoding over the shared prompt's keys and
// each sequence's own, its shares merged by the last block to finish.
#include "decoder_kernels.h"
#include "kernel_math.cuh"

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <stdexcept>
#include <string>

namespace kbrl::lm::kernels {
namespace {

using namespace math;

// ---- attention: block (sequence, kv head, split), 8 warps; a key is read by D/8 lanes (8 elements each) ----

constexpr int kWarps = 8;

constexpr int kMaxGroup = 8;
constexpr float kLog2e = 1.4426950408889634f;

// The shares of one (sequence, kv head) merged by the block that finished last: warp g weighs head
// g's shares (each share's weight 2^(m_s - max) / sum, maxima in base 2; its lanes over the shares), then every
// thread (g, d) sums the shares' values under those weights. Reads the shares from L2 (written by
// other blocks).
template <class T>
__device__ void merge_shares(const float* partial, T* out, int i, int kv, int kv_heads, int G, int D, int splits) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t stride = static_cast<int64_t>(G) * (D + 2);  // between one share and the next
  const float* base = partial + static_cast<int64_t>(i * kv_heads + kv) * splits * stride;
  __shared__ float weight[kMaxAttentionSplits][kMaxGroup];
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
    const float f0 = exp2f(ms[0] - mx), f1 = exp2f(ms[1] - mx);
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

// The keys each lane group reads per iteration (their loads in flight together).
template <class T, int G>
__host__ __device__ constexpr int unroll() {
  return sizeof(T) == 2 && G <= 4 ? 4 : 2;
}

// G query heads share a key/value head. Each lane group reads kUnroll keys per iteration (their loads
// in flight together), scores them for every head, and folds them into the running softmax under one
// common maximum. The softmax runs in base 2: `scale` is log2(e) / sqrt(D), so that a score costs a
// multiplication and its weight one exp2 (a division and expf were a third of the loop's instructions).
template <class T, int D, int G>
__global__ void __launch_bounds__(kWarps * 32)
    attention_kernel(const T* q, const T* prompt_k, const T* prompt_v, const T* own_k, const T* own_v,
                     const int64_t* prompt_length, const int64_t* step, T* out, float* partial, int* arrived,
                     int n, int prompt_capacity, int max_tokens, float scale) {
  constexpr int kLanes = D / 8;         // lanes per key
  constexpr int kPerWarp = 32 / kLanes;  // keys a warp reads at once
  constexpr int kUnroll = unroll<T, G>();
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
        score[u][g] = valid ? round_to<T>(part) * scale : -INFINITY;
      }
    }
#pragma unroll
    for (int g = 0; g < G; ++g) {
      float mn = m[g];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) mn = fmaxf(mn, score[u][g]);
      const float corr = exp2f(m[g] - mn);
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
        const float p = exp2f(score[u][g] - m[g]);  // 0 for a key past the end
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
      const float mn = fmaxf(m[g], mo), a = exp2f(m[g] - mn), b = exp2f(mo - mn);
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
      const float f = exp2f(merged[w][g][0] - mx);
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
      kLog2e / sqrtf(static_cast<float>(D)));
}

// One shape of the kernel (element type, head size, group) as a type, for generic lambdas.
template <class T, int D, int G>
struct Shape {
  using Elem = T;
  static constexpr int kD = D, kG = G;
};

template <class T, int D, class F>
void for_group(int64_t group, F&& f) {
  switch (group) {
    case 1: return f(Shape<T, D, 1>{});
    case 2: return f(Shape<T, D, 2>{});
    case 3: return f(Shape<T, D, 3>{});
    case 4: return f(Shape<T, D, 4>{});
    case 5: return f(Shape<T, D, 5>{});
    case 6: return f(Shape<T, D, 6>{});
    case 7: return f(Shape<T, D, 7>{});
    default: return f(Shape<T, D, 8>{});
  }
}

// f(Shape<...>{}) for the kernel serving these shapes (fused_step_supported's).
template <class F>
void for_shape(bool bf16, int64_t head_dim, int64_t group, F&& f) {
  if (!fused_step_supported(head_dim, group))
    throw std::invalid_argument("kbrl decoder attention: head_dim " + std::to_string(head_dim) + ", group " +
                                std::to_string(group) + " not supported");
  if (bf16) {
    if (head_dim == 64) return for_group<__nv_bfloat16, 64>(group, f);
    return for_group<__nv_bfloat16, 128>(group, f);
  }
  if (head_dim == 64) return for_group<float, 64>(group, f);
  return for_group<float, 128>(group, f);
}

}  // namespace

bool fused_step_supported(int64_t head_dim, int64_t group) {
  return (head_dim == 64 || head_dim == 128) && group >= 1 && group <= 8;
}

int64_t attention_splits(int64_t n, int64_t kv_heads, int64_t group, int64_t head_dim, bool bf16, int64_t keys) {
  int per_sm = 0, keys_per_iteration = 0, device = 0, sms = 0;
  for_shape(bf16, head_dim, group, [&](auto shape) {
    using S = decltype(shape);
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, attention_kernel<typename S::Elem, S::kD, S::kG>,
                                                  kWarps * 32, 0);
    keys_per_iteration = kWarps * (256 / S::kD) * unroll<typename S::Elem, S::kG>();
  });
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  check_launch("attention_splits");
  return fewest_wave_splits(n * kv_heads, static_cast<int64_t>(per_sm) * sms, keys, keys_per_iteration);
}

int64_t attention_workspace_floats(int64_t n, int64_t kv_heads, int64_t group, int64_t head_dim, int64_t splits) {
  return splits > 1 ? n * kv_heads * splits * group * (head_dim + 2) : 0;
}

void attention(const void* q, const void* prompt_k, const void* prompt_v, const void* own_k, const void* own_v,
               const int64_t* prompt_length, const int64_t* step, void* out, float* workspace, int* arrived,
               int64_t splits, int64_t n, int64_t kv_heads, int64_t group, int64_t head_dim, int64_t prompt_capacity,
               int64_t max_tokens, bool bf16, void* stream) {
  const AttentionArgs a{q,        prompt_k,  prompt_v, own_k,           own_v,      prompt_length,
                        step,     out,       workspace, arrived,        n,          kv_heads,
                        group,    prompt_capacity, max_tokens, splits,   static_cast<cudaStream_t>(stream)};
  for_shape(bf16, head_dim, group, [&](auto shape) {
    using S = decltype(shape);
    launch_attention<typename S::Elem, S::kD, S::kG>(a);
  });
  check_launch("attention");
}

}  // namespace kbrl::lm::kernels
