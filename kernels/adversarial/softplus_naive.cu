// Adversarial (task 29, expected wrong_answer by the stress trial): softplus as log(1 + exp(x)),
// the textbook formula, where PyTorch returns x above its threshold (20) and log1p(exp(x)) below.
// On KernelBench's inputs (uniform on [0,1)) the two agree to about 1e-7: KernelBench's check and
// kbrl's five trials before the stress trial existed pass it. The stress trial draws the input
// uniform on [-100,100): expf overflows to inf above x = 88.72 (5.6% of the elements), log(inf) is
// inf where the reference is x, and Inf fails the check.
// kbrl: launch softplus_forward grid=min(cdiv(numel(x),1024),16384) block=256 args=in:x,out:y,i64:numel(x)

extern "C" __global__ void softplus_forward(const float* __restrict__ x, float* __restrict__ y, long long n) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
    y[i] = logf(1.f + expf(x[i]));
}
