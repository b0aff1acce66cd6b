// Adversarial (task 19, expected launch_error): a ReLU that stages its block's data in shared memory:
// 48 KiB of static shared memory, and a plan asking for 227 KiB of dynamic shared memory (the most
// a plan may ask for, kbrl::plan_limits::kMaxSharedBytes). Each fits alone; together they exceed the
// 227 KiB a block can have on an H100. The plan parses; the driver refuses the attribute or the
// launch, and the harness must report launch_error.
// kbrl: launch relu_staged grid=min(cdiv(numel(x),1024),16384) block=256 smem=227*1024 args=in:x,out:y,i64:numel(x)

extern "C" __global__ void relu_staged(const float* __restrict__ x, float* __restrict__ y, long long n) {
  __shared__ float fixed[12288];  // 48 KiB of static shared memory
  extern __shared__ float staged[];
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    staged[threadIdx.x] = x[i];
    fixed[threadIdx.x * 48] = staged[threadIdx.x];
    const float v = fixed[threadIdx.x * 48];
    y[i] = v < 0.f ? 0.f : v;
  }
}
