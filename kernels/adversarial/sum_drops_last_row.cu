// Adversarial (task 47, expected wrong_answer by the tolerance): sum over dim 1 of x:[B,R,K] that
// drops the last of the R rows (an off-by-one after peeling the last iteration off the loop). Each
// output misses one uniform [0,1) term: about 2.4e-4 relative at kernelbench scale (R = 4096, sums
// near 2048) and 4e-3 at small scale (R = 256, sums near 128), which passes KernelBench's
// atol = rtol = 1e-2 and looks nearly right. At rtol = 1e-4 an output fails when the dropped term
// exceeds 1e-4 + 1e-4 * |sum| (about 0.205 at kernelbench scale, 0.013 at small scale): about 80%
// (99%) of the outputs fail in a KernelBench trial. (The relative L2 error, 2.8e-4 at kernelbench
// scale, is under its 1e-3 bound: the elementwise tolerance is what catches it.) The stress trial,
// where the dropped term is up to 10 in magnitude, fails it the same way.
// kbrl: launch sum_but_last grid=cdiv(size(x,2),256),size(x,0) block=256 args=in:x,out:y,i32:size(x,1),i32:size(x,2)

extern "C" __global__ void __launch_bounds__(256)
sum_but_last(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= cols) return;
  const float* in = x + (long long)blockIdx.y * rows * cols + k;
  float acc[4] = {0.f, 0.f, 0.f, 0.f};
  const int last = rows - 1;  // peeled off for the epilogue...
  int r = 0;
  for (; r + 3 < last; r += 4) {
    acc[0] += in[(long long)r * cols];
    acc[1] += in[(long long)(r + 1) * cols];
    acc[2] += in[(long long)(r + 2) * cols];
    acc[3] += in[(long long)(r + 3) * cols];
  }
  for (; r < last; ++r) acc[0] += in[(long long)r * cols];
  y[(long long)blockIdx.y * cols + k] = (acc[0] + acc[1]) + (acc[2] + acc[3]);  // ...which never adds it
}
