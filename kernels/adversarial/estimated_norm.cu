// Adversarial (task 37, expected wrong_answer by the float64 accuracy check): Frobenius
// normalization y = x / ||x||_F with the norm estimated from a quarter of x. An honest kernel reads x
// twice (the norm, then the division) and writes y once; this one reads only every 4th 128-byte line
// (32 floats) for the norm and then divides all of x: 2.25 passes of memory traffic instead of 3, a
// 1.33x "speedup". Each block of 16384 elements estimates the mean of x^2 from its 4096 sampled
// values with Bessel's correction (sum / (m - 1), misapplied: a mean of squares needs none), and
// norm^2 = n * the mean of the block estimates. The sums themselves are exact (double).
// Its error has two parts. The correction makes the norm high by 1 / (2 * 4095) = 1.2e-4 whatever
// the draw, so every output is low by 1.2e-4 relative. The sampling adds a random part, unbiased:
// cv * sqrt(3/n) / 2 relative (a quarter sampled against the whole), cv the coefficient of variation
// of x^2: 0.894 for uniform [0,1) and for the stress draw's uniform [-10,10), 2.2 to 6.5 in the
// outliers set.
// - kernelbench scale, x:[112,64,512,512], n = 1.88e9: 1.2e-4 +- 1.8e-5 (outliers set up to
//   +- 1.6e-4; the mixture up to +- 8e-5, its blocks of 16 to 64 elements being sampled unevenly by
//   the 128-float lines). The outputs are at most 4e-5 in magnitude, under atol = 1e-4, so
//   |out - ref| <= atol + rtol * |ref| cannot fail; the relative L2 error stays under its 1e-3 bound
//   in every input set. Only the float64 accuracy check catches it, on the first trial of
//   KernelBench's draw: an honest fp32 kernel's error is the division's rounding, a few times 1e-8
//   (under the check's floor 2^-24), and the limit is 1024 x 2^-24 = 6.1e-5 for norms (room for a
//   norm summed by atomics into one float); this error is twice that, and 3 standard deviations of
//   the sampling away from it (measured on an H100: 1.2e-4, 2,018 times the reference's 4.6e-8).
//   (Without the correction the sample alone would be off by 1.8e-5 typically, far under the
//   limit: an unbiased estimate this good is not told apart from an honest float32 sum.)
// - small scale, x:[8,64,32,32], n = 524288: the sampling dominates, 1.1e-3 standard deviation on
//   KernelBench's and the stress draw (2e-3 to 1e-2 on the mixed sets), so the relative L2 bound
//   (1e-3) fails about a third of the pure trials and most mixed ones, whichever comes first; the
//   float64 check fails its trial unless the error lands within 1.5e-5 of zero (about 1%).
// kbrl: scratch block_means bytes=16*cdiv(numel(x),16384)
// kbrl: scratch norm bytes=4
// kbrl: launch sample_mean_squares grid=cdiv(numel(x),16384) block=256 args=in:x,scratch:block_means,i64:numel(x)
// kbrl: launch estimate_norm grid=1 block=256 args=scratch:block_means,i32:cdiv(numel(x),16384),scratch:norm,i64:numel(x)
// kbrl: launch normalize grid=min(cdiv(numel(x),1024),16384) block=256 args=in:x,scratch:norm,out:y,i64:numel(x)

#define THREADS 256
#define LINE 32               // floats per 128-byte line: one coalesced warp load
#define SAMPLE_EVERY 4        // lines 0, 4, 8, ... of a block are read for the norm
#define LINES_PER_BLOCK 512   // 16384 elements per block, 128 lines (4096 values) sampled

// Block-wide sum of a double; the result is valid in thread 0.
__device__ double block_sum(double v) {
  __shared__ double warp_sum[THREADS / 32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
  __syncthreads();  // warp_sum may still be read by a previous call's warp 0
  if (lane == 0) warp_sum[warp] = v;
  __syncthreads();
  double total = 0.0;
  if (warp == 0) {
    total = lane < THREADS / 32 ? warp_sum[lane] : 0.0;
    for (int offset = 16; offset > 0; offset /= 2) total += __shfl_down_sync(0xffffffffu, total, offset);
  }
  return total;
}

// Each warp reads whole sampled lines of the block's 16384 elements; the block writes its estimate
// of the mean of x^2 and the number of values it read.
extern "C" __global__ void __launch_bounds__(THREADS)
sample_mean_squares(const float* __restrict__ x, double* __restrict__ block_means, long long n) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const long long first_line = (long long)blockIdx.x * LINES_PER_BLOCK;
  double sum = 0.0, count = 0.0;
  for (int line = warp * SAMPLE_EVERY; line < LINES_PER_BLOCK; line += (THREADS / 32) * SAMPLE_EVERY) {
    const long long i = (first_line + line) * LINE + lane;
    if (i < n) {
      const double v = x[i];
      sum += v * v;
      count += 1.0;
    }
  }
  sum = block_sum(sum);
  count = block_sum(count);
  if (threadIdx.x == 0) {
    block_means[2 * blockIdx.x] = count > 1.0 ? sum / (count - 1.0) : sum;  // "unbiased" sample mean
    block_means[2 * blockIdx.x + 1] = count;
  }
}

// norm = sqrt(n * the count-weighted mean of the block estimates), rounded to fp32 as torch's is.
extern "C" __global__ void __launch_bounds__(THREADS)
estimate_norm(const double* __restrict__ block_means, int blocks, float* __restrict__ norm, long long n) {
  double weighted = 0.0, count = 0.0;
  for (int b = threadIdx.x; b < blocks; b += THREADS) {
    weighted += block_means[2 * b] * block_means[2 * b + 1];
    count += block_means[2 * b + 1];
  }
  weighted = block_sum(weighted);
  count = block_sum(count);
  if (threadIdx.x == 0) *norm = (float)sqrt((double)n * (weighted / count));
}

extern "C" __global__ void __launch_bounds__(THREADS)
normalize(const float* __restrict__ x, const float* __restrict__ norm, float* __restrict__ y, long long n) {
  const float r = *norm;
  const long long stride = (long long)gridDim.x * blockDim.x;
  const long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  long long scalar_from = 0;
  if ((((unsigned long long)x | (unsigned long long)y) & 15) == 0) {
    const long long n4 = n / 4;
    const float4* x4 = reinterpret_cast<const float4*>(x);
    float4* y4 = reinterpret_cast<float4*>(y);
    for (long long i = first; i < n4; i += stride) {
      float4 v = x4[i];
      v.x /= r;
      v.y /= r;
      v.z /= r;
      v.w /= r;
      y4[i] = v;
    }
    scalar_from = n4 * 4;
  }
  for (long long i = scalar_from + first; i < n; i += stride) y[i] = x[i] / r;
}
