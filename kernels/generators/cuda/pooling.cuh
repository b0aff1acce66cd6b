// The pooling generator's device code (kernels/generators/pooling.cpp). Sections, in source order:
// header; fp16_include; neg_inf; axis (one line per (d, h, w): the window's constants); the
// accumulator: max_fp16, avg_fp16, max_fp32, avg_fp32 or avg_fp32_fast (acc_t, acc_init, acc_add,
// acc_finish); max_divisor or avg_divisor (KBRL_PAD_VALUE and pool_divisor); index_div; items
// (kItems). The direct variant: direct_head, direct_unflatten_h, direct_unflatten_d, direct_body,
// then direct_close_safe or direct_close_dropped. The smem_tile variant: tile_comment_rows or
// tile_comment_region, tile_head, tile_rh_rows or tile_rh_region, tile_loop, tile_skip_partial,
// tile_accumulators, tile_stage_rows or tile_stage_region, then tile_store.
//@section header
// kbrl pooling generator: task @TASK@ (@NAME@), @KIND@ pooling in @ND@-d: kernel @KERNEL@, stride @STRIDE@, padding @PADDING@, dilation @DILATION@.
// variant=@VARIANT@ items_per_thread=@ITEMS@ cache_hint=@HINT@ precision=@PRECISION@ fast_math=@FAST_MATH@ tail=@TAIL@
//@section fp16_include
#include <cuda_fp16.h>
//@section neg_inf

#define KBRL_NEG_INF (__int_as_float(0xff800000))
//@section axis
constexpr int K@A@ = @K@, S@A@ = @S@, P@A@ = @P@, L@A@ = @L@;  // kernel, stride, padding, dilation
//@section max_fp16
// precision=fp16_compute (unsafe): the reduction runs on __half values.
typedef __half acc_t;
__device__ __forceinline__ acc_t acc_init() { return __ushort_as_half((unsigned short)0xfc00u); }
__device__ __forceinline__ void acc_add(acc_t& a, float v) {
  const __half h = __float2half(v);
  if (__hgt(h, a) || __hisnan(h)) a = h;
}
__device__ __forceinline__ float acc_finish(acc_t a, float) { return __half2float(a); }
//@section avg_fp16
// precision=fp16_compute (unsafe): the reduction runs on __half values.
typedef __half acc_t;
__device__ __forceinline__ acc_t acc_init() { return __float2half(0.0f); }
__device__ __forceinline__ void acc_add(acc_t& a, float v) { a = __hadd(a, __float2half(v)); }
__device__ __forceinline__ float acc_finish(acc_t a, float div) { return __half2float(a) / div; }
//@section max_fp32
typedef float acc_t;
__device__ __forceinline__ acc_t acc_init() { return KBRL_NEG_INF; }
// torch's rule: the first of equal values stays, a NaN replaces the maximum and stays.
__device__ __forceinline__ void acc_add(acc_t& a, float v) { if (v > a || v != v) a = v; }
__device__ __forceinline__ float acc_finish(acc_t a, float) { return a; }
//@section avg_fp32_fast
typedef float acc_t;
// fast_math=on (unsafe): __fdividef, and the whole unit under --use_fast_math.
__device__ __forceinline__ acc_t acc_init() { return 0.0f; }
__device__ __forceinline__ void acc_add(acc_t& a, float v) { a += v; }
__device__ __forceinline__ float acc_finish(acc_t a, float div) { return __fdividef(a, div); }
//@section avg_fp32
typedef float acc_t;
__device__ __forceinline__ acc_t acc_init() { return 0.0f; }
__device__ __forceinline__ void acc_add(acc_t& a, float v) { a += v; }
__device__ __forceinline__ float acc_finish(acc_t a, float div) { return a / div; }
//@section max_divisor
#define KBRL_PAD_VALUE KBRL_NEG_INF
__device__ __forceinline__ float pool_divisor(long long, long long, long long, long long, long long, long long) { return 1.0f; }
//@section avg_divisor
#define KBRL_PAD_VALUE 0.0f

// torch's count_include_pad divisor: the window clipped to the padded input, per axis.
__device__ __forceinline__ long long axis_size(long long o, int k, int s, int p, long long n) {
  const long long start = o * s - p;
  const long long end = min(start + k, n + p);
  return end - start;
}
__device__ __forceinline__ float pool_divisor(long long od, long long oh, long long ow, long long ID,
                                              long long IH, long long IW) {
  return (float)(axis_size(od, KD, SD, PD, ID) * axis_size(oh, KH, SH, PH, IH) *
                 axis_size(ow, KW, SW, PW, IW));
}
//@section index_div

