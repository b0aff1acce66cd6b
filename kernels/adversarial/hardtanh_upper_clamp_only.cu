// Adversarial (task 32, expected wrong_answer by the stress trial): HardTanh clamps to [-1,1]; this
// kernel keeps only the upper clamp, y = min(x, 1), because the lower one never acts on
// KernelBench's inputs (uniform on [0,1), where both give y = x bitwise). KernelBench's check and
// kbrl's five trials before the stress trial existed pass it. The stress trial draws the input
// uniform on [-100,100): every input below -1 comes out below -1 where the reference is -1.
// kbrl: launch hardtanh_forward grid=min(cdiv(numel(x),1024),16384) block=256 args=in:x,out:y,i64:numel(x)

extern "C" __global__ void hardtanh_forward(const float* __restrict__ x, float* __restrict__ y, long long n) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
    y[i] = fminf(x[i], 1.f);  // "inputs are never below -1"
}
