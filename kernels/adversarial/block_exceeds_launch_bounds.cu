// Adversarial (task 19, expected launch_error): a launch the driver must refuse although its plan
// parses. (An absurd grid such as grid.y = 2^20 never gets this far: the plan parser enforces the
// hardware's grid and block limits.) The kernel promises __launch_bounds__(64) (at most 64 threads
// per block, so it may be compiled to use more registers per thread) and the plan launches it with
// 1024 threads per block; cuLaunchKernel fails, and the harness must report launch_error without
// taking the worker down.
// kbrl: launch relu_forward grid=min(cdiv(numel(x),1024),16384) block=1024 args=in:x,out:y,i64:numel(x)

extern "C" __global__ void __launch_bounds__(64)
relu_forward(const float* __restrict__ x, float* __restrict__ y, long long n) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float v = x[i];
    y[i] = v < 0.f ? 0.f : v;
  }
}
