// Adversarial (task 41, expected wrong_answer by the stress trial): MaxPool1d (kernel 8, stride 1,
// padding 4, dilation 3) whose running maximum starts at 0 instead of -inf. On KernelBench's inputs
// (uniform on [0,1)) every window holds a value >= 0, so the result is bitwise the true maximum,
// and KernelBench's check and kbrl's five trials before the stress trial existed pass it. The
// stress trial draws uniform [-10,10) values and shifts each (n, c) channel by -15, 0 or +15: in
// the third of the channels shifted down every window is negative and comes out 0 where the
// reference is about -7 (and even unshifted, 1 in 256 windows is all negative).
// kbrl: launch max_pool1d_k8s1p4d3 grid=min(cdiv(numel(y),256),65535) block=256 args=in:x,out:y,i32:size(x,2),i32:size(y,2),i64:numel(y)

#define KERNEL 8
#define STRIDE 1
#define PAD 4
#define DILATION 3

extern "C" __global__ void __launch_bounds__(256)
max_pool1d_k8s1p4d3(const float* __restrict__ x, float* __restrict__ y, int length, int out_length,
                    long long total) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
    const int o = (int)(i % out_length);
    const float* in = x + (i / out_length) * length;  // plane n * C + c
    float best = 0.f;  // "inputs are non-negative": should be -inf
    for (int j = 0; j < KERNEL; ++j) {
      const int at = o * STRIDE - PAD + j * DILATION;
      if (at >= 0 && at < length) best = fmaxf(best, in[at]);
    }
    y[i] = best;
  }
}
