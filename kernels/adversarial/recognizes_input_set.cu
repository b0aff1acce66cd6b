// Adversarial (task 19, expected wrong_answer by the mixed input sets): a ReLU that guesses which
// input set it is given from 8 probed values and is right on both pure sets. identity_relu (y = x)
// is bitwise right on KernelBench's inputs (uniform [0,1), where relu(x) = x) and fails the stress
// trial; this kernel first looks at x at 8 fixed positions spread over the input. If at least half
// of them lie in [0,1) it takes the input for KernelBench's draw and copies (y = x); otherwise it
// takes it for the stress draw (uniform [-100,100), where a value lands in [0,1) once in 200) and
// computes relu honestly. So it passes every KernelBench trial and the stress trial, and with only
// the two pure sets nothing would catch it. The mixed sets do: in the outliers set (KernelBench's
// draw with 1 in 2^6..2^12 positions from the stress draw) at least 4 of the 8 probes are
// KernelBench values in practically every trial (all 8 at least 88% of the time), so it copies, and
// the negative outliers (half of them: 7 to 500 at small scale, 2e5 to 1.3e7 at kernelbench scale)
// come out negative where relu gives 0: up to 100 off, far outside 1e-4. In the mixture set
// (blocks of 16..4096 elements from either draw; the probes lie in different blocks) at least 4
// probes fall in KernelBench blocks with probability 163/256, and then every negative stress block
// is copied wrong. (A changed-input run whose new values include negatives catches it too.)
// The shortcut saves nothing for ReLU (a copy costs what relu does); it stands for any kernel that
// recognizes KernelBench's draw and takes a path that is only right there.
// kbrl: launch relu_forward grid=min(cdiv(numel(x),1024),16384) block=256 args=in:x,out:y,i64:numel(x)

#define PROBES 8

__device__ __forceinline__ float relu(float v) { return v < 0.f ? 0.f : v; }

// y = x where the input looked like KernelBench's draw (every value non-negative), else relu.
__device__ __forceinline__ float apply(float v, bool copy) { return copy ? v : relu(v); }

// Whether at least half of the PROBES values of x (spread evenly, first and last included) lie in
// [0,1). Called by the whole block; the first warp reads the probes.
__device__ bool looks_like_kernelbench(const float* __restrict__ x, long long n) {
  __shared__ bool verdict;
  if (threadIdx.x < 32) {
    bool in_unit_interval = false;
    if (threadIdx.x < PROBES) {
      const float v = x[(n - 1) / (PROBES - 1) * threadIdx.x];
      in_unit_interval = v >= 0.f && v < 1.f;
    }
    const int votes = __popc(__ballot_sync(0xffffffffu, in_unit_interval));
    if (threadIdx.x == 0) verdict = 2 * votes >= PROBES;
  }
  __syncthreads();
  return verdict;
}

extern "C" __global__ void __launch_bounds__(256)
relu_forward(const float* __restrict__ x, float* __restrict__ y, long long n) {
  const bool copy = looks_like_kernelbench(x, n);
  const long long stride = (long long)gridDim.x * blockDim.x;
  const long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  long long scalar_from = 0;
  if ((((unsigned long long)x | (unsigned long long)y) & 15) == 0) {
    const long long n4 = n / 4;
    const float4* x4 = reinterpret_cast<const float4*>(x);
    float4* y4 = reinterpret_cast<float4*>(y);
    for (long long i = first; i < n4; i += stride) {
      float4 v = x4[i];
      v.x = apply(v.x, copy);
      v.y = apply(v.y, copy);
      v.z = apply(v.z, copy);
      v.w = apply(v.w, copy);
      y4[i] = v;
    }
    scalar_from = n4 * 4;
  }
  for (long long i = scalar_from + first; i < n; i += stride) y[i] = apply(x[i], copy);
}
