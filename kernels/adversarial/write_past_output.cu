// Adversarial (task 19, expected guard_violation): a correct ReLU that also writes 16 bytes just past
// the end of y, as an off-by-one tail loop would. The write lands in memory that belongs to nobody
// the candidate was given (possibly another buffer of the harness) and raises no fault, so only the
// guard bands the harness places around every output, checked after the launch, catch it.
// kbrl: launch relu_forward grid=min(cdiv(numel(x),1024),16384) block=256 args=in:x,out:y,i64:numel(x)

extern "C" __global__ void relu_forward(const float* __restrict__ x, float* __restrict__ y, long long n) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float v = x[i];
    y[i] = v < 0.f ? 0.f : v;
  }
  if (blockIdx.x == 0 && threadIdx.x < 4) y[n + threadIdx.x] = 12345.0f;  // past the end
}
