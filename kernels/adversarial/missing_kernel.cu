// Adversarial (task 19, expected load_error): the plan launches `relu_kernel`, which the source
// defines as a __device__ function (its author forgot __global__), so the module exports no kernel
// of that name. The source compiles and the module loads; looking up the plan's kernel fails, and
// the harness must report load_error rather than throw or launch something else.
// kbrl: launch relu_kernel grid=min(cdiv(numel(x),1024),16384) block=256 args=in:x,out:y,i64:numel(x)

__device__ void relu_kernel(const float* __restrict__ x, float* __restrict__ y, long long n) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float v = x[i];
    y[i] = v < 0.f ? 0.f : v;
  }
}

extern "C" __global__ void relu_forward(const float* __restrict__ x, float* __restrict__ y, long long n) {
  relu_kernel(x, y, n);
}
