// Adversarial (task 49, expected wrong_answer by the stress trial): max over dim 1 of x:[B,R,K]
// whose running maximum starts at 0 instead of the first element (or -inf). On KernelBench's inputs
// (uniform on [0,1)) every column holds values >= 0, so the result is bitwise the true maximum, and
// KernelBench's check and kbrl's five trials before the stress trial existed pass it. Even inputs
// of both signs would not catch it: the maximum of 4096 (or 256) values of both signs is positive.
// The stress trial for extremum reductions shifts each reduced slice x[b, :, k] by -15, 0 or +15,
// so a third of the slices are all negative (values in [-25,-5)): their outputs come out 0 where
// the reference is about -5, and the trial fails.
// kbrl: launch max_dim1 grid=cdiv(size(x,2),32),size(x,0) block=32,8 args=in:x,out:y,i32:size(x,1),i32:size(x,2)

#define COLS 32
#define SLICES 8

extern "C" __global__ void __launch_bounds__(COLS * SLICES)
max_dim1(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
  __shared__ float partial[SLICES][COLS];
  const int k = blockIdx.x * COLS + threadIdx.x;
  float best = 0.f;  // "the inputs are non-negative": should be -inf
  if (k < cols) {
    const float* in = x + (long long)blockIdx.y * rows * cols + k;
    for (int r = threadIdx.y; r < rows; r += SLICES) best = fmaxf(best, in[(long long)r * cols]);
  }
  partial[threadIdx.y][threadIdx.x] = best;
  __syncthreads();
  if (threadIdx.y == 0 && k < cols) {
    for (int s = 1; s < SLICES; ++s) best = fmaxf(best, partial[s][threadIdx.x]);
    y[(long long)blockIdx.y * cols + k] = best;
  }
}
