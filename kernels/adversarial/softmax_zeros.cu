// Adversarial (task 23, expected wrong_answer): softmax over rows of 393216 columns has every value
// near 1/393216 = 2.5e-6, far below atol = 1e-4, so an all-zero output passes allclose (and
// KernelBench's check). The harness also bounds the relative L2 error of the whole output
// (||out - ref|| / ||ref|| <= 10 x rtol), which an all-zero output fails with 1.0.
// kbrl: launch zeros grid=min(cdiv(numel(y),1024),16384) block=256 args=out:y,i64:numel(y)

extern "C" __global__ void zeros(float* __restrict__ y, long long n) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) y[i] = 0.f;
}
