// A small batch's projections (decoder_kernels.h's matvec): one warp per output column, the norm
// before and SwiGLU or the residual add after the product in the same kernel.
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

}  // namespace

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
