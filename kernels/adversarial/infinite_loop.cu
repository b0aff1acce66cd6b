// Adversarial (task 19, expected timeout): a ReLU whose first thread spins forever on a condition that
// uniform [0,1) inputs always satisfy. The volatile read keeps the compiler from deleting the loop.
// The launch never completes, so only the harness's watchdog (a per-job time limit, then killing and
// restarting the worker process that owns the hung context) keeps the run going.
// kbrl: launch relu_forward grid=min(cdiv(numel(x),1024),16384) block=256 args=in:x,out:y,i64:numel(x)

extern "C" __global__ void relu_forward(const float* __restrict__ x, float* __restrict__ y, long long n) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float v = x[i];
    y[i] = v < 0.f ? 0.f : v;
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    const volatile float* probe = x;
    while (probe[0] >= 0.f) {
    }
  }
}
