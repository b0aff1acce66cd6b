// Adversarial (task 19, expected compile_error): a correct ReLU that calls device printf for every
// element: 1.6e9 lines would flood the worker's stdout (and the device printf buffer makes the launch
// crawl). NVRTC compiles it fine; the harness's compile stage must refuse PTX that calls vprintf
// (device printf), so the flood never runs, and report compile_error.
// kbrl: launch relu_forward grid=min(cdiv(numel(x),1024),16384) block=256 args=in:x,out:y,i64:numel(x)

extern "C" __global__ void relu_forward(const float* __restrict__ x, float* __restrict__ y, long long n) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float v = x[i];
    y[i] = v < 0.f ? 0.f : v;
    printf("y[%lld] = %f\n", i, y[i]);
  }
}
