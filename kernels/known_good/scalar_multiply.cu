// Known-good: task 5 (matrix-scalar multiply), C = A * s over A:[65536,16384] (1.07e9 elements).
// The task's scalar s arrives as a float, as torch rounds the Python float for an fp32 tensor.
// Grid-stride, float4 when aligned, 64-bit indices.
// kbrl: launch scale_forward grid=min(cdiv(numel(A),1024),16384) block=256 args=in:A,scalar:s,out:C,i64:numel(A)

extern "C" __global__ void __launch_bounds__(256)
scale_forward(const float* __restrict__ a, float s, float* __restrict__ c, long long n) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  const long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  long long scalar_from = 0;
  if ((((unsigned long long)a | (unsigned long long)c) & 15) == 0) {
    const long long n4 = n / 4;
    const float4* a4 = reinterpret_cast<const float4*>(a);
    float4* c4 = reinterpret_cast<float4*>(c);
    for (long long i = first; i < n4; i += stride) {
      float4 v = a4[i];
      v.x *= s;
      v.y *= s;
      v.z *= s;
      v.w *= s;
      c4[i] = v;
    }
    scalar_from = n4 * 4;
  }
  for (long long i = scalar_from + first; i < n; i += stride) c[i] = a[i] * s;
}
