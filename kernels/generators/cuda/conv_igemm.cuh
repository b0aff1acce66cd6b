// The conv generator's implicit GEMM kernel kbrl_conv_igemm (kernels/generators/conv.cpp joins
// these sections after its #define block of TILE_M, TILE_N, TILE_K, NTHREADS, STAGES, TM, TN,
// KBRL_KALIGN and, fused, DKH/DKW). Sections in source order, alternatives on one line:
//   mma_include (tf32/tf32x3 only), intro, macros, smem_floats_wmma | smem_floats_fma
//   signature (@OPERAND@: operand_table, or operand_dwt for task 86 fused; @SHAPE_PARAMS@ from
//   conv.cuh), then conv.cuh's tile_decode, then setup
//   gather_table | gather_fused   the A operand: gathered input, or the depthwise conv of x
//   stage                         B loads and the stores of both tiles into shared memory
//   compute_fma | (wmma_intro, tf32_note | tf32x3_note, wmma_setup, compute_tf32 | compute_tf32x3)
//   loop_1stage | loop_2stage     the reduction loop (2: double-buffered)
//   epilogue_fma | epilogue_wmma  bias and stores

//@section mma_include
#include <mma.h>
//@section intro

// Implicit GEMM: a block computes TILE_M output positions x TILE_N output channels,
// staging the gathered input patches (A, [TILE_K][TILE_M]) and the transposed weights
// (B, [TILE_K][TILE_N]) in shared memory, TILE_K reduction indices at a time.
//@section macros

// A operand: each thread gathers MA positions x KA reduction indices per slice.
#define MA (TILE_M >= NTHREADS ? TILE_M / NTHREADS : 1)
#define KSTEP (NTHREADS >= TILE_M ? NTHREADS / TILE_M : 1)
#define KA (TILE_K / KSTEP)
// B operand: float4 loads of the slice's TILE_K x TILE_N weights.
#define BV (TILE_K * TILE_N / 4)
#define BL ((BV + NTHREADS - 1) / NTHREADS)
#define TILE_FLOATS (STAGES * TILE_K * (TILE_M + TILE_N))
//@section smem_floats_wmma
#define SMEM_FLOATS (TILE_FLOATS > TILE_M * TILE_N / 4 ? TILE_FLOATS : TILE_M * TILE_N / 4)
//@section smem_floats_fma
#define SMEM_FLOATS TILE_FLOATS
//@section signature

