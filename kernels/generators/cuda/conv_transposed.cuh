// The conv_transposed generator's device code (kernels/generators/conv_transposed.cpp; its header
// describes the kernels). Sections in source order, alternatives on one line:
//   header                    the source's first lines (@VARIANT@ ... the knobs it depends on)
//   k_fma_fp16 | k_fma_fp32   the multiply-add (fp16_compute: products in __half)
//   (the C++ writes #define KBRL_HAS_BIAS)
//   k_store                   the store, __stcs when streaming
//   direct                    kbrl_convt_direct: one thread per output element
//   tiled_defines, tiled      kbrl_convt_tiled: the stride-phase register tile
//   bias_param                the bias pointer parameter, filled into @BIAS_PARAM@ of direct and
//                             tiled when the task has a bias

//@section header
// kbrl conv_transposed generator: gather formulation, shapes as kernel arguments.
// variant=@VARIANT@ items_per_thread=@ITEMS@ tile_n=@TILE_N@ precision=@PRECISION@
//@section k_fma_fp16
#include <cuda_fp16.h>

// precision=fp16_compute (unsafe): each product x * w is formed in __half; sums stay fp32.
__device__ __forceinline__ float k_fma(float a, float b, float c) {
  return c + __half2float(__hmul(__float2half_rn(a), __float2half_rn(b)));
}
//@section k_fma_fp32
__device__ __forceinline__ float k_fma(float a, float b, float c) { return fmaf(a, b, c); }
//@section k_store

__device__ __forceinline__ void k_store(float* p, float v, int streaming) {
  if (streaming) __stcs(p, v); else *p = v;
}
//@section bias_param nonl
 const float* __restrict__ bias,
//@section direct

extern "C" __global__ void kbrl_convt_direct(
    const float* __restrict__ x, const float* __restrict__ w,@BIAS_PARAM@ float* __restrict__ y,
    long long total, long long groups, long long cin_g, long long cout_g,
    long long ID, long long IH, long long IW, long long OD, long long OH, long long OW,
    long long KD, long long KH, long long KW, long long SD, long long SH, long long SW,
    long long PD, long long PH, long long PW, long long DD, long long DH, long long DW,
    int streaming) {
  const long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (e >= total) return;
  long long r = e;
  const int ow = (int)(r % OW); r /= OW;
  const int oh = (int)(r % OH); r /= OH;
  const int od = (int)(r % OD); r /= OD;
  const long long cout = groups * cout_g;
  const long long co = r % cout;
  const long long n = r / cout;
  const long long g = co / cout_g, col = co % cout_g;
  const long long taps = KD * KH * KW;
  const long long plane = ID * IH * IW;
#if KBRL_HAS_BIAS
  float acc = bias[co];
#else
  float acc = 0.0f;
#endif
  const float* xg = x + (n * groups * cin_g + g * cin_g) * plane;
  const float* wg = w + ((g * cin_g) * cout_g + col) * taps;
  for (int kd = 0; kd < (int)KD; ++kd) {
    const int vd = od + (int)PD - kd * (int)DD;
    if (vd < 0 || vd % (int)SD != 0 || vd / (int)SD >= (int)ID) continue;
    const int id = vd / (int)SD;
    for (int kh = 0; kh < (int)KH; ++kh) {
      const int vh = oh + (int)PH - kh * (int)DH;
      if (vh < 0 || vh % (int)SH != 0 || vh / (int)SH >= (int)IH) continue;
      const int ih = vh / (int)SH;
      for (int kw = 0; kw < (int)KW; ++kw) {
        const int vw = ow + (int)PW - kw * (int)DW;
        if (vw < 0 || vw % (int)SW != 0 || vw / (int)SW >= (int)IW) continue;
        const int iw = vw / (int)SW;
        const float* xp = xg + ((long long)id * IH + ih) * IW + iw;
        const float* wp = wg + (kd * KH + kh) * KW + kw;
        for (long long ci = 0; ci < cin_g; ++ci) {
          acc = k_fma(__ldg(xp), __ldg(wp), acc);
          xp += plane;
          wp += cout_g * taps;
        }
      }
    }
  }
  k_store(y + e, acc, streaming);
}
//@section tiled_defines

#define TO @TO@  // output positions per thread (blockDim apart)
#define TC @TC@  // output channels per thread
#define KBRL_SMEM_WEIGHTS @SMEM@
//@section tiled

