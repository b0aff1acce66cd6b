// The scan generator's device code (kernels/generators/scan.cpp). Sections, in source order:
// header (the two comment lines naming the task and configuration); the value type and the
// scan's operation: fp16_types or fp32_types, then fp16_sum, fp16_product, fp32_sum or
// fp32_product; constants (kItems, kVec4, kReverse, kExclusive, kSafeTail, FULL_MASK); the
// accesses io_streaming or io_plain; values_masked or values_plain (x, or x * mask); helpers
// (load_items, thread_scan, store_items, the warp scan, rows_aligned, chunk_count); then one kernel,
// block_kernel or warp_kernel, whose @KERNEL_HEAD@ is kernel_head or kernel_head_masked and whose
// @ROW_HEAD@ is row_head with @MASK_ROW@ = mask_row or mask_row_none.
//@section header
// kbrl scan generator: task @TASK@ (@NAME@), @MATH@ along dim 1.
// variant=@VARIANT@ items_per_thread=@ITEMS@ vec=@VEC@ cache_hint=@HINT@ precision=@PRECISION@ tail=@TAIL@
//@section fp16_types
#include <cuda_fp16.h>

// precision=fp16_compute (unsafe): the scan runs on __half values.
typedef __half T;
__device__ __forceinline__ T to_t(float v) { return __float2half(v); }
__device__ __forceinline__ float from_t(T v) { return __half2float(v); }
//@section fp16_product
__device__ __forceinline__ T combine(T a, T b) { return __hmul(a, b); }
__device__ __forceinline__ T identity() { return __float2half(1.0f); }
//@section fp16_sum
__device__ __forceinline__ T combine(T a, T b) { return __hadd(a, b); }
__device__ __forceinline__ T identity() { return __float2half(0.0f); }
//@section fp32_types
typedef float T;
__device__ __forceinline__ T to_t(float v) { return v; }
__device__ __forceinline__ float from_t(T v) { return v; }
//@section fp32_product
__device__ __forceinline__ T combine(T a, T b) { return a * b; }
__device__ __forceinline__ T identity() { return 1.0f; }
//@section fp32_sum
__device__ __forceinline__ T combine(T a, T b) { return a + b; }
__device__ __forceinline__ T identity() { return 0.0f; }
//@section constants

constexpr int kItems = @ITEMS@;
constexpr bool kVec4 = @VEC4@;
constexpr bool kReverse = @REVERSE@;
constexpr bool kExclusive = @EXCLUSIVE@;
constexpr bool kSafeTail = @SAFE_TAIL@;
#define FULL_MASK 0xffffffffu
//@section io_streaming
__device__ __forceinline__ float ld_x(const float* p) { return __ldcs(p); }
__device__ __forceinline__ float4 ld_x4(const float* p) { return __ldcs(reinterpret_cast<const float4*>(p)); }
__device__ __forceinline__ void st_y(float* p, float v) { __stcs(p, v); }
__device__ __forceinline__ void st_y4(float* p, float4 v) { __stcs(reinterpret_cast<float4*>(p), v); }
//@section io_plain
__device__ __forceinline__ float ld_x(const float* p) { return *p; }
__device__ __forceinline__ float4 ld_x4(const float* p) { return *reinterpret_cast<const float4*>(p); }
__device__ __forceinline__ void st_y(float* p, float v) { *p = v; }
__device__ __forceinline__ void st_y4(float* p, float4 v) { *reinterpret_cast<float4*>(p) = v; }
//@section values_masked

// x * mask as torch computes it (the bool promoted to 0.0f or 1.0f).
__device__ __forceinline__ float value_at(const float* __restrict__ xr, const unsigned char* __restrict__ mr,
                                          long long i) {
  return ld_x(xr + i) * (float)mr[i];
}
__device__ __forceinline__ void values4(const float* __restrict__ xr, const unsigned char* __restrict__ mr,
                                        long long i, float v[4]) {
  const float4 q = ld_x4(xr + i);
  const uchar4 m = *reinterpret_cast<const uchar4*>(mr + i);
  v[0] = q.x * (float)m.x; v[1] = q.y * (float)m.y; v[2] = q.z * (float)m.z; v[3] = q.w * (float)m.w;
}
//@section values_plain

