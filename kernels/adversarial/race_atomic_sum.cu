// Adversarial (task 47, expected nondeterministic): sum over dim 1 where 64 blocks per output column
// each add a partial sum of 64 rows into y with a float atomicAdd (after a first launch zeroes y).
// Each result is accurate to well within 1e-4, but float addition is not associative and the order in
// which the 64 concurrently running blocks reach each address changes from run to run, so across
// 524160 outputs some bits differ between two runs with near certainty. The harness runs every
// trial twice and requires bitwise-equal outputs.
// kbrl: launch zero_output grid=min(cdiv(numel(y),256),65535) block=256 args=out:y,i64:numel(y)
// kbrl: launch sum_atomic grid=cdiv(size(x,1),64),cdiv(size(x,2),256),size(x,0) block=256 args=in:x,out:y,i32:size(x,1),i32:size(x,2)

extern "C" __global__ void zero_output(float* y, long long n) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    y[i] = 0.f;
}

// blockIdx.x (the fastest-launched grid dimension) picks a chunk of 64 rows, so the blocks adding
// into the same outputs are launched together and race for the same addresses.
extern "C" __global__ void sum_atomic(const float* __restrict__ x, float* y, int rows, int cols) {
  const int k = blockIdx.y * blockDim.x + threadIdx.x;
  if (k >= cols) return;
  const int r0 = blockIdx.x * 64, r1 = min(r0 + 64, rows);
  const float* in = x + (long long)blockIdx.z * rows * cols + k;
  float partial = 0.f;
  for (int r = r0; r < r1; ++r) partial += in[(long long)r * cols];
  atomicAdd(&y[(long long)blockIdx.z * cols + k], partial);
}
