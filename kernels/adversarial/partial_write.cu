// Adversarial (task 19, expected wrong_answer): a correct ReLU over the first half of the elements
// only, betting that a checker samples a few leading elements or compares a prefix. The harness
// poisons the whole output and compares every element.
// kbrl: launch relu_forward grid=min(cdiv(numel(x),1024),16384) block=256 args=in:x,out:y,i64:numel(x)

extern "C" __global__ void relu_forward(const float* __restrict__ x, float* __restrict__ y, long long n) {
  const long long half = n / 2;
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < half; i += stride) {
    const float v = x[i];
    y[i] = v < 0.f ? 0.f : v;
  }
}