__device__ __forceinline__ float value_at(const float* __restrict__ xr, const unsigned char* __restrict__,
                                          long long i) {
  return ld_x(xr + i);
}
__device__ __forceinline__ void values4(const float* __restrict__ xr, const unsigned char* __restrict__,
                                        long long i, float v[4]) {
  const float4 q = ld_x4(xr + i);
  v[0] = q.x; v[1] = q.y; v[2] = q.z; v[3] = q.w;
}
//@section helpers

// The thread's kItems elements from `base` (identity past the row's end).
__device__ __forceinline__ void load_items(const float* __restrict__ xr, const unsigned char* __restrict__ mr,
                                           long long base, long long L, bool vec_ok, T v[kItems]) {
  if (kVec4 && vec_ok && base + kItems <= L) {
#pragma unroll
    for (int j = 0; j < kItems; j += 4) {
      float q[4];
      values4(xr, mr, base + j, q);
#pragma unroll
      for (int c = 0; c < 4; ++c) v[j + c] = to_t(q[c]);
    }
  } else {
#pragma unroll
    for (int k = 0; k < kItems; ++k) v[k] = base + k < L ? to_t(value_at(xr, mr, base + k)) : identity();
  }
}

// Scans the thread's items in place in the scan's direction; returns the thread's total.
__device__ __forceinline__ T thread_scan(T v[kItems]) {
  if (kReverse) {
#pragma unroll
    for (int k = kItems - 2; k >= 0; --k) v[k] = combine(v[k + 1], v[k]);
    return v[0];
  }
#pragma unroll
  for (int k = 1; k < kItems; ++k) v[k] = combine(v[k - 1], v[k]);
  return v[kItems - 1];
}

// Writes pre (+) the thread's scanned items (the item before, for the exclusive scan).
__device__ __forceinline__ void store_items(float* __restrict__ yr, long long base, long long L, bool vec_ok,
                                            T pre, const T v[kItems]) {
  float o[kItems];
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    T local = v[k];
    if (kExclusive) {
      if (kReverse) local = k + 1 < kItems ? v[k + 1] : identity();
      else local = k > 0 ? v[k - 1] : identity();
    }
    o[k] = from_t(combine(pre, local));
  }
  if (kVec4 && vec_ok && base + kItems <= L) {
#pragma unroll
    for (int j = 0; j < kItems; j += 4) st_y4(yr + base + j, make_float4(o[j], o[j + 1], o[j + 2], o[j + 3]));
  } else {
#pragma unroll
    for (int k = 0; k < kItems; ++k)
      if (base + k < L) st_y(yr + base + k, o[k]);
  }
}

// Lane shuffles toward the scan's direction: from the lane d before (d after, reversed).
__device__ __forceinline__ T shfl_prev(T v, int d) {
  return kReverse ? __shfl_down_sync(FULL_MASK, v, d) : __shfl_up_sync(FULL_MASK, v, d);
}

// Inclusive scan over the warp in the scan's direction; rank is the lane's place in that order.
__device__ __forceinline__ T warp_inclusive(T s, int rank) {
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    const T n = shfl_prev(s, d);
    if (rank >= d) s = combine(n, s);
  }
  return s;
}

// Whether the row pointers allow float4 (and 4-byte mask) accesses.
__device__ __forceinline__ bool rows_aligned(const float* xr, const unsigned char* mr, const float* yr) {
  return kVec4 && ((((unsigned long long)xr | (unsigned long long)yr) & 15) == 0) &&
         (((unsigned long long)mr & 3) == 0);
}

