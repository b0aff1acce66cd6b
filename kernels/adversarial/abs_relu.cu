// Adversarial (task 19, expected wrong_answer by the stress trial): "ReLU" as |x|, one AND that
// clears the sign bit (what a kernel that "drops the branch" may write). On KernelBench's inputs
// (uniform on [0,1), no sign bit set) |x| = relu(x) bitwise, so KernelBench's check and kbrl's
// five trials before the stress trial existed pass it. The stress trial draws the input uniform on
// [-100,100): every negative input gives |x| > 0 where the reference is 0, and that trial fails.
// kbrl: launch relu_forward grid=min(cdiv(numel(x),1024),16384) block=256 args=in:x,out:y,i64:numel(x)

extern "C" __global__ void relu_forward(const float* __restrict__ x, float* __restrict__ y, long long n) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
    y[i] = __int_as_float(__float_as_int(x[i]) & 0x7fffffff);
}
