// Adversarial (task 19, expected wrong_answer at the default tolerance): a ReLU that moves data through
// fp16 (half the bytes, as a "fast" kernel might store it), so every result carries fp16 rounding, up
// to 2^-12 relative (about 2.4e-4 absolute near 1.0). That passes the legacy atol = rtol = 1e-2 but not
// today's fp32 default of 1e-4, which the harness applies unless asked for the legacy setting.
// The conversions are PTX cvt instructions (what __float2half_rn and __half2float compile to), so the
// source needs no header.
// kbrl: launch relu_forward_half grid=min(cdiv(numel(x),1024),16384) block=256 args=in:x,out:y,i64:numel(x)

__device__ __forceinline__ float round_through_half(float v) {
  unsigned short h;
  float r;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(v));
  asm("cvt.f32.f16 %0, %1;" : "=f"(r) : "h"(h));
  return r;
}

extern "C" __global__ void relu_forward_half(const float* __restrict__ x, float* __restrict__ y, long long n) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float h = round_through_half(x[i]);
    y[i] = h < 0.f ? 0.f : h;
  }
}