extern "C" __global__ void __launch_bounds__(NTHREADS) kbrl_conv_igemm(
    const float* __restrict__ x, const float* __restrict__ wt,
    @OPERAND@, float* __restrict__ y,
    @SHAPE_PARAMS@) {
//@section operand_table nonl
const int4* __restrict__ table
//@section operand_dwt nonl
const float* __restrict__ dwt
//@section setup
  const int tid = threadIdx.x;
  const long long m_base = bm * TILE_M;
  const long long co_base = bn * TILE_N;
  __shared__ __align__(128) float smem[SMEM_FLOATS];
  float* As = smem;                               // [STAGES][TILE_K][TILE_M]
  float* Bs = smem + STAGES * TILE_K * TILE_M;    // [STAGES][TILE_K][TILE_N]

  long long a_base[MA];
  int a_d[MA], a_h[MA], a_w[MA];
#pragma unroll
  for (int j = 0; j < MA; ++j)
    kbrl_position(m_base + (tid % TILE_M) + j * NTHREADS, M, OSP, OHW, OW, C, DHW, HW, W, sd, sh,
                  sw, pd, ph, pw, a_base[j], a_d[j], a_h[j], a_w[j]);
  const int a_k0 = tid / TILE_M;
  const unsigned uD = (unsigned)D, uH = (unsigned)H, uW = (unsigned)W;
  float a_reg[KA][MA];
  float4 b_reg[BL];

  auto load_tiles = [&](int kt) {
    const int k0 = kt * TILE_K;
#pragma unroll
    for (int i = 0; i < KA; ++i) {
//@section gather_table
      const int4 e = __ldg(table + k0 + a_k0 + i * KSTEP);
#pragma unroll
      for (int j = 0; j < MA; ++j) {
        const bool ok = (unsigned)(a_d[j] + e.y) < uD && (unsigned)(a_h[j] + e.z) < uH &&
                        (unsigned)(a_w[j] + e.w) < uW;
        a_reg[i][j] = ok ? __ldg(x + (a_base[j] + e.x)) : 0.0f;
      }
//@section gather_fused
      // A = the depthwise conv of channel c at the position (stride 1, dilation 1).
      const int ch = k0 + a_k0 + i * KSTEP;
      const bool cok = ch < C;
      float wv[DKH * DKW];
#pragma unroll
      for (int t = 0; t < DKH * DKW; ++t) wv[t] = cok ? __ldg(dwt + ch * (DKH * DKW) + t) : 0.0f;
#pragma unroll
      for (int j = 0; j < MA; ++j) {
        float v = 0.0f;
        const long long cb = a_base[j] + (long long)ch * HW;
#pragma unroll
        for (int kh = 0; kh < DKH; ++kh) {
          const bool hok = cok && (unsigned)(a_h[j] + kh) < uH;
#pragma unroll
          for (int kw = 0; kw < DKW; ++kw) {
            const bool ok = hok && (unsigned)(a_w[j] + kw) < uW;
            v = fmaf(ok ? __ldg(x + cb + kh * W + kw) : 0.0f, wv[kh * DKW + kw], v);
          }
        }
        a_reg[i][j] = v;
      }
//@section stage
    }
#pragma unroll
    for (int r = 0; r < BL; ++r) {
      const int f = tid + r * NTHREADS;
      if (BV % NTHREADS == 0 || f < BV) {
        const int row = f / (TILE_N / 4), col = f % (TILE_N / 4);
        b_reg[r] = __ldg(reinterpret_cast<const float4*>(wt + (long long)(k0 + row) * Npad + co_base) + col);
      }
    }
  };
  auto store_tiles = [&](int buf) {
    float* as = As + buf * (TILE_K * TILE_M);
    float* bs = Bs + buf * (TILE_K * TILE_N);
#pragma unroll
    for (int i = 0; i < KA; ++i)
#pragma unroll
      for (int j = 0; j < MA; ++j)
        as[(a_k0 + i * KSTEP) * TILE_M + (tid % TILE_M) + j * NTHREADS] = a_reg[i][j];
#pragma unroll
    for (int r = 0; r < BL; ++r) {
      const int f = tid + r * NTHREADS;
      if (BV % NTHREADS == 0 || f < BV) {
        const int row = f / (TILE_N / 4), col = f % (TILE_N / 4);
        *reinterpret_cast<float4*>(bs + row * TILE_N + col * 4) = b_reg[r];
      }
    }
  };
//@section compute_fma

  // Thread (tm, tn) owns positions {g*(TILE_M*4/TM) + tm*4 + 0..3} and channels
  // {g*(TILE_N*4/TN) + tn*4 + 0..3}: float4 reads of shared memory.
  const int tm = tid % (TILE_M / TM), tn = tid / (TILE_M / TM);
  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
  auto compute = [&](int buf) {
    const float* as = As + buf * (TILE_K * TILE_M);
    const float* bs = Bs + buf * (TILE_K * TILE_N);
#pragma unroll
    for (int k = 0; k < TILE_K; ++k) {
      float a[TM], b[TN];
#pragma unroll
      for (int g = 0; g < TM / 4; ++g) {
        const float4 v = *reinterpret_cast<const float4*>(as + k * TILE_M + g * (TILE_M * 4 / TM) + tm * 4);
        a[4 * g] = v.x; a[4 * g + 1] = v.y; a[4 * g + 2] = v.z; a[4 * g + 3] = v.w;
      }
#pragma unroll
      for (int g = 0; g < TN / 4; ++g) {
        const float4 v = *reinterpret_cast<const float4*>(bs + k * TILE_N + g * (TILE_N * 4 / TN) + tn * 4);
        b[4 * g] = v.x; b[4 * g + 1] = v.y; b[4 * g + 2] = v.z; b[4 * g + 3] = v.w;
      }
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
  };
//@section wmma_intro

  // Tensor cores: each warp computes a 32x32 tile as 2x2 wmma m16n16k8 fragments.
//@section tf32_note
  // precision=tf32 (unsafe): the operands are rounded to TF32 (10-bit mantissa).
//@section tf32x3_note
  // precision=tf32x3 (unsafe): each operand split into a TF32 high and low part,
  // three products (hi*lo, lo*hi, hi*hi) accumulated in fp32.
//@section wmma_setup
  using namespace nvcuda;
  const int warp = tid / 32, lane = tid % 32;
  const int wm = warp % (TILE_M / 32), wn = warp / (TILE_M / 32);
  wmma::fragment<wmma::accumulator, 16, 16, 8, float> acc[2][2];
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.0f);
  auto compute = [&](int buf) {
    const float* as = As + buf * (TILE_K * TILE_M);
    const float* bs = Bs + buf * (TILE_K * TILE_N);
#pragma unroll
    for (int k = 0; k < TILE_K; k += 8) {
      wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::col_major> a[2];
      wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major> b[2];
//@section compute_tf32
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        wmma::load_matrix_sync(a[i], as + k * TILE_M + wm * 32 + i * 16, TILE_M);
        wmma::load_matrix_sync(b[i], bs + k * TILE_N + wn * 32 + i * 16, TILE_N);
#pragma unroll
        for (int t = 0; t < a[i].num_elements; ++t) a[i].x[t] = wmma::__float_to_tf32(a[i].x[t]);
#pragma unroll
        for (int t = 0; t < b[i].num_elements; ++t) b[i].x[t] = wmma::__float_to_tf32(b[i].x[t]);
      }
#pragma unroll
      for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
    }
  };