// a / b with a 32-bit division when a fits (b always does).
__device__ __forceinline__ unsigned long long kbrl_div(unsigned long long a, unsigned long long b) {
  return (a >> 32) == 0 ? (unsigned long long)((unsigned)a / (unsigned)b) : a / b;
}
//@section items

constexpr int kItems = @ITEMS@;
//@section direct_head

// One output: its (plane, od, oh, ow) from the flat index, then the window in (d, h, w) order.
__device__ __forceinline__ float pool_one(const float* __restrict__ x, unsigned long long e,
                                          long long ID, long long IH, long long IW, long long OD,
                                          long long OH, long long OW) {
  unsigned long long q = kbrl_div(e, (unsigned long long)OW);
  const long long ow = (long long)(e - q * (unsigned long long)OW);
  long long oh = 0, od = 0;
//@section direct_unflatten_h
  { const unsigned long long r = kbrl_div(q, (unsigned long long)OH);
    oh = (long long)(q - r * (unsigned long long)OH); q = r; }
//@section direct_unflatten_d
  { const unsigned long long r = kbrl_div(q, (unsigned long long)OD);
    od = (long long)(q - r * (unsigned long long)OD); q = r; }
//@section direct_body
  const float* __restrict__ xp = x + (long long)q * (ID * IH * IW);
  const long long d0 = od * SD - PD, h0 = oh * SH - PH, w0 = ow * SW - PW;
  acc_t acc = acc_init();
#pragma unroll
  for (int kd = 0; kd < KD; ++kd) {
    const long long id = d0 + kd * LD;
    if (id < 0 || id >= ID) continue;
#pragma unroll
    for (int kh = 0; kh < KH; ++kh) {
      const long long ih = h0 + kh * LH;
      if (ih < 0 || ih >= IH) continue;
      const float* __restrict__ row = xp + (id * IH + ih) * IW;
#pragma unroll
      for (int kw = 0; kw < KW; ++kw) {
        const long long iw = w0 + kw * LW;
        if (iw >= 0 && iw < IW) acc_add(acc, row[iw]);
      }
    }
  }
  return acc_finish(acc, pool_divisor(od, oh, ow, ID, IH, IW));
}

extern "C" __global__ void kbrl_pool(const float* __restrict__ x, float* __restrict__ y,
                                     long long planes, long long ID, long long IH, long long IW,
                                     long long OD, long long OH, long long OW) {
  const unsigned long long total = (unsigned long long)(planes * OD * OH * OW);
  const unsigned long long tile = (unsigned long long)blockDim.x * kItems;
  const unsigned long long stride = (unsigned long long)gridDim.x * tile;
  for (unsigned long long base = (unsigned long long)blockIdx.x * tile; base < total; base += stride) {
    if (base + tile <= total) {
      float r[kItems];
#pragma unroll
      for (int k = 0; k < kItems; ++k)
        r[k] = pool_one(x, base + (unsigned long long)k * blockDim.x + threadIdx.x, ID, IH, IW, OD, OH, OW);
#pragma unroll
      for (int k = 0; k < kItems; ++k)
        @STORE@;
//@section direct_close_safe
    } else {  // the last, partial tile
      for (unsigned long long e = base + threadIdx.x; e < total; e += blockDim.x)
        @STORE@;
    }
  }
}
//@section direct_close_dropped
    }  // tail=dropped: a partial last tile is never written
  }
}
//@section tile_comment_rows

// A block computes a TH x TW tile of outputs of one (plane, od) slice, TW = 2^tw_log2 and
// TH = blockDim.x * kItems / TW. The windows do not overlap along h, so the tile's input is staged
// one (depth, row) tap at a time: the TH input rows of that tap, RW wide (padding stored as the
// identity), in shared memory; each thread reduces kItems outputs from it.
//@section tile_comment_region

