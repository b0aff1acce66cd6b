// Known-good: task 38 (L1 normalization over dim 1 of x:[32768,65535]): y = x / mean(|x|, dim 1).
// One block per row (grid-stride over rows): per-thread fp32 partial sums of about 128 terms,
// combined in a tree, then one pass that divides. Rows of odd length: scalar, coalesced loads.
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
    for (int i = threadIdx.x; i < cols; i += THREADS) sum += fabsf(in[i]);
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
