// Adversarial (task 19, expected launch_error): a ReLU that stages its block's data in dynamic shared
// memory and whose plan asks for 1 GiB of it (an H100 offers 227 KiB per block). The plan parses; the
// driver refuses the attribute or the launch, and the harness must report launch_error.
// kbrl: launch relu_staged grid=min(cdiv(numel(x),1024),16384) block=256 smem=1073741824 args=in:x,out:y,i64:numel(x)

extern "C" __global__ void relu_staged(const float* __restrict__ x, float* __restrict__ y, long long n) {
  extern __shared__ float staged[];
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    staged[threadIdx.x] = x[i];
    const float v = staged[threadIdx.x];
    y[i] = v < 0.f ? 0.f : v;
  }
}
