// Adversarial (task 19, expected compile_error by the compile time limit): a ReLU that adds zero times
// a call tree of 2^15 force-inlined copies of a small function (a template that calls itself twice
// per level). The front end instantiates only 15 templates, but inlining builds one huge function that
// NVVM's optimizer and ptxas then take far longer than any sane compile budget on (2^12 copies take
// about 8 s, 2^14 more than 2 minutes; memory stays a few hundred MB). A `#pragma unroll` of a loop
// with 10^7 iterations is no bomb: NVVM's unroll thresholds ignore the pragma. The harness must bound
// compile time (and report compile_error), or one candidate stalls a compile worker indefinitely.
// kbrl: launch relu_forward grid=min(cdiv(numel(x),1024),16384) block=256 args=in:x,out:y,i64:numel(x)

template <int Depth>
struct Expand {
  static __device__ __forceinline__ float run(float v) {
    return Expand<Depth - 1>::run(__sinf(v)) + Expand<Depth - 1>::run(v * 1.0001f + 0.5f);
  }
};

template <>
struct Expand<0> {
  static __device__ __forceinline__ float run(float v) { return v; }
};

extern "C" __global__ void relu_forward(const float* __restrict__ x, float* __restrict__ y, long long n) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float v = x[i];
    y[i] = (v < 0.f ? 0.f : v) + 0.f * Expand<15>::run(v);
  }
}
