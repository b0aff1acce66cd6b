// Known-good: task 94 (MSE loss mean((predictions - targets)^2) -> 0-d loss) over 2^30 elements.
// Launch 1: 1024 blocks stream the inputs (float4 when aligned); each thread squares the fp32
// difference as torch does and accumulates in double, and each block writes its double partial to
// the scratch buffer. Launch 2: one block adds the 1024 partials in double and divides by the count.
// Double accumulation keeps the sum of 2^30 terms exact to about 1e-12 relative.
// kbrl: scratch partials bytes=8*1024
// kbrl: launch mse_partial grid=1024 block=256 args=in:predictions,in:targets,scratch:partials,i64:numel(predictions)
// kbrl: launch mse_finalize grid=1 block=256 args=scratch:partials,i32:1024,out:loss,i64:numel(predictions)

#define THREADS 256

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

__device__ __forceinline__ float squared_difference(float p, float t) {
  const float d = p - t;
  return d * d;
}

extern "C" __global__ void __launch_bounds__(THREADS)
mse_partial(const float* __restrict__ predictions, const float* __restrict__ targets,
            double* __restrict__ partials, long long n) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  const long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  double acc = 0.0;
  long long scalar_from = 0;
  if ((((unsigned long long)predictions | (unsigned long long)targets) & 15) == 0) {
    const long long n4 = n / 4;
    const float4* p4 = reinterpret_cast<const float4*>(predictions);
    const float4* t4 = reinterpret_cast<const float4*>(targets);
    for (long long i = first; i < n4; i += stride) {
      const float4 p = p4[i], t = t4[i];
      acc += (double)squared_difference(p.x, t.x) + (double)squared_difference(p.y, t.y) +
             (double)squared_difference(p.z, t.z) + (double)squared_difference(p.w, t.w);
    }
    scalar_from = n4 * 4;
  }
  for (long long i = scalar_from + first; i < n; i += stride)
    acc += (double)squared_difference(predictions[i], targets[i]);
  const double total = block_sum(acc);
  if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

extern "C" __global__ void __launch_bounds__(THREADS)
mse_finalize(const double* __restrict__ partials, int count, float* __restrict__ loss, long long n) {
  double acc = 0.0;
  for (int i = threadIdx.x; i < count; i += THREADS) acc += partials[i];
  const double total = block_sum(acc);
  if (threadIdx.x == 0) *loss = (float)(total / (double)n);
}
