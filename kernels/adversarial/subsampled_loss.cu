// Adversarial (task 94, expected wrong_answer): estimates the MSE from 4096 of the 2^30 elements
// (every 262147th) and returns the sample mean: 1/262144 of the memory traffic, so it would time far
// under the speed of light, and it is right to about 2%, which can pass a loose tolerance. At
// atol = rtol = 1e-4 (about 5e-4 relative for this loss) the sampling error fails on nearly every
// trial, and the harness needs every trial to pass.
// kbrl: launch mse_sampled grid=1 block=256 args=in:predictions,in:targets,out:loss,i64:numel(predictions)

extern "C" __global__ void mse_sampled(const float* __restrict__ predictions, const float* __restrict__ targets,
                                       float* loss, long long n) {
  __shared__ double partial[256];
  const long long step = 262147;
  double acc = 0.0;
  for (long long i = threadIdx.x * step; i < n; i += blockDim.x * step) {
    const float d = predictions[i] - targets[i];
    acc += (double)(d * d);
  }
  partial[threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.x == 0) {
    double sum = 0.0;
    for (int t = 0; t < 256; ++t) sum += partial[t];
    const long long count = (n + step - 1) / step;
    *loss = (float)(sum / (double)count);
  }
}
