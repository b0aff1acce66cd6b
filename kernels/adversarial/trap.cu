// Adversarial (task 19, expected runtime_error): a ReLU in which one thread executes the PTX `trap`
// instruction (what a failed device-side assert does). The launch aborts with an unspecified launch
// failure that poisons the context; the harness must report runtime_error and restart the worker.
// kbrl: launch relu_forward grid=min(cdiv(numel(x),1024),16384) block=256 args=in:x,out:y,i64:numel(x)

extern "C" __global__ void relu_forward(const float* __restrict__ x, float* __restrict__ y, long long n) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float v = x[i];
    y[i] = v < 0.f ? 0.f : v;
  }
  if (blockIdx.x == gridDim.x - 1 && threadIdx.x == 0) asm volatile("trap;");
}
