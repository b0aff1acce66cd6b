// Adversarial (task 22, expected wrong_answer by the stress trial): tanh as
// (e^2x - 1) / (e^2x + 1), one expf and a division instead of tanhf. On KernelBench's inputs
// (uniform on [0,1)) e^2x lies in [1, 7.4] and the result is right to about 1e-7 absolute:
// KernelBench's check and kbrl's five trials before the stress trial existed pass it. The stress
// trial draws the input uniform on [-100,100): above x = 44.36, expf(2x) overflows to inf and
// inf / inf is NaN (28% of the elements, where the reference is 1), and NaN fails the check.
// kbrl: launch tanh_forward grid=min(cdiv(numel(x),1024),16384) block=256 args=in:x,out:y,i64:numel(x)

extern "C" __global__ void tanh_forward(const float* __restrict__ x, float* __restrict__ y, long long n) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float e = expf(2.f * x[i]);
    y[i] = (e - 1.f) / (e + 1.f);
  }
}