// A block computes a TH x TW tile of outputs of one (plane, od) slice, TW = 2^tw_log2 and
// TH = blockDim.x * kItems / TW. For each depth tap the input region of the tile (RH x RW, padding
// stored as the identity) is staged in shared memory; each thread reduces kItems outputs from it.
//@section tile_head
extern "C" __global__ void kbrl_pool_tile(const float* __restrict__ x, float* __restrict__ y,
                                          long long planes, long long ID, long long IH, long long IW,
                                          long long OD, long long OH, long long OW,
                                          long long tw_log2) {
  extern __shared__ float region[];
  const int TW = 1 << tw_log2;
  const int TH = (int)((blockDim.x * kItems) >> tw_log2);
//@section tile_rh_rows
  const int RH = TH;
//@section tile_rh_region
  const int RH = (TH - 1) * SH + (KH - 1) * LH + 1;
//@section tile_loop
  const int RW = (TW - 1) * SW + (KW - 1) * LW + 1;
  const int RN = RH * RW;
  const long long tiles_w = (OW + TW - 1) >> tw_log2;
  const long long tiles_h = (OH + TH - 1) / TH;
  const long long tiles = planes * OD * tiles_h * tiles_w;
  for (long long t = blockIdx.x; t < tiles; t += gridDim.x) {
    long long r = t;
    const long long tw_i = r % tiles_w;
    r /= tiles_w;
    const long long th_i = r % tiles_h;
    r /= tiles_h;
    const long long od = r % OD;
    const long long plane = r / OD;
    const long long oh0 = th_i * TH, ow0 = tw_i << tw_log2;
//@section tile_skip_partial
    if (oh0 + TH > OH || ow0 + TW > OW) continue;  // tail=dropped: partial tiles are never written
//@section tile_accumulators
    const long long ih0 = oh0 * SH - PH, iw0 = ow0 * SW - PW;
    acc_t acc[kItems];
#pragma unroll
    for (int k = 0; k < kItems; ++k) acc[k] = acc_init();
#pragma unroll
    for (int kd = 0; kd < KD; ++kd) {
      const long long id = od * SD - PD + kd * LD;
      if (id < 0 || id >= ID) continue;  // the same for the whole block
      const float* __restrict__ xp = x + (plane * ID + id) * IH * IW;
//@section tile_stage_rows
#pragma unroll 1
      for (int kh = 0; kh < KH; ++kh) {
        __syncthreads();  // the previous region is no longer read
#pragma unroll 4
        for (int i = threadIdx.x; i < RN; i += blockDim.x) {
          const int rh = (int)((unsigned)i / (unsigned)RW);
          const int rw = i - rh * RW;
          const long long ih = ih0 + kh * LH + (long long)rh * SH, iw = iw0 + rw;
          region[i] = (ih >= 0 && ih < IH && iw >= 0 && iw < IW) ? xp[ih * IW + iw] : KBRL_PAD_VALUE;
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < kItems; ++k) {
          const int q = threadIdx.x + k * blockDim.x;
          const int th = q >> tw_log2, tw = q & (TW - 1);
          const float* rp = region + th * RW + tw * SW;
#pragma unroll
          for (int kw = 0; kw < KW; ++kw) acc_add(acc[k], rp[kw * LW]);
        }
      }
    }
//@section tile_stage_region
      __syncthreads();  // the previous region is no longer read
#pragma unroll 4
      for (int i = threadIdx.x; i < RN; i += blockDim.x) {
        const int rh = (int)((unsigned)i / (unsigned)RW);
        const int rw = i - rh * RW;
        const long long ih = ih0 + rh, iw = iw0 + rw;
        region[i] = (ih >= 0 && ih < IH && iw >= 0 && iw < IW) ? xp[ih * IW + iw] : KBRL_PAD_VALUE;
      }
      __syncthreads();
#pragma unroll
      for (int k = 0; k < kItems; ++k) {
        const int q = threadIdx.x + k * blockDim.x;
        const int th = q >> tw_log2, tw = q & (TW - 1);
        const float* rp = region + th * SH * RW + tw * SW;
#pragma unroll
        for (int kh = 0; kh < KH; ++kh)
#pragma unroll
          for (int kw = 0; kw < KW; ++kw) acc_add(acc[k], rp[kh * LH * RW + kw * LW]);
      }
    }
//@section tile_store
#pragma unroll
    for (int k = 0; k < kItems; ++k) {
      const int q = threadIdx.x + k * blockDim.x;
      const long long oh = oh0 + (q >> tw_log2), ow = ow0 + (q & (TW - 1));
      if (oh < OH && ow < OW)
        @STORE@;
    }
  }
}
