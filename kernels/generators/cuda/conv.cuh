// The conv generator's shared device code and its direct kernel (kernels/generators/conv.cpp;
// conv.h describes the plans). Sections:
//   prelude           KBRL_BIG, the offset that fails every bounds check (all conv sources)
//   prep              the prep kernels: weights transposed to [Kpad][Npad] with the bias row, and
//                     the gather table {input offset, kd*dd, kh*dh, kw*dw} per reduction index
//   shape_params      the main kernels' arguments after the four pointers (@SHAPE_PARAMS@)
//   tile_decode       the block's (position tile, channel tile) (n_major: a position tile's
//                     channel tiles are adjacent blocks) and the sizes
//   decode_position   position m -> the input window's origin and its flat offset
//   direct_intro, direct_signature, direct_body   the direct kernel (a thread per position,
//                     @ITEMS@ output channels; TILE_N and KBRL_KALIGN defined by the C++)

//@section prelude

// Entries of the gather table past the reduction length, and positions past the output, carry
// this offset so that every bounds check on them fails.
#define KBRL_BIG (1 << 29)
//@section prep

// Prep: wt[kk][co] = w[co][kk] (kk = c*KD*KH*KW + (kd*KH + kh)*KW + kw), rows padded to Kpad and
// columns to Npad with zeros; row Kpad holds the bias (zeros without one); the gather table holds
// per kk {input offset c*D*H*W + kd*dd*H*W + kh*dh*W + kw*dw, kd*dd, kh*dh, kw*dw}.
__device__ __forceinline__ void kbrl_prep_body(const float* __restrict__ w,
    const float* __restrict__ bias, float* __restrict__ wt, int4* __restrict__ table,
    long long C, long long KD, long long KH, long long KW, long long dd, long long dh,
    long long dw, long long D, long long H, long long W, long long Kred, long long Kpad,
    long long Cout, long long Npad) {
  const long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (e < (Kpad + 1) * Npad) {
    const long long kk = e / Npad, co = e - kk * Npad;
    float v = 0.0f;
    if (kk < Kpad) {
      if (kk < Kred && co < Cout) v = w[co * Kred + kk];
    } else if (bias != nullptr && co < Cout) {
      v = bias[co];
    }
    wt[e] = v;
  }
  if (e < Kpad) {
    int4 t = make_int4(0, KBRL_BIG, KBRL_BIG, KBRL_BIG);
    if (e < Kred) {
      const long long kvol = KD * KH * KW;
      const long long c = e / kvol, r = e - c * kvol;
      const long long kd = r / (KH * KW), kh = (r / KW) % KH, kw = r % KW;
      t = make_int4((int)(c * D * H * W + kd * dd * H * W + kh * dh * W + kw * dw),
                    (int)(kd * dd), (int)(kh * dh), (int)(kw * dw));
    }
    table[e] = t;
  }
}

extern "C" __global__ void kbrl_conv_prep(const float* __restrict__ w, float* __restrict__ wt,
    int4* __restrict__ table, long long C, long long KD, long long KH, long long KW,
    long long dd, long long dh, long long dw, long long D, long long H, long long W,
    long long Kred, long long Kpad, long long Cout, long long Npad) {
  kbrl_prep_body(w, nullptr, wt, table, C, KD, KH, KW, dd, dh, dw, D, H, W, Kred, Kpad, Cout, Npad);
}

extern "C" __global__ void kbrl_conv_prep_bias(const float* __restrict__ w,
    const float* __restrict__ bias, float* __restrict__ wt, int4* __restrict__ table,
    long long C, long long KD, long long KH, long long KW, long long dd, long long dh,
    long long dw, long long D, long long H, long long W, long long Kred, long long Kpad,
    long long Cout, long long Npad) {
  kbrl_prep_body(w, bias, wt, table, C, KD, KH, KW, dd, dh, dw, D, H, W, Kred, Kpad, Cout, Npad);
}
//@section shape_params nonl
long long N, long long C, long long D, long long H, long long W, long long Cout,
    long long OD, long long OH, long long OW, long long sd, long long sh, long long sw,
    long long pd, long long ph, long long pw, long long Kred, long long Npad,
    long long mtiles, int n_major
