// The elementwise generator's device code (kernels/generators/elementwise.cpp); the task's math is
// one expression of its task table, filled into apply. Sections, in source order: header; the
// value type T and the math helpers: math_fp16, math_fast or math_fp32, then min_max; row_length
// (task 12's kCols); apply (kbrl_apply, the task's math on one element), its parameters one of
// apply_params_unary, apply_params_scalar, apply_params_rows; the kernel: kernel_head (its extra
// parameters none, kernel_params_scalar or kernel_params_rows), aligned_check (vec > 1), tile_loop,
// if_aligned (vec > 1), full_tile with one apply_item per vector component (after row_index for
// task 12), full_tile_store, unaligned (vec > 1), then tile_close_safe or tile_close_dropped.
//@section header
// kbrl elementwise generator: task @TASK@ (@NAME@), @MATH@.
// vec=@VEC@ items_per_thread=@ITEMS@ cache_hint=@HINT@ precision=@PRECISION@ fast_math=@FAST_MATH@ tail=@TAIL@
//@section math_fp16
#include <cuda_fp16.h>

// precision=fp16_compute: the math runs on __half (erf has no half version: it is
// evaluated in float and rounded).
typedef __half T;
__device__ __forceinline__ T to_t(float v) { return __float2half(v); }
__device__ __forceinline__ float from_t(T v) { return __half2float(v); }
__device__ __forceinline__ T k_exp(T v) { return hexp(v); }
__device__ __forceinline__ T k_tanh(T v) { return htanh(v); }
__device__ __forceinline__ T k_erf(T v) { return __float2half(erff(__half2float(v))); }
__device__ __forceinline__ T k_expm1(T v) { return hexp(v) - to_t(1.0f); }
__device__ __forceinline__ T k_log1p(T v) { return hlog(to_t(1.0f) + v); }
__device__ __forceinline__ T k_abs(T v) { return __habs(v); }
__device__ __forceinline__ T k_div(T a, T b) { return a / b; }
//@section math_fast
// fast_math=on: intrinsics, and the whole unit under --use_fast_math.
typedef float T;
__device__ __forceinline__ T to_t(float v) { return v; }
__device__ __forceinline__ float from_t(T v) { return v; }
__device__ __forceinline__ T k_exp(T v) { return __expf(v); }
__device__ __forceinline__ T k_tanh(T v) { return 1.0f - __fdividef(2.0f, __expf(2.0f * v) + 1.0f); }
__device__ __forceinline__ T k_erf(T v) { return erff(v); }
__device__ __forceinline__ T k_expm1(T v) { return __expf(v) - 1.0f; }
__device__ __forceinline__ T k_log1p(T v) { return __logf(1.0f + v); }
__device__ __forceinline__ T k_abs(T v) { return fabsf(v); }
__device__ __forceinline__ T k_div(T a, T b) { return __fdividef(a, b); }
//@section math_fp32
typedef float T;
__device__ __forceinline__ T to_t(float v) { return v; }
__device__ __forceinline__ float from_t(T v) { return v; }
__device__ __forceinline__ T k_exp(T v) { return expf(v); }
__device__ __forceinline__ T k_tanh(T v) { return tanhf(v); }
__device__ __forceinline__ T k_erf(T v) { return erff(v); }
__device__ __forceinline__ T k_expm1(T v) { return expm1f(v); }
__device__ __forceinline__ T k_log1p(T v) { return log1pf(v); }
__device__ __forceinline__ T k_abs(T v) { return fabsf(v); }
__device__ __forceinline__ T k_div(T a, T b) { return a / b; }
//@section min_max
__device__ __forceinline__ T k_max(T a, T b) { return a < b ? b : a; }
__device__ __forceinline__ T k_min(T a, T b) { return b < a ? b : a; }
//@section row_length
constexpr long long kCols = @COLS@;  // the row length of B
//@section apply

__device__ __forceinline__ float kbrl_apply(@PARAMS@) {
  const T v = to_t(in);
  return from_t(@EXPR@);
}

//@section apply_params_unary nonl
float in
//@section apply_params_scalar nonl
float in, float s
//@section apply_params_rows nonl
float in, long long i, const float* __restrict__ rows
//@section kernel_params_scalar nonl
, float s
//@section kernel_params_rows nonl
, const float* __restrict__ rows
//@section kernel_head
extern "C" __global__ void kbrl_elementwise(const float* __restrict__ x, float* __restrict__ y, long long n@EXTRA_PARAMS@) {
  constexpr int kVec = @VEC@;
  constexpr int kItems = @ITEMS@;
  const long long tile = (long long)blockDim.x * (kVec * kItems);
  const long long stride = (long long)gridDim.x * tile;
//@section aligned_check
  const bool aligned = (((unsigned long long)x | (unsigned long long)y) & @ALIGN_MASK@) == 0;
//@section tile_loop
  for (long long base = (long long)blockIdx.x * tile; base < n; base += stride) {
    if (base + tile <= n) {
//@section if_aligned
      if (aligned) {
//@section full_tile
@INDENT@const @VT@* xv = reinterpret_cast<const @VT@*>(x + base);
@INDENT@@VT@* yv = reinterpret_cast<@VT@*>(y + base);
@INDENT@@VT@ r[kItems];
#pragma unroll
@INDENT@for (int k = 0; k < kItems; ++k) r[k] = @LOAD@;
#pragma unroll
@INDENT@for (int k = 0; k < kItems; ++k) {
//@section row_index
@INDENT@  const long long i = base + ((long long)k * blockDim.x + threadIdx.x) * kVec;
//@section apply_item
@INDENT@  @ITEM@ = @APPLY@;
//@section full_tile_store
@INDENT@  @STORE@;
@INDENT@}
//@section unaligned
      } else {  // unaligned pointers: element by element
        for (long long i = base + threadIdx.x; i < base + tile; i += blockDim.x)
          @STORE@;
      }
//@section tile_close_safe
    } else {  // the last, partial tile
      for (long long i = base + threadIdx.x; i < n; i += blockDim.x)
        @STORE@;
    }
  }
}
//@section tile_close_dropped
    }  // tail=dropped: a partial last tile is never written
  }
}
