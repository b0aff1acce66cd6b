// Adversarial (task 19, expected wrong_answer): a correct ReLU except for one NaN in the middle of the
// output. A tolerance check written as `max(abs(ref - out)) <= tol` or `!(err > tol)` lets NaN through,
// because every comparison with NaN is false; the harness must reject NaN and Inf explicitly.
// kbrl: launch relu_forward grid=min(cdiv(numel(x),1024),16384) block=256 args=in:x,out:y,i64:numel(x)

extern "C" __global__ void relu_forward(const float* __restrict__ x, float* __restrict__ y, long long n) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float v = x[i];
    y[i] = i == n / 2 ? __int_as_float(0x7fc00000) : (v < 0.f ? 0.f : v);
  }
}
