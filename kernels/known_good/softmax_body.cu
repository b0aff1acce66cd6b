// Known-good: task 23 (softmax over dim 1 of x:[4096,393216]) in the scaffold form. One block per
// row (the scaffold line; rows are grid-strided, so any grid is correct). Pass 1: each thread keeps
// an online (max, sum of exp(x - max)); warps combine by shuffles, then warp 0 combines the warps.
// Pass 2: y = exp(x - max) / sum. expf, not __expf: fp32 numerics like the reference.
struct MaxSum {
  float max;
  float sum;  // 0: no element yet
};

__device__ __forceinline__ MaxSum merge(MaxSum a, MaxSum b) {
  if (a.sum == 0.f) return b;
  if (b.sum == 0.f) return a;
  const float m = fmaxf(a.max, b.max);
  return {m, a.sum * expf(a.max - m) + b.sum * expf(b.max - m)};
}

__device__ __forceinline__ MaxSum warp_merge(MaxSum s) {
  for (int offset = 16; offset > 0; offset /= 2)
    s = merge(s, {__shfl_down_sync(0xffffffffu, s.max, offset),
                  __shfl_down_sync(0xffffffffu, s.sum, offset)});
  return s;
}
// kbrl: scaffold block=512 grid=size(x, 0)
__shared__ MaxSum warp_state[32];
__shared__ MaxSum row_state;
const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = (blockDim.x + 31) / 32;
for (long long row = blockIdx.x; row < x_size0; row += gridDim.x) {
  const float* in = x + row * x_size1;
  float* out = y + row * x_size1;
  MaxSum s = {0.f, 0.f};
  for (long long j = threadIdx.x; j < x_size1; j += blockDim.x) {
    const float v = in[j];
    if (s.sum == 0.f) {
      s = {v, 1.f};
    } else if (v > s.max) {
      s = {v, s.sum * expf(s.max - v) + 1.f};
    } else {
      s.sum += expf(v - s.max);
    }
  }
  s = warp_merge(s);
  if (lane == 0) warp_state[warp] = s;
  __syncthreads();
  if (warp == 0) {
    MaxSum t = lane < warps ? warp_state[lane] : MaxSum{0.f, 0.f};
    t = warp_merge(t);
    if (lane == 0) row_state = t;
  }
  __syncthreads();
  const float m = row_state.max, sum = row_state.sum;
  for (long long j = threadIdx.x; j < x_size1; j += blockDim.x) out[j] = expf(in[j] - m) / sum;
  __syncthreads();  // warp_state and row_state are reused by the next row
}