//@section compute_tf32x3
      wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::col_major> a_lo[2];
      wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major> b_lo[2];
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        wmma::load_matrix_sync(a[i], as + k * TILE_M + wm * 32 + i * 16, TILE_M);
        wmma::load_matrix_sync(b[i], bs + k * TILE_N + wn * 32 + i * 16, TILE_N);
        a_lo[i] = a[i];
        b_lo[i] = b[i];
#pragma unroll
        for (int t = 0; t < a[i].num_elements; ++t) {
          const float hi = wmma::__float_to_tf32(a[i].x[t]);
          a_lo[i].x[t] = wmma::__float_to_tf32(a[i].x[t] - hi);
          a[i].x[t] = hi;
        }
#pragma unroll
        for (int t = 0; t < b[i].num_elements; ++t) {
          const float hi = wmma::__float_to_tf32(b[i].x[t]);
          b_lo[i].x[t] = wmma::__float_to_tf32(b[i].x[t] - hi);
          b[i].x[t] = hi;
        }
      }
#pragma unroll
      for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          wmma::mma_sync(acc[i][j], a_lo[i], b[j], acc[i][j]);
          wmma::mma_sync(acc[i][j], a[i], b_lo[j], acc[i][j]);
          wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
        }
    }
  };
//@section loop_1stage

  // One stage: load, compute, repeat.
  const int nk = (int)((Kred + TILE_K - 1) / TILE_K);
  for (int kt = 0; kt < nk; ++kt) {
    load_tiles(kt);
    store_tiles(0);
    __syncthreads();
    compute(0);
    __syncthreads();
  }
//@section loop_2stage

  // Two stages: the next slice's global loads are in flight (registers) while this one computes.
  const int nk = (int)((Kred + TILE_K - 1) / TILE_K);
  load_tiles(0);
  store_tiles(0);
  __syncthreads();
  for (int kt = 0; kt < nk; ++kt) {
    if (kt + 1 < nk) load_tiles(kt + 1);
    compute(kt & 1);
    if (kt + 1 < nk) store_tiles((kt + 1) & 1);
    __syncthreads();
  }
//@section epilogue_fma

  // Epilogue: y[n][co][p] = acc + bias[co]; float4 stores where 4 positions are contiguous.
#pragma unroll
  for (int g = 0; g < TM / 4; ++g) {
    const long long m0 = m_base + g * (TILE_M * 4 / TM) + tm * 4;
    if (m0 >= M) continue;
    const long long n0 = m0 / OSP, p0 = m0 - n0 * OSP;
    const bool run4 = m0 + 3 < M && p0 + 3 < OSP;
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      const long long co = co_base + (j / 4) * (TILE_N * 4 / TN) + tn * 4 + (j % 4);
      if (co >= Cout) continue;
      const float bv = bias[co];
      float* dst = y + (n0 * Cout + co) * OSP + p0;
      const float v0 = acc[4 * g][j] + bv, v1 = acc[4 * g + 1][j] + bv;
      const float v2 = acc[4 * g + 2][j] + bv, v3 = acc[4 * g + 3][j] + bv;
      if (run4) {
        if ((reinterpret_cast<unsigned long long>(dst) & 15) == 0) {
          *reinterpret_cast<float4*>(dst) = make_float4(v0, v1, v2, v3);
        } else {
          dst[0] = v0; dst[1] = v1; dst[2] = v2; dst[3] = v3;
        }
      } else {
        const float v[4] = {v0, v1, v2, v3};
#pragma unroll
        for (int r = 0; r < 4; ++r) {
          const long long m = m0 + r;
          if (m < M) {
            const long long n = m / OSP, p = m - n * OSP;
            y[(n * Cout + co) * OSP + p] = v[r];
          }
        }
      }
    }
  }
}
//@section epilogue_wmma

  // Epilogue: each warp stages a 16x16 fragment in shared memory (the tiles are done with), then
  // writes y[n][co][p] = acc + bias[co], 16 consecutive positions per channel.
  float* stage = smem + warp * 256;
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const long long m = m_base + wm * 32 + i * 16 + (lane % 16);
    const bool mok = m < M;
    const long long n = mok ? m / OSP : 0, p = m - n * OSP;
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      wmma::store_matrix_sync(stage, acc[i][j], 16, wmma::mem_col_major);
      __syncwarp();
#pragma unroll
      for (int r = 0; r < 8; ++r) {
        const int nl = lane / 16 + 2 * r;
        const long long co = co_base + wn * 32 + j * 16 + nl;
        if (mok && co < Cout) y[(n * Cout + co) * OSP + p] = stage[nl * 16 + (lane % 16)] + bias[co];
      }
      __syncwarp();
    }
  }
}
