// Known-good: task 51 (argmax over dim 1) of x:[B,R,K] = [128,4096,4095] -> y:[B,K] int64.
// Same layout as the sum: a block covers 32 columns of one batch and splits the rows over 8 warps.
// Ties go to the first index and NaN counts as the maximum (its first occurrence), as torch.argmax.
// kbrl: launch argmax_dim1 grid=cdiv(size(x,2),32),size(x,0) block=32,8 args=in:x,out:y,i32:size(x,1),i32:size(x,2)

#define COLS 32
#define SLICES 8

// Whether (va, ia) wins over (vb, ib) in torch.argmax's order.
__device__ __forceinline__ bool wins(float va, int ia, float vb, int ib) {
  const bool na = va != va, nb = vb != vb;
  if (na || nb) return na && (!nb || ia < ib);
  if (va != vb) return va > vb;
  return ia < ib;
}

extern "C" __global__ void __launch_bounds__(COLS * SLICES)
argmax_dim1(const float* __restrict__ x, long long* __restrict__ y, int rows, int cols) {
  __shared__ float best_value[SLICES][COLS];
  __shared__ int best_index[SLICES][COLS];
  const int k = blockIdx.x * COLS + threadIdx.x;
  const int b = blockIdx.y;
  float best = 0.f;
  int at = -1;  // -1: no element seen
  if (k < cols) {
    const float* in = x + (long long)b * rows * cols + k;
#pragma unroll 8
    for (int r = threadIdx.y; r < rows; r += SLICES) {
      const float v = in[(long long)r * cols];
      if (at < 0 || wins(v, r, best, at)) {
        best = v;
        at = r;
      }
    }
  }
  best_value[threadIdx.y][threadIdx.x] = best;
  best_index[threadIdx.y][threadIdx.x] = at;
  __syncthreads();
  if (threadIdx.y == 0 && k < cols) {
    for (int s = 1; s < SLICES; ++s) {
      const int i = best_index[s][threadIdx.x];
      const float v = best_value[s][threadIdx.x];
      if (i >= 0 && (at < 0 || wins(v, i, best, at))) {
        best = v;
        at = i;
      }
    }
    y[(long long)b * cols + k] = at;
  }
}
