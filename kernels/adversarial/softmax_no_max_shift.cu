// Adversarial (task 23, expected wrong_answer by the stress trial): softmax over rows of 393216
// as exp(x) / sum(exp(x)), without subtracting the row maximum first (one pass fewer). On
// KernelBench's inputs (uniform on [0,1)) exp(x) lies in [1,e) and a row's sum near 6.8e5 is far
// from overflow, so the result is right to about 1e-6 relative: KernelBench's check and kbrl's five
// trials before the stress trial existed pass it. The stress trial draws softmax inputs uniform on
// [-100,100): expf overflows to inf above x = 88.72 (5.6% of the values, so in every row at both
// scales), the row sum is inf, and exp(x) / inf gives NaN where x overflowed: NaN fails the check.
// Block per row, fixed-order tree reductions (deterministic).
// kbrl: launch softmax_rows grid=min(size(x,0),65535) block=512 args=in:x,out:y,i32:size(x,0),i32:size(x,1)

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
softmax_rows(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
  __shared__ float warp_sum[THREADS / 32];
  for (int row = blockIdx.x; row < rows; row += gridDim.x) {
    const float* in = x + (long long)row * cols;
    float* out = y + (long long)row * cols;
    float sum = 0.f;
    for (int i = threadIdx.x; i < cols; i += THREADS) sum += expf(in[i]);  // no max subtracted
    sum = block_sum(sum, warp_sum);
    for (int i = threadIdx.x; i < cols; i += THREADS) out[i] = expf(in[i]) / sum;
  }
}