// The chunks of a row: all of them, or (tail=dropped) only the full ones.
__device__ __forceinline__ long long chunk_count(long long L, long long C) {
  return kSafeTail ? (L + C - 1) / C : L / C;
}
//@section kernel_head nonl
extern "C" __global__ void kbrl_scan(const float* __restrict__ x, float* __restrict__ y,
                                     long long rows, long long L) {
//@section kernel_head_masked nonl
extern "C" __global__ void kbrl_scan(const float* __restrict__ x, const unsigned char* __restrict__ mask, float* __restrict__ y,
                                     long long rows, long long L) {
//@section row_head nonl
    const float* __restrict__ xr = x + row * L;
    float* __restrict__ yr = y + row * L;
@MASK_ROW@
    const bool vec_ok = rows_aligned(xr, mr, yr);
    T carry = identity();
    for (long long cc = 0; cc < chunks; ++cc) {
      const long long c = kReverse ? chunks - 1 - cc : cc;
//@section mask_row nonl
    const unsigned char* __restrict__ mr = mask + row * L;
//@section mask_row_none nonl
    const unsigned char* __restrict__ mr = nullptr;
//@section block_kernel

// One block per row: chunks of blockDim.x * kItems elements, the threads' totals scanned over the
// warps (shuffles) and across the warps (shared memory), a carry across the chunks.
@KERNEL_HEAD@
  __shared__ T totals[2][32];  // double-buffered by chunk: two barriers per chunk suffice
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
  const int rank = kReverse ? 31 - lane : lane;
  const int wrank = kReverse ? nw - 1 - warp : warp;
  const long long C = (long long)blockDim.x * kItems;
  const long long chunks = chunk_count(L, C);
  for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
@ROW_HEAD@
      const long long base = c * C + (long long)threadIdx.x * kItems;
      T v[kItems];
      load_items(xr, mr, base, L, vec_ok, v);
      const T total = thread_scan(v);
      const T incl = warp_inclusive(total, rank);
      T (&tot)[32] = totals[cc & 1];
      if (rank == 31) tot[wrank] = incl;
      __syncthreads();
      if (warp == 0) {  // scan the warps' totals in the scan's order (held by wrank)
        T w = lane < nw ? tot[lane] : identity();
#pragma unroll
        for (int d = 1; d < 32; d <<= 1) {
          const T n = __shfl_up_sync(FULL_MASK, w, d);
          if (lane >= d) w = combine(n, w);
        }
        if (lane < nw) tot[lane] = w;
      }
      __syncthreads();
      T lane_ex = shfl_prev(incl, 1);
      if (rank == 0) lane_ex = identity();
      const T warp_ex = wrank > 0 ? tot[wrank - 1] : identity();
      const T pre = combine(carry, combine(warp_ex, lane_ex));
      store_items(yr, base, L, vec_ok, pre, v);
      carry = combine(carry, tot[nw - 1]);
    }
  }
}
//@section warp_kernel

// One warp per row: chunks of 32 * kItems elements, the lanes' totals scanned with shuffles, a carry
// across the chunks; no block barriers (blockDim.x / 32 rows per block).
@KERNEL_HEAD@
  const int lane = threadIdx.x & 31;
  const int rank = kReverse ? 31 - lane : lane;
  const long long warps = (long long)gridDim.x * (blockDim.x >> 5);
  const long long C = 32LL * kItems;
  const long long chunks = chunk_count(L, C);
  for (long long row = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); row < rows;
       row += warps) {
@ROW_HEAD@
      const long long base = c * C + (long long)lane * kItems;
      T v[kItems];
      load_items(xr, mr, base, L, vec_ok, v);
      const T incl = warp_inclusive(thread_scan(v), rank);
      T lane_ex = shfl_prev(incl, 1);
      if (rank == 0) lane_ex = identity();
      store_items(yr, base, L, vec_ok, combine(carry, lane_ex), v);
      carry = combine(carry, __shfl_sync(FULL_MASK, incl, kReverse ? 0 : 31));
    }
  }
}
