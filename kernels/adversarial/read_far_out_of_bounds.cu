// Adversarial (task 19, expected runtime_error): a ReLU that also reads 4 TiB past its input (an
// index computed from a wrong stride). The address is mapped by no allocation, so the launch fails
// with an illegal-address fault, which is sticky: the harness must report runtime_error, discard the
// CUDA context (restart the worker) and go on with the next candidate.
// kbrl: launch relu_forward grid=min(cdiv(numel(x),1024),16384) block=256 args=in:x,out:y,i64:numel(x)

extern "C" __global__ void relu_forward(const float* __restrict__ x, float* __restrict__ y, long long n) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  const volatile float* far = x + (1ll << 40);
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float v = x[i] + 0.f * far[i];
    y[i] = v < 0.f ? 0.f : v;
  }
}
