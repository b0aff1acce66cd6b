// Known-good: task 47 (sum over dim 1, keepdim) of x:[B,R,K] = [128,4096,4095] -> y:[B,1,K].
// A block covers 32 consecutive columns k of one batch b (each warp reads 128 contiguous bytes per
// row) and splits the R rows over its 8 warps; each thread keeps four fp32 accumulators (about 128
// terms each), and the 8 partials are added in shared memory.
// kbrl: launch sum_dim1 grid=cdiv(size(x,2),32),size(x,0) block=32,8 args=in:x,out:y,i32:size(x,1),i32:size(x,2)

#define COLS 32
#define SLICES 8

extern "C" __global__ void __launch_bounds__(COLS * SLICES)
sum_dim1(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
  __shared__ float partial[SLICES][COLS];
  const int k = blockIdx.x * COLS + threadIdx.x;
  const int b = blockIdx.y;
  float acc[4] = {0.f, 0.f, 0.f, 0.f};
  if (k < cols) {
    const float* in = x + (long long)b * rows * cols + k;
    int r = threadIdx.y;
    for (; r + 3 * SLICES < rows; r += 4 * SLICES) {
      acc[0] += in[(long long)r * cols];
      acc[1] += in[(long long)(r + SLICES) * cols];
      acc[2] += in[(long long)(r + 2 * SLICES) * cols];
      acc[3] += in[(long long)(r + 3 * SLICES) * cols];
    }
    for (; r < rows; r += SLICES) acc[0] += in[(long long)r * cols];
  }
  partial[threadIdx.y][threadIdx.x] = (acc[0] + acc[1]) + (acc[2] + acc[3]);
  __syncthreads();
  if (threadIdx.y == 0 && k < cols) {
    float total = 0.f;
    for (int s = 0; s < SLICES; ++s) total += partial[s][threadIdx.x];
    y[(long long)b * cols + k] = total;
  }
}