extern "C" __global__ void kbrl_convt_tiled(
    const float* __restrict__ x, const float* __restrict__ w,@BIAS_PARAM@ float* __restrict__ y,
    long long groups, long long cin_g, long long cout_g, long long co_tiles,
    long long ID, long long IH, long long IW, long long OD, long long OH, long long OW,
    long long KD, long long KH, long long KW, long long SD, long long SH, long long SW,
    long long PD, long long PH, long long PW, long long DD, long long DH, long long DW,
    long long cchunk, int streaming) {
#if KBRL_SMEM_WEIGHTS
  extern __shared__ float4 kbrl_smem4[];
  float* ws = reinterpret_cast<float*>(kbrl_smem4);
#endif
  const int phases = (int)(SD * SH * SW);
  const long long inner_count = groups * co_tiles * phases;
  const long long inner = (long long)blockIdx.x % inner_count;
  const long long chunk = (long long)blockIdx.x / inner_count;
  const int phase = (int)(inner % phases);
  const long long gct = inner / phases;
  const long long g = gct / co_tiles;
  const int co0 = (int)(gct % co_tiles) * TC;  // first output channel of the tile, in the group
  const int rw = phase % (int)SW, rh = (phase / (int)SW) % (int)SH, rd = phase / (int)(SW * SH);
  const int Mw = (int)((OW - rw + SW - 1) / SW), Mh = (int)((OH - rh + SH - 1) / SH),
            Md = (int)((OD - rd + SD - 1) / SD);
  const long long P = (long long)Md * Mh * Mw;  // positions of this phase
  const long long p0 = chunk * (long long)blockDim.x * TO;
  if (Mw <= 0 || Mh <= 0 || Md <= 0 || p0 >= P) return;  // uniform over the block
  const long long n = blockIdx.y;
  const int tid = threadIdx.x;

  int md[TO], mh[TO], mw[TO];
  bool live[TO];
#pragma unroll
  for (int j = 0; j < TO; ++j) {
    const long long p = p0 + (long long)j * blockDim.x + tid;
    live[j] = p < P;
    const int q = live[j] ? (int)p : 0;
    mw[j] = q % Mw;
    mh[j] = (q / Mw) % Mh;
    md[j] = q / (Mw * Mh);
  }
  float acc[TO][TC];
#pragma unroll
  for (int j = 0; j < TO; ++j)
#pragma unroll
    for (int k = 0; k < TC; ++k) acc[j][k] = 0.0f;

  const int taps = (int)(KD * KH * KW);
  const long long plane = ID * IH * IW;
  const float* xg = x + (n * groups * cin_g + g * cin_g) * plane;
  for (long long ci0 = 0; ci0 < cin_g; ci0 += cchunk) {
    const int cc = (int)min(cchunk, cin_g - ci0);
#if KBRL_SMEM_WEIGHTS
    __syncthreads();  // the previous chunk's weights are no longer read
    for (int e = tid; e < cc * taps * TC; e += blockDim.x) {
      const int k = e % TC, t = (e / TC) % taps, c = e / (TC * taps);
      ws[e] = co0 + k < cout_g
                  ? __ldg(w + (((g * cin_g + ci0 + c) * cout_g + co0 + k) * taps + t))
                  : 0.0f;
    }
    __syncthreads();
#endif
    for (int kd = 0; kd < (int)KD; ++kd) {
      const int vd = rd + (int)PD - kd * (int)DD;
      if (vd % (int)SD != 0) continue;
      const int qd = vd / (int)SD;
      for (int kh = 0; kh < (int)KH; ++kh) {
        const int vh = rh + (int)PH - kh * (int)DH;
        if (vh % (int)SH != 0) continue;
        const int qh = vh / (int)SH;
        for (int kw = 0; kw < (int)KW; ++kw) {
          const int vw = rw + (int)PW - kw * (int)DW;
          if (vw % (int)SW != 0) continue;
          const int qw = vw / (int)SW;
          const int t = (kd * (int)KH + kh) * (int)KW + kw;
          int off[TO];
          bool ok[TO];
#pragma unroll
          for (int j = 0; j < TO; ++j) {
            const int id = qd + md[j], ih = qh + mh[j], iw = qw + mw[j];
            ok[j] = live[j] && id >= 0 && id < (int)ID && ih >= 0 && ih < (int)IH && iw >= 0 &&
                    iw < (int)IW;
            off[j] = ok[j] ? (id * (int)IH + ih) * (int)IW + iw : 0;
          }
          const float* xc = xg + ci0 * plane;
#if KBRL_SMEM_WEIGHTS
          const float* wc = ws + t * TC;
#else
          const float* wc = w + ((g * cin_g + ci0) * cout_g + co0) * taps + t;
#endif
          for (int c = 0; c < cc; ++c) {
            float xv[TO];
#pragma unroll
            for (int j = 0; j < TO; ++j) xv[j] = ok[j] ? __ldg(xc + off[j]) : 0.0f;
            float wv[TC];
#if KBRL_SMEM_WEIGHTS
#if TC % 4 == 0
#pragma unroll
            for (int k = 0; k < TC; k += 4) {
              const float4 q = *reinterpret_cast<const float4*>(wc + k);
              wv[k] = q.x; wv[k + 1] = q.y; wv[k + 2] = q.z; wv[k + 3] = q.w;
            }
#else
#pragma unroll
            for (int k = 0; k < TC; ++k) wv[k] = wc[k];
#endif
            wc += taps * TC;
#else
#pragma unroll
            for (int k = 0; k < TC; ++k) wv[k] = co0 + k < cout_g ? __ldg(wc + k * taps) : 0.0f;
            wc += cout_g * taps;
#endif
#pragma unroll
            for (int j = 0; j < TO; ++j)
#pragma unroll
              for (int k = 0; k < TC; ++k) acc[j][k] = k_fma(xv[j], wv[k], acc[j][k]);
            xc += plane;
          }
        }
      }
    }
  }

  const long long oplane = OD * OH * OW;
#pragma unroll
  for (int k = 0; k < TC; ++k) {
    const long long co = g * cout_g + co0 + k;
    if (co0 + k >= cout_g) break;
#if KBRL_HAS_BIAS
    const float b = bias[co];
#else
    const float b = 0.0f;
#endif
    float* yc = y + (n * groups * cout_g + co) * oplane;
#pragma unroll
    for (int j = 0; j < TO; ++j) {
      if (!live[j]) continue;
      const int od = rd + (int)SD * md[j], oh = rh + (int)SH * mh[j], ow = rw + (int)SW * mw[j];
      k_store(yc + ((long long)od * OH + oh) * OW + ow, acc[j][k] + b, streaming);
    }
  }
}
