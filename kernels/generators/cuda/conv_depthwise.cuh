// The conv generator's depthwise kernel kbrl_conv_dw (kernels/generators/conv_depthwise.cpp; tasks
// 82-85, and the first pass of task 86's two_pass). Sections in source order: fp16_include
// (precision=fp16_compute only), intro, then the C++'s #defines DW_KH .. DW_ITEMS, mac_fp16 |
// mac_fp32 (the multiply-add), kernel.

//@section fp16_include
#include <cuda_fp16.h>
//@section intro

// Depthwise: a thread computes DW_ROWS x DW_ITEMS outputs of one (n, c) plane from a
// register window of the input rows it needs; the channel's weights stay in registers.
//@section mac_fp16
// precision=fp16_compute (unsafe): each product x*w is formed in __half; sums stay fp32.
#define DW_MAC(acc, a, b) ((acc) + __half2float(__hmul(__float2half(a), __float2half(b))))
//@section mac_fp32
#define DW_MAC(acc, a, b) fmaf((a), (b), (acc))
//@section kernel
#define DW_IN_ROWS ((DW_ROWS - 1) * DW_SH + (DW_KH - 1) * DW_DH + 1)
#define DW_IN_COLS ((DW_ITEMS - 1) * DW_SW + (DW_KW - 1) * DW_DW + 1)

extern "C" __global__ void kbrl_conv_dw(const float* __restrict__ x, const float* __restrict__ w,
    float* __restrict__ y, long long C, long long H, long long W, long long OH, long long OW,
    long long ph, long long pw, long long total) {
  const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= total) return;
  const long long OWG = (OW + DW_ITEMS - 1) / DW_ITEMS, OHG = (OH + DW_ROWS - 1) / DW_ROWS;
  const long long owg = t % OWG, r = t / OWG;
  const long long ohg = r % OHG, nc = r / OHG;
  const long long c = nc % C;
  const int oh0 = (int)(ohg * DW_ROWS), ow0 = (int)(owg * DW_ITEMS);
  const int ih0 = oh0 * DW_SH - (int)ph, iw0 = ow0 * DW_SW - (int)pw;
  const float* __restrict__ xp = x + nc * H * W;
  float* __restrict__ yp = y + nc * OH * OW;
  float wr[DW_KH * DW_KW];
#pragma unroll
  for (int i = 0; i < DW_KH * DW_KW; ++i) wr[i] = __ldg(w + c * (DW_KH * DW_KW) + i);
  float acc[DW_ROWS][DW_ITEMS];
#pragma unroll
  for (int a = 0; a < DW_ROWS; ++a)
#pragma unroll
    for (int b = 0; b < DW_ITEMS; ++b) acc[a][b] = 0.0f;
#pragma unroll
  for (int rr = 0; rr < DW_IN_ROWS; ++rr) {
    const int ih = ih0 + rr;
    const bool rok = (unsigned)ih < (unsigned)H;
    float seg[DW_IN_COLS];
#pragma unroll
    for (int cc = 0; cc < DW_IN_COLS; ++cc) {
      const int iw = iw0 + cc;
      seg[cc] = (rok && (unsigned)iw < (unsigned)W) ? __ldg(xp + (long long)ih * W + iw) : 0.0f;
    }
#pragma unroll
    for (int a = 0; a < DW_ROWS; ++a)
#pragma unroll
      for (int kh = 0; kh < DW_KH; ++kh)
        if (a * DW_SH + kh * DW_DH == rr) {
#pragma unroll
          for (int b = 0; b < DW_ITEMS; ++b)
#pragma unroll
            for (int kw = 0; kw < DW_KW; ++kw)
              acc[a][b] = DW_MAC(acc[a][b], seg[b * DW_SW + kw * DW_DW], wr[kh * DW_KW + kw]);
        }
  }
#pragma unroll
  for (int a = 0; a < DW_ROWS; ++a) {
    const int oh = oh0 + a;
    if (oh >= OH) continue;
#pragma unroll
    for (int b = 0; b < DW_ITEMS; ++b) {
      const int ow = ow0 + b;
      if (ow < OW) yp[(long long)oh * OW + ow] = acc[a][b];
    }
  }
}
