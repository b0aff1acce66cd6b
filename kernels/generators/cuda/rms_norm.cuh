// The norm generator's RMSNorm kernel (rms_norm.cpp: task 36, y = x / sqrt(mean over the 64
// channels of x^2 + eps)). The C++ writes unit_header, then the configuration (#define
// KBRL_REGISTERS, KBRL_VEC, KBRL_MAX_THREADS, KBRL_STREAM, KBRL_HALF, KBRL_FAST; kC), then
// kernel.
//   unit_header  the comment opening the unit
//   kernel       vector loads and stores of VEC positions, the rstd and scaling arithmetic and
//                kbrl_rms_norm (@UNROLL@: the unroll knob, channels loaded before use in two_pass)

//@section unit_header
// kbrl norm generator: RMSNorm over dim 1 of x:[N, 64, H, W] (stride H*W):
// y = x / sqrt(mean over the 64 channels of x^2 + eps); one thread per VEC positions.
//@section kernel

typedef long long i64;
typedef unsigned long long u64;

#if KBRL_STREAM
#define LD_LAST(p) __ldcs(p)
#define ST(p, v) __stcs((p), (v))
#else
#define LD_LAST(p) (*(p))
#define ST(p, v) (*(p) = (v))
#endif

// v[0, VEC) = p[0, VEC): one vector access when `full`, else the first `valid` elements.
template <bool kLast>
__device__ __forceinline__ void load_v(const float* __restrict__ p, float (&v)[KBRL_VEC], bool full,
                                       i64 valid) {
  if (full) {
#if KBRL_VEC == 4
    const float4 q = kLast ? LD_LAST(reinterpret_cast<const float4*>(p))
                           : *reinterpret_cast<const float4*>(p);
    v[0] = q.x; v[1] = q.y; v[2] = q.z; v[3] = q.w;
#elif KBRL_VEC == 2
    const float2 q = kLast ? LD_LAST(reinterpret_cast<const float2*>(p))
                           : *reinterpret_cast<const float2*>(p);
    v[0] = q.x; v[1] = q.y;
#else
    v[0] = kLast ? LD_LAST(p) : *p;
#endif
  } else {
#pragma unroll
    for (int k = 0; k < KBRL_VEC; ++k) v[k] = k < valid ? (kLast ? LD_LAST(p + k) : p[k]) : 0.0f;
  }
}

__device__ __forceinline__ void store_v(float* __restrict__ p, const float (&v)[KBRL_VEC], bool full,
                                        i64 valid) {
  if (full) {
#if KBRL_VEC == 4
    ST(reinterpret_cast<float4*>(p), make_float4(v[0], v[1], v[2], v[3]));
#elif KBRL_VEC == 2
    ST(reinterpret_cast<float2*>(p), make_float2(v[0], v[1]));
#else
    ST(p, v[0]);
#endif
  } else {
#pragma unroll
    for (int k = 0; k < KBRL_VEC; ++k)
      if (k < valid) ST(p + k, v[k]);
  }
}

// 1 / sqrt(mean of squares + eps)
__device__ __forceinline__ float k_rstd(float sumsq, float eps) {
#if KBRL_FAST
  return rsqrtf(sumsq * (1.0f / (float)kC) + eps);
#else
  return 1.0f / sqrtf(sumsq / (float)kC + eps);
#endif
}

__device__ __forceinline__ float k_scale(float v, float r) {
#if KBRL_HALF
  return __half2float(__hmul(__float2half(v), __float2half(r)));
#else
  return v * r;
#endif
}

// x, y: [N, kC, HW]. Each thread normalizes VEC consecutive positions of one image over the kC
// channels (stride HW): a warp's accesses are contiguous along HW.
extern "C" __global__ void __launch_bounds__(KBRL_MAX_THREADS) kbrl_rms_norm(const float* __restrict__ x, float* __restrict__ y, i64 N,
                                         i64 HW, float eps) {
  const i64 nv = (HW + KBRL_VEC - 1) / KBRL_VEC;
  const i64 total = N * nv;
  const bool vec_ok = HW % KBRL_VEC == 0 && (((u64)x | (u64)y) & (4u * KBRL_VEC - 1u)) == 0;
  for (i64 t = (i64)blockIdx.x * blockDim.x + threadIdx.x; t < total;
       t += (i64)gridDim.x * blockDim.x) {
    const i64 n = t / nv;
    const i64 h0 = (t - n * nv) * KBRL_VEC;
    const i64 valid = HW - h0 < KBRL_VEC ? HW - h0 : KBRL_VEC;
    const i64 base = n * kC * HW + h0;
    const float* in = x + base;
    float* out = y + base;
    float acc[KBRL_VEC];
#pragma unroll
    for (int k = 0; k < KBRL_VEC; ++k) acc[k] = 0.0f;
#if KBRL_REGISTERS
    // variant=registers: all kC values stay in registers between the two passes.
    float v[kC][KBRL_VEC];
#pragma unroll
    for (int c = 0; c < kC; ++c) load_v<true>(in + c * HW, v[c], vec_ok, valid);
#pragma unroll
    for (int c = 0; c < kC; ++c)
#pragma unroll
      for (int k = 0; k < KBRL_VEC; ++k) acc[k] = fmaf(v[c][k], v[c][k], acc[k]);
#else
#pragma unroll @UNROLL@
    for (int c = 0; c < kC; ++c) {
      float v[KBRL_VEC];
      load_v<false>(in + c * HW, v, vec_ok, valid);
#pragma unroll
      for (int k = 0; k < KBRL_VEC; ++k) acc[k] = fmaf(v[k], v[k], acc[k]);
    }
#endif
    float r[KBRL_VEC];
#pragma unroll
    for (int k = 0; k < KBRL_VEC; ++k) r[k] = k_rstd(acc[k], eps);
#if KBRL_REGISTERS
#pragma unroll
    for (int c = 0; c < kC; ++c) {
      float o[KBRL_VEC];
#pragma unroll
      for (int k = 0; k < KBRL_VEC; ++k) o[k] = k_scale(v[c][k], r[k]);
      store_v(out + c * HW, o, vec_ok, valid);
    }
#else
    // variant=two_pass: x is read again for the normalizing pass.
#pragma unroll @UNROLL@
    for (int c = 0; c < kC; ++c) {
      float v[KBRL_VEC], o[KBRL_VEC];
      load_v<true>(in + c * HW, v, vec_ok, valid);
#pragma unroll
      for (int k = 0; k < KBRL_VEC; ++k) o[k] = k_scale(v[k], r[k]);
      store_v(out + c * HW, o, vec_ok, valid);
    }
#endif
  }
}
