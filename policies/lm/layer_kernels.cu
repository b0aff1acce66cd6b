// CUDA kernels of a decoder layer's forward and backward passes (layer_kernels.h).
#include "layer_kernels.h"
#include "kernel_math.cuh"

namespace kbrl::lm::kernels {
namespace {

using namespace math;

// ---- RMSNorm's gradient: one block per row ----

template <class T>
__global__ void rms_norm_backward_kernel(const T* x, const T* grad_y, const float* w, T* grad_x, int hidden,
                                         float eps) {
  __shared__ float scratch[32];
  const int64_t offset = static_cast<int64_t>(blockIdx.x) * hidden;
  float squares = 0, products = 0;
  for (int c = threadIdx.x; c < hidden; c += blockDim.x) {
    const float v = to_f(x[offset + c]), u = to_f(grad_y[offset + c]) * w[c];
    squares += v * v;
    products += u * v;
  }
  squares = block_sum(squares, scratch);
  products = block_sum(products, scratch);
  const float r = rsqrtf(squares / static_cast<float>(hidden) + eps);
  const float k = r * r * r * products / static_cast<float>(hidden);
  for (int c = threadIdx.x; c < hidden; c += blockDim.x) {
    const float v = to_f(x[offset + c]), u = to_f(grad_y[offset + c]) * w[c];
    grad_x[offset + c] = from_f<T>(r * u - k * v);
  }
}

// ---- rotary embedding: one thread per pair (d, d + half) of a row's head ----

template <class T>
__global__ void rotary_kernel(const T* x, const float* cos, const float* sin, T* y, int64_t pairs, int heads,
                              int half, int positions, float sign) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= pairs) return;
  const int d = static_cast<int>(i % half);
  const int64_t head = i / half;  // row * heads + h
  const int position = static_cast<int>((head / heads) % positions);
  const int64_t at = head * 2 * half + d;
  const float x1 = to_f(x[at]), x2 = to_f(x[at + half]);
  const float c = cos[static_cast<int64_t>(position) * 2 * half + d];
  const float s = sign * sin[static_cast<int64_t>(position) * 2 * half + d];
  // As apply_rope: x * cos + rotate_half(x) * sin, each product rounded, no fused multiply-add.
  y[at] = from_f<T>(__fadd_rn(__fmul_rn(x1, c), __fmul_rn(-x2, s)));
  y[at + half] = from_f<T>(__fadd_rn(__fmul_rn(x2, c), __fmul_rn(x1, s)));
}

// ---- SwiGLU: one thread per element ----

// As torch's silu and its derivative compute them (float32 arithmetic).
__device__ __forceinline__ float sigmoid(float g) { return 1.0f / (1.0f + expf(-g)); }
__device__ __forceinline__ float silu(float g) { return g / (1.0f + expf(-g)); }

template <class T>
__global__ void swiglu_kernel(const T* gate, const T* up, T* out, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float g = to_f(gate[i]);
  out[i] = from_f<T>(round_to<T>(silu(g)) * to_f(up[i]));
}

template <class T>
__global__ void swiglu_backward_kernel(const T* gate, const T* up, const T* grad_out, T* grad_gate, T* grad_up,
                                       int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float g = to_f(gate[i]), s = sigmoid(g), go = to_f(grad_out[i]);
  grad_up[i] = from_f<T>(go * round_to<T>(silu(g)));
  const float grad_silu = round_to<T>(go * to_f(up[i]));
  grad_gate[i] = from_f<T>(grad_silu * s * (1.0f + g * (1.0f - s)));
}

// ---- a row's log-prob and entropy: one block per row, two passes over the row ----

template <class T>
__global__ void token_scores_kernel(const T* logits, const int64_t* targets, float* logprob, float* entropy,
                                    float* stats, int64_t vocab, float temperature) {
  __shared__ float scratch[32];
  const int64_t row = blockIdx.x;
  const T* z = logits + row * vocab;
  float m = -INFINITY;
  for (int64_t c = threadIdx.x; c < vocab; c += blockDim.x) m = fmaxf(m, to_f(z[c]) / temperature);
  m = block_max(m, scratch);
  float sum = 0, weighted = 0;
  for (int64_t c = threadIdx.x; c < vocab; c += blockDim.x) {
    const float v = to_f(z[c]) / temperature, e = expf(v - m);
    sum += e;
    weighted += e * v;
  }
  sum = block_sum(sum, scratch);
  weighted = block_sum(weighted, scratch);
  if (threadIdx.x == 0) {
    const float lse = m + logf(sum), mean = weighted / sum;
    logprob[row] = to_f(z[targets[row]]) / temperature - lse;
    if (entropy) entropy[row] = lse - mean;
    stats[2 * row] = lse;
    stats[2 * row + 1] = mean;
  }
}

template <class T>
__global__ void token_scores_backward_kernel(T* logits, const int64_t* targets, const float* stats,
                                             const float* grad_logprob, const float* grad_entropy, int64_t vocab,
                                             float temperature) {
  const int64_t row = blockIdx.x, target = targets[row];
  T* z = logits + row * vocab;
  const float lse = stats[2 * row], mean = stats[2 * row + 1];
  const float g_lp = grad_logprob ? grad_logprob[row] : 0.0f, g_ent = grad_entropy ? grad_entropy[row] : 0.0f;
  for (int64_t c = threadIdx.x; c < vocab; c += blockDim.x) {
    const float v = to_f(z[c]) / temperature, p = expf(v - lse);
    const float g = g_lp * ((c == target ? 1.0f : 0.0f) - p) - g_ent * p * (v - mean);
    z[c] = from_f<T>(g / temperature);
  }
}

