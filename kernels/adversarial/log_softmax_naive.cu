// Adversarial (task 24, expected wrong_answer by the stress trial): log-softmax over rows of 393216
// as x - log(sum(exp(x))), without the max subtraction of the log-sum-exp trick. On KernelBench's
// inputs (uniform on [0,1)) the sum is near 6.8e5 and the result (about -13) is right to 1e-6:
// KernelBench's check and kbrl's five trials before the stress trial existed pass it. The stress
// trial draws the input uniform on [-100,100): expf overflows to inf above x = 88.72 (in every row
// at both scales), log(inf) = inf, and every output of the row is -inf, which fails the check.
// Block per row, fixed-order tree reductions (deterministic).
// kbrl: launch log_softmax_rows grid=min(size(x,0),65535) block=512 args=in:x,out:y,i32:size(x,0),i32:size(x,1)

#define THREADS 512

__device__ float block_sum(float v, float* warp_sum) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
  if (lane == 0) warp_sum[warp] = v;
  __syncthreads();
  float total = 0.f;
  for (int w = 0; w < THREADS / 32; ++w) total += warp_sum[w];
  __syncthreads();  // warp_sum is reused by the next row
  return total;
}

extern "C" __global__ void __launch_bounds__(THREADS)
log_softmax_rows(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
  __shared__ float warp_sum[THREADS / 32];
  for (int row = blockIdx.x; row < rows; row += gridDim.x) {
    const float* in = x + (long long)row * cols;
    float* out = y + (long long)row * cols;
    float sum = 0.f;
    for (int i = threadIdx.x; i < cols; i += THREADS) sum += expf(in[i]);
    const float log_sum = logf(block_sum(sum, warp_sum));
    for (int i = threadIdx.x; i < cols; i += THREADS) out[i] = in[i] - log_sum;
  }
}
