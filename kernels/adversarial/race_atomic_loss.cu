// Adversarial (task 94, expected nondeterministic): MSE loss where every warp adds its fp32 partial
// sum into one float accumulator with atomicAdd (32768 contended atomics on a single address, after a
// launch that zeroes it), then a last launch divides by the count. The result is accurate to about
// 1e-5 relative, but the order in which the warps' atomics reach the address changes from run to
// run and float addition is not associative, so two runs on the same inputs differ in their low
// bits. The harness runs each trial twice and requires bitwise-equal outputs.
// kbrl: scratch total bytes=4
// kbrl: launch zero_total grid=1 block=1 args=scratch:total
// kbrl: launch mse_atomic grid=4096 block=256 args=in:predictions,in:targets,scratch:total,i64:numel(predictions)
// kbrl: launch mse_divide grid=1 block=1 args=scratch:total,out:loss,i64:numel(predictions)

extern "C" __global__ void zero_total(float* total) { *total = 0.f; }

extern "C" __global__ void mse_atomic(const float* __restrict__ predictions, const float* __restrict__ targets,
                                      float* total, long long n) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  float acc = 0.f;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float d = predictions[i] - targets[i];
    acc += d * d;
  }
  for (int offset = 16; offset > 0; offset /= 2) acc += __shfl_down_sync(0xffffffffu, acc, offset);
  if (threadIdx.x % 32 == 0) atomicAdd(total, acc);
}

extern "C" __global__ void mse_divide(const float* total, float* loss, long long n) {
  *loss = (float)((double)*total / (double)n);
}
