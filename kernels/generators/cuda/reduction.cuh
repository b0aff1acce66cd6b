// The reduction generator's device code (kernels/generators/reduction.cpp). Sections, in source
// order: header; the operation's helpers: sum_fp32 or sum_fp16 (Acc, k_init, k_add, k_out,
// k_merge), max_ops or min_ops, arg_better (k_better, for argmax and argmin); constants (kUnroll,
// kAcc). The main kernel kbrl_reduce: one of reduce_head (float y, scale), reduce_head_arg
// (int64 y), reduce_head_partials, reduce_head_partials_arg (two_kernel's partials in scratch);
// tail_dropped; rows_all or rows_chunked (the thread's rows); scan_value with @MERGE@ = merge_1,
// merge_2 or merge_4 (its accumulators combined), or scan_arg; for split_rows and two_kernel
// slices_value or slices_arg (the row slices combined in shared memory); then store_value,
// store_arg, store_partials or store_partials_arg. two_kernel's combine kernel: combine_head or
// combine_head_arg, combine_dropped, then combine_value or combine_arg.
//@section header
// kbrl reduction generator: @OP@ over dim 1 of x:[B,R,K] (K contiguous).
// variant=@VARIANT@ unroll=@UNROLL@ accumulators=@ACC@ cache_hint=@HINT@ precision=@PRECISION@ tail=@TAIL@
// blockDim = (columns, row slices); gridDim.x covers K by blockDim.x columns.
//@section sum_fp16
#include <cuda_fp16.h>

// precision=fp16_compute (unsafe): the running sums are __half.
typedef __half Acc;
__device__ __forceinline__ Acc k_init() { return __float2half(0.0f); }
__device__ __forceinline__ Acc k_add(Acc a, float v) { return __hadd(a, __float2half(v)); }
__device__ __forceinline__ float k_out(Acc a) { return __half2float(a); }
__device__ __forceinline__ float k_merge(float a, float b) { return a + b; }
//@section sum_fp32
typedef float Acc;  // fp32 accumulation
__device__ __forceinline__ Acc k_init() { return 0.0f; }
__device__ __forceinline__ Acc k_add(Acc a, float v) { return a + v; }
__device__ __forceinline__ float k_out(Acc a) { return a; }
__device__ __forceinline__ float k_merge(float a, float b) { return a + b; }
//@section max_ops
typedef float Acc;
// NaN propagates (as torch): once the running value is NaN it stays NaN.
__device__ __forceinline__ Acc k_init() { return __int_as_float(0xff800000)  /* -inf */; }
__device__ __forceinline__ Acc k_add(Acc a, float v) { return (v > a || v != v) ? v : a; }
__device__ __forceinline__ float k_out(Acc a) { return a; }
__device__ __forceinline__ float k_merge(float a, float b) { return k_add(a, b); }
//@section min_ops
typedef float Acc;
// NaN propagates (as torch): once the running value is NaN it stays NaN.
__device__ __forceinline__ Acc k_init() { return __int_as_float(0x7f800000)  /* +inf */; }
__device__ __forceinline__ Acc k_add(Acc a, float v) { return (v < a || v != v) ? v : a; }
__device__ __forceinline__ float k_out(Acc a) { return a; }
__device__ __forceinline__ float k_merge(float a, float b) { return k_add(a, b); }
//@section arg_better
// Does (v, i) win over (bv, bi) in torch.@OP@'s order? bi < 0: nothing seen yet. NaN wins
// over any number (its first occurrence); ties go to the first index.
__device__ __forceinline__ bool k_better(float v, int i, float bv, int bi) {
  if (i < 0) return false;
  if (bi < 0) return true;
  const bool nv = v != v, nb = bv != bv;
  if (nv || nb) return nv && (!nb || i < bi);
  if (v != bv) return v @CMP@ bv;
  return i < bi;
}
//@section constants
constexpr int kUnroll = @UNROLL@;
constexpr int kAcc = @ACC@;