unsigned blocks_for(int64_t n, unsigned threads) { return static_cast<unsigned>((n + threads - 1) / threads); }

}  // namespace

void swiglu(const void* gate, const void* up, void* out, int64_t n, bool bf16, void* stream) {
  if (n == 0) return;
  const auto s = static_cast<cudaStream_t>(stream);
  if (bf16)
    swiglu_kernel<__nv_bfloat16><<<blocks_for(n, 256), 256, 0, s>>>(static_cast<const __nv_bfloat16*>(gate),
                                                                     static_cast<const __nv_bfloat16*>(up),
                                                                     static_cast<__nv_bfloat16*>(out), n);
  else
    swiglu_kernel<float><<<blocks_for(n, 256), 256, 0, s>>>(static_cast<const float*>(gate),
                                                            static_cast<const float*>(up), static_cast<float*>(out), n);
  check_launch("swiglu");
}

void swiglu_backward(const void* gate, const void* up, const void* grad_out, void* grad_gate, void* grad_up, int64_t n,
                     bool bf16, void* stream) {
  if (n == 0) return;
  const auto s = static_cast<cudaStream_t>(stream);
  if (bf16)
    swiglu_backward_kernel<__nv_bfloat16><<<blocks_for(n, 256), 256, 0, s>>>(
        static_cast<const __nv_bfloat16*>(gate), static_cast<const __nv_bfloat16*>(up),
        static_cast<const __nv_bfloat16*>(grad_out), static_cast<__nv_bfloat16*>(grad_gate),
        static_cast<__nv_bfloat16*>(grad_up), n);
  else
    swiglu_backward_kernel<float><<<blocks_for(n, 256), 256, 0, s>>>(
        static_cast<const float*>(gate), static_cast<const float*>(up), static_cast<const float*>(grad_out),
        static_cast<float*>(grad_gate), static_cast<float*>(grad_up), n);
  check_launch("swiglu_backward");
}

void token_scores(const void* logits, const int64_t* targets, float* logprob, float* entropy, float* stats,
                  int64_t rows, int64_t vocab, float temperature, bool bf16, void* stream) {
  if (rows == 0) return;
  const auto s = static_cast<cudaStream_t>(stream);
  if (bf16)
    token_scores_kernel<__nv_bfloat16><<<static_cast<unsigned>(rows), 512, 0, s>>>(
        static_cast<const __nv_bfloat16*>(logits), targets, logprob, entropy, stats, vocab, temperature);
  else
    token_scores_kernel<float><<<static_cast<unsigned>(rows), 512, 0, s>>>(
        static_cast<const float*>(logits), targets, logprob, entropy, stats, vocab, temperature);
  check_launch("token_scores");
}

void token_scores_backward(void* logits, const int64_t* targets, const float* stats, const float* grad_logprob,
                           const float* grad_entropy, int64_t rows, int64_t vocab, float temperature, bool bf16,
                           void* stream) {
  if (rows == 0) return;
  const auto s = static_cast<cudaStream_t>(stream);
  if (bf16)
    token_scores_backward_kernel<__nv_bfloat16><<<static_cast<unsigned>(rows), 512, 0, s>>>(
        static_cast<__nv_bfloat16*>(logits), targets, stats, grad_logprob, grad_entropy, vocab, temperature);
  else
    token_scores_backward_kernel<float><<<static_cast<unsigned>(rows), 512, 0, s>>>(
        static_cast<float*>(logits), targets, stats, grad_logprob, grad_entropy, vocab, temperature);
  check_launch("token_scores_backward");
}

void rms_norm_backward(const void* x, const void* grad_y, const float* w, void* grad_x, int64_t rows, int64_t hidden,
                       float eps, bool bf16, void* stream) {
  const auto s = static_cast<cudaStream_t>(stream);
  const unsigned threads = hidden >= 1024 ? 256 : 128;
  if (bf16)
    rms_norm_backward_kernel<__nv_bfloat16><<<static_cast<unsigned>(rows), threads, 0, s>>>(
        static_cast<const __nv_bfloat16*>(x), static_cast<const __nv_bfloat16*>(grad_y), w,
        static_cast<__nv_bfloat16*>(grad_x), static_cast<int>(hidden), eps);
  else
    rms_norm_backward_kernel<float><<<static_cast<unsigned>(rows), threads, 0, s>>>(
        static_cast<const float*>(x), static_cast<const float*>(grad_y), w, static_cast<float*>(grad_x),
        static_cast<int>(hidden), eps);
  check_launch("rms_norm_backward");
}

void rotary(const void* x, const float* cos, const float* sin, void* y, int64_t rows, int64_t heads, int64_t head_dim,
            int64_t positions, bool inverse, bool bf16, void* stream) {
  const auto s = static_cast<cudaStream_t>(stream);
  const int64_t pairs = rows * heads * (head_dim / 2);
  if (pairs == 0) return;
  const unsigned threads = 256, blocks = blocks_for(pairs, threads);
  const float sign = inverse ? -1.0f : 1.0f;
  if (bf16)
    rotary_kernel<__nv_bfloat16><<<blocks, threads, 0, s>>>(
        static_cast<const __nv_bfloat16*>(x), cos, sin, static_cast<__nv_bfloat16*>(y), pairs,
        static_cast<int>(heads), static_cast<int>(head_dim / 2), static_cast<int>(positions), sign);
  else
    rotary_kernel<float><<<blocks, threads, 0, s>>>(static_cast<const float*>(x), cos, sin, static_cast<float*>(y),
                                                    pairs, static_cast<int>(heads), static_cast<int>(head_dim / 2),
                                                    static_cast<int>(positions), sign);
  check_launch("rotary");
}

}  // namespace kbrl::lm::kernels
