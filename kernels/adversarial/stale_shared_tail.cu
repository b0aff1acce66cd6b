// Adversarial (task 47, expected wrong_answer): sum over dim 1 of x:[B,R,K] through shared-memory
// tiles of 24 rows x 32 columns whose loads skip rows past the end without zeroing their slots. R
// (4096, or 256 at small scale) leaves a ragged last tile of 16 rows, and its sum also adds the 8
// slots nobody loaded for that tile: a read of uninitialized shared memory, in a form whose outcome
// is predictable. Every block walks its tiles in order and the first is always full, so the stale
// slots hold this block's previous tile (rows R-24 .. R-17 are counted twice), the same in every
// run: on KernelBench's inputs each output is too large by about 4 (8 uniform terms), on the stress
// inputs off by up to 80, deterministically, and the tolerance check fails the first trial.
// KernelBench's atol = rtol = 1e-2 passes it at kernelbench scale (0.2% of sums near 2048).
// (With one tile per block, the ragged blocks would read whatever other blocks or the harness's
// own kernels last left in that shared memory, and whether two runs agree would depend on the
// harness's kernels between them: nondeterministic at one scale, wrong_answer at the other, as a
// trial on an H100 showed.)
// kbrl: launch sum_tiles grid=cdiv(size(x,2),32),size(x,0) block=32,8 args=in:x,out:y,i32:size(x,1),i32:size(x,2)

#define COLS 32
#define SLICES 8
#define ROWS_PER_THREAD 3
#define TILE_ROWS (SLICES * ROWS_PER_THREAD)  // 24

extern "C" __global__ void __launch_bounds__(COLS * SLICES)
sum_tiles(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
  __shared__ float tile[TILE_ROWS][COLS];
  const int k = blockIdx.x * COLS + threadIdx.x;
  const float* in = x + (long long)blockIdx.y * rows * cols + k;
  float acc = 0.f;
  for (int r0 = 0; r0 < rows; r0 += TILE_ROWS) {
    for (int j = 0; j < ROWS_PER_THREAD; ++j) {
      const int t = threadIdx.y + j * SLICES, r = r0 + t;
      if (k < cols && r < rows) tile[t][threadIdx.x] = in[(long long)r * cols];  // no else: no zero
    }
    __syncthreads();
    if (threadIdx.y == 0)
      for (int t = 0; t < TILE_ROWS; ++t) acc += tile[t][threadIdx.x];  // all 24, ragged or not
    __syncthreads();
  }
  if (threadIdx.y == 0 && k < cols) y[(long long)blockIdx.y * cols + k] = acc;
}
