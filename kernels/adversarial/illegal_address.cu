// Adversarial (task 19, expected runtime_error): a ReLU that also stores through a pointer made from
// an integer (a "debug counter" at a fixed address). The store faults with an illegal address; the
// error is sticky, so the harness must report runtime_error and replace the worker's CUDA context
// before the next candidate.
// kbrl: launch relu_forward grid=min(cdiv(numel(x),1024),16384) block=256 args=in:x,out:y,i64:numel(x)

extern "C" __global__ void relu_forward(const float* __restrict__ x, float* __restrict__ y, long long n) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float v = x[i];
    y[i] = v < 0.f ? 0.f : v;
  }
  if (threadIdx.x == 0) {
    volatile unsigned int* counter = reinterpret_cast<volatile unsigned int*>(0x10ull);
    *counter = blockIdx.x;
  }
}
