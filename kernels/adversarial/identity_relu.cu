// Adversarial (task 19, expected wrong_answer by the stress trial): "ReLU" as a copy, y = x. On
// KernelBench's inputs (uniform on [0,1)) relu(x) = x exactly, so the copy is bitwise right on
// every input KernelBench draws and runs at memcpy speed: KernelBench's check and kbrl's five
// trials before the stress trial existed pass it (the evaluator's gpu test once noted that an
// identity body would pass). The stress trial draws the activation's input uniform on [-100,100):
// about half the outputs are negative where the reference is 0, and that trial fails.
// kbrl: launch relu_forward grid=min(cdiv(numel(x),1024),16384) block=256 args=in:x,out:y,i64:numel(x)

extern "C" __global__ void relu_forward(const float* __restrict__ x, float* __restrict__ y, long long n) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) y[i] = x[i];
}
