// Adversarial (task 19, expected guard_violation): a correct ReLU that also writes 16 bytes of 0xFF
// just past the end of y: the bytes the harness poisons outputs with (a NaN for float32), which is
// what a kernel writes there when it reads past its input into a freed, poisoned harness buffer and
// copies what it read (ReLU keeps a NaN's bits). Guard bands poisoned with those same bytes would
// not see it; the guards' own patterns, drawn anew before every run, do.
// kbrl: launch relu_forward grid=min(cdiv(numel(x),1024),16384) block=256 args=in:x,out:y,i64:numel(x)

extern "C" __global__ void relu_forward(const float* __restrict__ x, float* __restrict__ y, long long n) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float v = x[i];
    y[i] = v < 0.f ? 0.f : v;
  }
  if (blockIdx.x == 0 && threadIdx.x < 4) reinterpret_cast<unsigned int*>(y)[n + threadIdx.x] = 0xFFFFFFFFu;
}