//@section tile_decode

  const long long HW = H * W, DHW = D * HW, OHW = OH * OW, OSP = OD * OHW, M = N * OSP;
  const long long ntiles = (Cout + TILE_N - 1) / TILE_N;
  long long bm, bn;
  if (n_major) {
    bn = blockIdx.x % ntiles;
    bm = blockIdx.x / ntiles;
  } else {
    bm = blockIdx.x % mtiles;
    bn = blockIdx.x / mtiles;
  }
  const float* __restrict__ bias = wt + ((Kred + KBRL_KALIGN - 1) / KBRL_KALIGN * KBRL_KALIGN) * Npad;
//@section decode_position

__device__ __forceinline__ void kbrl_position(long long m, long long M, long long OSP,
    long long OHW, long long OW, long long C, long long DHW, long long HW, long long W,
    long long sd, long long sh, long long sw, long long pd, long long ph, long long pw,
    long long& base, int& od0, int& oh0, int& ow0) {
  if (m < M) {
    const long long n = m / OSP, p = m - n * OSP;
    const long long od = p / OHW, q = p - od * OHW;
    const long long oh = q / OW, ow = q - oh * OW;
    od0 = (int)(od * sd - pd);
    oh0 = (int)(oh * sh - ph);
    ow0 = (int)(ow * sw - pw);
    base = n * C * DHW + (long long)od0 * HW + (long long)oh0 * W + ow0;
  } else {
    od0 = oh0 = ow0 = KBRL_BIG;
    base = 0;
  }
}
//@section direct_intro

// Direct: one thread per output position, @ITEMS@ output channels per thread (weights read
// as warp-uniform float4 loads), looping over the reduction with the gather table.
//@section direct_signature

extern "C" __global__ void kbrl_conv_direct(const float* __restrict__ x,
    const float* __restrict__ wt, const int4* __restrict__ table, float* __restrict__ y,
    @SHAPE_PARAMS@) {
//@section direct_body
  const long long m = bm * blockDim.x + threadIdx.x;
  if (m >= M) return;
  const long long co0 = bn * TILE_N;
  long long base;
  int d0, h0, w0;
  kbrl_position(m, M, OSP, OHW, OW, C, DHW, HW, W, sd, sh, sw, pd, ph, pw, base, d0, h0, w0);
  const unsigned uD = (unsigned)D, uH = (unsigned)H, uW = (unsigned)W;
  float acc[TILE_N];
#pragma unroll
  for (int j = 0; j < TILE_N; ++j) acc[j] = 0.0f;
#pragma unroll 4
  for (int kk = 0; kk < (int)Kred; ++kk) {
    const int4 e = __ldg(table + kk);
    const bool ok = (unsigned)(d0 + e.y) < uD && (unsigned)(h0 + e.z) < uH &&
                    (unsigned)(w0 + e.w) < uW;
    const float v = ok ? __ldg(x + (base + e.x)) : 0.0f;
    const float4* wr = reinterpret_cast<const float4*>(wt + (long long)kk * Npad + co0);
#pragma unroll
    for (int q = 0; q < TILE_N / 4; ++q) {
      const float4 w4 = __ldg(wr + q);
      acc[4 * q] = fmaf(v, w4.x, acc[4 * q]);
      acc[4 * q + 1] = fmaf(v, w4.y, acc[4 * q + 1]);
      acc[4 * q + 2] = fmaf(v, w4.z, acc[4 * q + 2]);
      acc[4 * q + 3] = fmaf(v, w4.w, acc[4 * q + 3]);
    }
  }
  const long long n = m / OSP, p = m - n * OSP;
#pragma unroll
  for (int j = 0; j < TILE_N; ++j) {
    const long long co = co0 + j;
    if (co < Cout) y[(n * Cout + co) * OSP + p] = acc[j] + bias[co];
  }
}
