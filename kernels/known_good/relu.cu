// Known-good: task 19 (ReLU), y = relu(x) over x:[4096,393216] (1.6e9 elements: 64-bit indices).
// One grid-stride pass, float4 loads and stores when both pointers are 16-byte aligned. NaN passes
// through as in torch.relu.
// kbrl: launch relu_forward grid=min(cdiv(numel(x),1024),16384) block=256 args=in:x,out:y,i64:numel(x)

__device__ __forceinline__ float relu(float v) { return v < 0.f ? 0.f : v; }

extern "C" __global__ void __launch_bounds__(256)
relu_forward(const float* __restrict__ x, float* __restrict__ y, long long n) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  const long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  long long scalar_from = 0;
  if ((((unsigned long long)x | (unsigned long long)y) & 15) == 0) {
    const long long n4 = n / 4;
    const float4* x4 = reinterpret_cast<const float4*>(x);
    float4* y4 = reinterpret_cast<float4*>(y);
    for (long long i = first; i < n4; i += stride) {
      float4 v = x4[i];
      v.x = relu(v.x);
      v.y = relu(v.y);
      v.z = relu(v.z);
      v.w = relu(v.w);
      y4[i] = v;
    }
    scalar_from = n4 * 4;
  }
  for (long long i = scalar_from + first; i < n; i += stride) y[i] = relu(x[i]);
}
