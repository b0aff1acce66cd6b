// The fused step's row-wise CUDA kernels (decoder_kernels.h): add + RMSNorm, q/k/v's bias and rotary
// embedding into q and the own cache, SwiGLU's product. Attention, the small batches' matvec and the
// sampler are in decoder_attention.cu, decoder_matvec.cu and decoder_sampler.cu. Element type T:
// float or __nv_bfloat16; arithmetic in float32, rounded to T where the torch-ops step rounds.
#include "decoder_kernels.h"
#include "kernel_math.cuh"

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <type_traits>

namespace kbrl::lm::kernels {
namespace {

using namespace math;

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

// ---- silu(gate) * up ----

template <class T>
__global__ void silu_mul_kernel(const T* gu, T* out, int64_t n, int64_t inter) {
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= n * inter) return;
  const int64_t row = idx / inter, c = idx % inter;
  const float g = to_f(gu[row * 2 * inter + c]), u = to_f(gu[row * 2 * inter + inter + c]);
  out[idx] = from_f<T>(round_to<T>(g / (1.0f + expf(-g))) * u);
}

}  // namespace

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

}  // namespace kbrl::lm::kernels