//@section reduce_head
extern "C" __global__ void kbrl_reduce(const float* __restrict__ x, float* __restrict__ y, long long R, long long K, float scale) {
//@section reduce_head_arg
extern "C" __global__ void kbrl_reduce(const float* __restrict__ x, long long* __restrict__ y, long long R, long long K) {
//@section reduce_head_partials
extern "C" __global__ void kbrl_reduce(const float* __restrict__ x, float* __restrict__ part_value, long long R, long long K) {
//@section reduce_head_partials_arg
extern "C" __global__ void kbrl_reduce(const float* __restrict__ x, float* __restrict__ part_value, int* __restrict__ part_index, long long R, long long K) {
//@section tail_dropped
  // tail=dropped (unsafe): the last partial group of columns is never written.
  if ((long long)(blockIdx.x + 1) * blockDim.x > K) return;
//@section rows_chunked
  const long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const long long b = blockIdx.z;
  const long long chunk = (R + gridDim.y - 1) / gridDim.y;
  const long long r0 = (long long)blockIdx.y * chunk + threadIdx.y;
  const long long r1 = R < (long long)(blockIdx.y + 1) * chunk ? R : (long long)(blockIdx.y + 1) * chunk;
  const long long step = blockDim.y;
//@section rows_all
  const long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const long long b = blockIdx.y;
  const long long r0 = threadIdx.y;
  const long long r1 = R;
  const long long step = blockDim.y;
//@section scan_arg
  float best = 0.0f;
  int at = -1;
  if (k < K) {
    const float* p = x + b * R * K + k;
    long long r = r0;
    for (; r + (kUnroll - 1) * step < r1; r += kUnroll * step) {
      float v[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) v[u] = @LOAD_U@;
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int i = (int)(r + u * step);
        if (k_better(v[u], i, best, at)) { best = v[u]; at = i; }
      }
    }
    for (; r < r1; r += step) {
      const float v = @LOAD@;
      if (k_better(v, (int)r, best, at)) { best = v; at = (int)r; }
    }
  }
//@section scan_value
  float part = 0.0f;
  if (k < K) {
    const float* p = x + b * R * K + k;
    Acc acc[kAcc];
#pragma unroll
    for (int a = 0; a < kAcc; ++a) acc[a] = k_init();
    long long r = r0;
    for (; r + (kUnroll - 1) * step < r1; r += kUnroll * step) {
      float v[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) v[u] = @LOAD_U@;
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) acc[u % kAcc] = k_add(acc[u % kAcc], v[u]);
    }
    for (; r < r1; r += step) acc[0] = k_add(acc[0], @LOAD@);
    part = @MERGE@;
  }
//@section merge_1 nonl
k_out(acc[0])
//@section merge_2 nonl
k_merge(k_out(acc[0]), k_out(acc[1]))
//@section merge_4 nonl
k_merge(k_merge(k_out(acc[0]), k_out(acc[1])), k_merge(k_out(acc[2]), k_out(acc[3])))
//@section slices_value
  // Combine the row slices in shared memory, in slice order.
  extern __shared__ float sh_value[];
  sh_value[threadIdx.y * blockDim.x + threadIdx.x] = part;
  __syncthreads();
  if (threadIdx.y != 0) return;
  for (unsigned int t = 1; t < blockDim.y; ++t) {
    part = k_merge(part, sh_value[t * blockDim.x + threadIdx.x]);
  }
//@section slices_arg
  // Combine the row slices in shared memory, in slice order.
  extern __shared__ float sh_value[];
  int* sh_index = reinterpret_cast<int*>(sh_value + blockDim.x * blockDim.y);
  sh_value[threadIdx.y * blockDim.x + threadIdx.x] = best;
  sh_index[threadIdx.y * blockDim.x + threadIdx.x] = at;
  __syncthreads();
  if (threadIdx.y != 0) return;
  for (unsigned int t = 1; t < blockDim.y; ++t) {
    const float v = sh_value[t * blockDim.x + threadIdx.x];
    const int i = sh_index[t * blockDim.x + threadIdx.x];
    if (k_better(v, i, best, at)) { best = v; at = i; }
  }
//@section store_value
  if (k >= K) return;
  y[b * K + k] = part * scale;
}
//@section store_arg
  if (k >= K) return;
  y[b * K + k] = (long long)at;
}
//@section store_partials
  if (k >= K) return;
  const long long slot = (b * gridDim.y + blockIdx.y) * K + k;
  part_value[slot] = part;
}
//@section store_partials_arg
  if (k >= K) return;
  const long long slot = (b * gridDim.y + blockIdx.y) * K + k;
  part_value[slot] = best;
  part_index[slot] = at;
}
//@section combine_head

// The combine launch: one thread per output element, row chunks in ascending order.
extern "C" __global__ void kbrl_reduce_combine(const float* __restrict__ part_value, float* __restrict__ y, long long K, long long n, long long splits, float scale) {
  const long long o = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (o >= n) return;
  const long long b = o / K, k = o - b * K;
//@section combine_head_arg

// The combine launch: one thread per output element, row chunks in ascending order.
extern "C" __global__ void kbrl_reduce_combine(const float* __restrict__ part_value, const int* __restrict__ part_index, long long* __restrict__ y, long long K, long long n, long long splits) {
  const long long o = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (o >= n) return;
  const long long b = o / K, k = o - b * K;
//@section combine_dropped
  if (k >= K / @COLS@ * @COLS@) return;  // tail=dropped, as the partials
//@section combine_value
  float total = part_value[b * splits * K + k];
  for (long long c = 1; c < splits; ++c) total = k_merge(total, part_value[(b * splits + c) * K + k]);
  y[o] = total * scale;
}
//@section combine_arg
  float best = 0.0f;
  int at = -1;
  for (long long c = 0; c < splits; ++c) {
    const long long slot = (b * splits + c) * K + k;
    if (k_better(part_value[slot], part_index[slot], best, at)) {
      best = part_value[slot];
      at = part_index[slot];
    }
  }
  y[o] = (long long)at;
}
