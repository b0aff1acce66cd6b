// Known-good: task 23 (softmax over dim 1 of x:[4096,393216]). One block per row (grid-stride over
// rows). Pass 1: each thread keeps an online (max, sum of exp(x - max)) over its elements; the block
// combines the pairs. Pass 2: y = exp(x - max) / sum. expf (not __expf) and fp32 sums of at most a
// few hundred terms per thread, combined in a tree.
// kbrl: launch softmax_rows grid=min(size(x,0),65535) block=512 args=in:x,out:y,i32:size(x,0),i32:size(x,1)

#define THREADS 512

struct MaxSum {
  float max;
  float sum;
};

// Merges two online-softmax states; a state with sum 0 holds no element.
__device__ __forceinline__ MaxSum merge(MaxSum a, MaxSum b) {
  if (a.sum == 0.f) return b;
  if (b.sum == 0.f) return a;
  const float m = fmaxf(a.max, b.max);
  return {m, a.sum * expf(a.max - m) + b.sum * expf(b.max - m)};
}

__device__ __forceinline__ void add(MaxSum& s, float v) {
  if (s.sum == 0.f) {
    s = {v, 1.f};
  } else if (v > s.max) {
    s.sum = s.sum * expf(s.max - v) + 1.f;
    s.max = v;
  } else {
    s.sum += expf(v - s.max);
  }
}

extern "C" __global__ void __launch_bounds__(THREADS)
softmax_rows(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
  __shared__ MaxSum warp_state[THREADS / 32];
  __shared__ MaxSum row_state;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (int row = blockIdx.x; row < rows; row += gridDim.x) {
    const float* in = x + (long long)row * cols;
    float* out = y + (long long)row * cols;
    const bool vector = (cols % 4 == 0) && ((((unsigned long long)in | (unsigned long long)out) & 15) == 0);

    MaxSum s = {0.f, 0.f};
    if (vector) {
      for (int i = threadIdx.x; i < cols / 4; i += THREADS) {
        const float4 v = reinterpret_cast<const float4*>(in)[i];
        add(s, v.x);
        add(s, v.y);
        add(s, v.z);
        add(s, v.w);
      }
    } else {
      for (int i = threadIdx.x; i < cols; i += THREADS) add(s, in[i]);
    }
    for (int offset = 16; offset > 0; offset /= 2) {
      MaxSum other = {__shfl_down_sync(0xffffffffu, s.max, offset),
                      __shfl_down_sync(0xffffffffu, s.sum, offset)};
      s = merge(s, other);
    }
    if (lane == 0) warp_state[warp] = s;
    __syncthreads();
    if (threadIdx.x == 0) {
      MaxSum total = warp_state[0];
      for (int w = 1; w < THREADS / 32; ++w) total = merge(total, warp_state[w]);
      row_state = total;
    }
    __syncthreads();
    const float m = row_state.max, sum = row_state.sum;

    if (vector) {
      for (int i = threadIdx.x; i < cols / 4; i += THREADS) {
        float4 v = reinterpret_cast<const float4*>(in)[i];
        v.x = expf(v.x - m) / sum;
        v.y = expf(v.y - m) / sum;
        v.z = expf(v.z - m) / sum;
        v.w = expf(v.w - m) / sum;
        reinterpret_cast<float4*>(out)[i] = v;
      }
    } else {
      for (int i = threadIdx.x; i < cols; i += THREADS) out[i] = expf(in[i] - m) / sum;
    }
    __syncthreads();  // row_state and warp_state are reused by the next row
  }
}
