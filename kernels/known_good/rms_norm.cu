// Known-good: task 36 (RMSNorm over the channel dim of x:[N,C,H,W]):
//   y = x / sqrt(mean(x^2 over C) + eps), eps = 1e-5.
// One thread per (n, h, w) position, walking the C channels at stride H*W, so a warp reads 32
// consecutive positions of one channel (coalesced). The sum of C = 64 squares stays in fp32.
// kbrl: launch rms_norm_channels grid=min(cdiv(size(x,0)*size(x,2)*size(x,3),256),65535) block=256 args=in:x,out:y,i32:size(x,1),i64:size(x,2)*size(x,3),i64:size(x,0)*size(x,2)*size(x,3),f32:1e-5

extern "C" __global__ void __launch_bounds__(256)
rms_norm_channels(const float* __restrict__ x, float* __restrict__ y, int channels, long long plane,
                  long long positions, float eps) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long pos = (long long)blockIdx.x * blockDim.x + threadIdx.x; pos < positions; pos += stride) {
    const long long n = pos / plane, p = pos % plane;
    const long long base = n * channels * plane + p;
    float sum = 0.f;
    for (int c = 0; c < channels; ++c) {
      const float v = x[base + c * plane];
      sum += v * v;
    }
    const float rms = sqrtf(sum / (float)channels + eps);
    for (int c = 0; c < channels; ++c) y[base + c * plane] = x[base + c * plane] / rms;
  }
}
