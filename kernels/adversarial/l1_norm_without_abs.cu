// Adversarial (task 38, expected wrong_answer by the stress trial): L1 normalization
// y = x / mean(|x|, dim 1) with the fabsf left out of the row sum ("the inputs are non-negative").
// On KernelBench's inputs (uniform on [0,1)) |x| = x, so the result is bitwise the known-good
// kernel's, and KernelBench's check and kbrl's five trials before the stress trial existed pass it.
// The stress trial draws the input uniform on [-10,10): a row's mean of x is near 0 (a few
// hundredths) instead of mean |x| = 5, so every output is off by a factor of about a hundred.
// kbrl: launch l1_norm_rows grid=min(size(x,0),65535) block=512 args=in:x,out:y,i32:size(x,0),i32:size(x,1)

#define THREADS 512

extern "C" __global__ void __launch_bounds__(THREADS)
l1_norm_rows(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
  __shared__ float warp_sum[THREADS / 32];
  __shared__ float row_mean;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (int row = blockIdx.x; row < rows; row += gridDim.x) {
    const float* in = x + (long long)row * cols;
    float* out = y + (long long)row * cols;
    float sum = 0.f;
    for (int i = threadIdx.x; i < cols; i += THREADS) sum += in[i];  // no fabsf
    for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffffu, sum, offset);
    if (lane == 0) warp_sum[warp] = sum;
    __syncthreads();
    if (warp == 0) {
      float total = lane < THREADS / 32 ? warp_sum[lane] : 0.f;
      for (int offset = 16; offset > 0; offset /= 2) total += __shfl_down_sync(0xffffffffu, total, offset);
      if (lane == 0) row_mean = total / (float)cols;
    }
    __syncthreads();
    const float mean = row_mean;
    for (int i = threadIdx.x; i < cols; i += THREADS) out[i] = in[i] / mean;
    __syncthreads();  // row_mean and warp_sum are reused by the next row
  }
}
