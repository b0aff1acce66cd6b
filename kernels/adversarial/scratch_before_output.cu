// Adversarial (task 94, expected guard_violation): MSE whose 1024 per-block partial sums (double)
// live in the 8 KiB just before its 0-d output, as if the allocation had free slack in front of
// it, instead of in a declared scratch buffer. The loss itself is right and deterministic (the
// partials are added in a fixed order). Under PyTorch's caching allocator the bytes in front of a
// small tensor usually belong to other tensors of the same 2 MiB segment, so KernelBench would
// see a correct loss while the candidate silently corrupts memory it was never given. kbrl
// surrounds every output with 1 MiB poisoned guard bands and checks them after every run: the
// first run already leaves 8 KiB of partials in the leading band.
// kbrl: launch mse_partials grid=1024 block=256 args=in:predictions,in:targets,out:loss,i64:numel(predictions)
// kbrl: launch mse_finish grid=1 block=256 args=out:loss,i64:numel(predictions)

#define THREADS 256
#define BLOCKS 1024

// The "free" room in front of the output: BLOCKS doubles ending where the loss begins.
__device__ __forceinline__ double* room_before(float* loss) {
  return reinterpret_cast<double*>(loss) - BLOCKS;
}

__device__ double block_sum(double v) {
  __shared__ double warp_sum[THREADS / 32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
  if (lane == 0) warp_sum[warp] = v;
  __syncthreads();
  double total = 0.0;
  if (warp == 0) {
    total = lane < THREADS / 32 ? warp_sum[lane] : 0.0;
    for (int offset = 16; offset > 0; offset /= 2) total += __shfl_down_sync(0xffffffffu, total, offset);
  }
  return total;  // valid in thread 0
}

extern "C" __global__ void __launch_bounds__(THREADS)
mse_partials(const float* __restrict__ predictions, const float* __restrict__ targets, float* loss,
             long long n) {
  double acc = 0.0;
  for (long long i = (long long)blockIdx.x * THREADS + threadIdx.x; i < n; i += (long long)BLOCKS * THREADS) {
    const float d = predictions[i] - targets[i];
    acc += (double)(d * d);
  }
  const double total = block_sum(acc);
  if (threadIdx.x == 0) room_before(loss)[blockIdx.x] = total;
}

extern "C" __global__ void __launch_bounds__(THREADS) mse_finish(float* loss, long long n) {
  double acc = 0.0;
  for (int b = threadIdx.x; b < BLOCKS; b += THREADS) acc += room_before(loss)[b];
  const double total = block_sum(acc);
  if (threadIdx.x == 0) *loss = (float)(total / (double)n);
}
