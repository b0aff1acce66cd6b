// The fused step's sampler (decoder_kernels.h's sample_tokens): a block per row of logits.
#include "decoder_kernels.h"
#include "kernel_math.cuh"

#include <cuda_bf16.h>
#include <cuda_runtime.h>


namespace kbrl::lm::kernels {
namespace {

using namespace math;

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

}  // namespace

void sample_tokens(const float* logits, int64_t n, int64_t vocab, float temperature, bool greedy,
                   const float* uniforms, const int64_t* step, int64_t max_tokens, int64_t* chosen, int64_t* tokens,
                   float* logprobs, void* stream) {
  sample_kernel<<<static_cast<unsigned>(n), kSampleThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      logits, static_cast<int>(vocab), temperature, greedy, uniforms, step, static_cast<int>(max_tokens), chosen,
      tokens, logprobs);
  check_launch("sample_tokens");
}

}  // namespace kbrl::lm::kernels
