// The tensor-core path of the gemm generator's tiled GEMM (gemm.cpp, precision=tf32 or tf32x3: one
// unit for both, x3 is a kernel argument); the skeleton is gemm.cuh's `kernel`.
//   header    the unit's opening comment (tile sizes filled in)
//   helpers   <mma.h>, the warp tiling and kb_split (a fragment into TF32 high and low parts)
//   decl      each warp's wmma accumulator fragments
//   compute   one k-tile: fragments loaded, split, and multiplied (3 products for tf32x3)
//   epilogue  each fragment staged through shared memory, then stored to C with bounds checks
//@section header
// kbrl gemm generator: a tiled GEMM, C = op(A) op(B) with fp32 accumulation.
// tile_m=@TILE_M@ tile_n=@TILE_N@ tile_k=@TILE_K@ items_per_thread=@IPT@ (@IPT@x@IPT@ outputs per thread), tensor cores (tf32 / tf32x3 by argument).
// Shapes, strides, batch, layout, vec and stages are kernel arguments.
//@section helpers

#include <mma.h>
using namespace nvcuda;

// precision=tf32 / tf32x3 (unsafe): tensor cores, wmma m16n16k8 with TF32 inputs and fp32
// accumulation. Warp tile WM x WN of 16 x 16 fragments. x3: each operand is split into a TF32 high
// part and a TF32 low part (v - high) and three products are accumulated (lo*hi + hi*lo + hi*hi),
// close to fp32 accuracy; otherwise one TF32 product.
constexpr int WM = TM * TN * 32 / 512 >= 4 ? (BN >= 64 ? 32 : 64) : 16;
constexpr int WN = TM * TN * 32 / WM;
constexpr int FM = WM / 16, FN = WN / 16, WARPS_N = BN / WN;
static_assert(BM % WM == 0 && BN % WN == 0 && (BM / WM) * (BN / WN) * 32 == THREADS, "warp tiling");
static_assert(BK % 8 == 0, "tf32 k-step is 8");

template <class F>
KB_DEV void kb_split(F& hi, F& lo, bool x3) {
#pragma unroll
  for (int t = 0; t < hi.num_elements; ++t) {
    const float v = hi.x[t];
    const float h = wmma::__float_to_tf32(v);
    hi.x[t] = h;
    lo.x[t] = x3 ? wmma::__float_to_tf32(v - h) : 0.f;
  }
}
//@section decl
  const int warp = (int)threadIdx.x / 32, lane = (int)threadIdx.x % 32;
  const int wm = warp / WARPS_N, wn = warp % WARPS_N;
  wmma::fragment<wmma::accumulator, 16, 16, 8, float> acc[FM][FN];
#pragma unroll
  for (int i = 0; i < FM; ++i)
#pragma unroll
    for (int j = 0; j < FN; ++j) wmma::fill_fragment(acc[i][j], 0.f);
//@section compute nonl
#pragma unroll
        for (int kk = 0; kk < BK; kk += 8) {
          wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::col_major> ah[FM], al[FM];
          wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major> bh[FN], bl[FN];
#pragma unroll
          for (int i = 0; i < FM; ++i) {
            wmma::load_matrix_sync(ah[i], as + kk * LDA_S + wm * WM + i * 16, LDA_S);
            kb_split(ah[i], al[i], x3);
          }
#pragma unroll
          for (int j = 0; j < FN; ++j) {
            wmma::load_matrix_sync(bh[j], bs + kk * LDB_S + wn * WN + j * 16, LDB_S);
            kb_split(bh[j], bl[j], x3);
          }
#pragma unroll
          for (int i = 0; i < FM; ++i)
#pragma unroll
            for (int j = 0; j < FN; ++j) {
              if (x3) {
                wmma::mma_sync(acc[i][j], al[i], bh[j], acc[i][j]);
                wmma::mma_sync(acc[i][j], ah[i], bl[j], acc[i][j]);
              }
              wmma::mma_sync(acc[i][j], ah[i], bh[j], acc[i][j]);
            }
        }
//@section epilogue nonl
  // Each fragment goes through the warp's 16 x 16 staging area in shared memory, then to C with
  // bounds checks (and the triangular mask).
  __syncthreads();
  float* stage = smem + warp * 256;
#pragma unroll
  for (int i = 0; i < FM; ++i)
#pragma unroll
    for (int j = 0; j < FN; ++j) {
      wmma::store_matrix_sync(stage, acc[i][j], 16, wmma::mem_row_major);
      __syncwarp();
      const int r = lane / 2, c0 = (lane % 2) * 8;
      const long long m = m0 + wm * WM + i * 16 + r;
      const long long n = n0 + wn * WN + j * 16 + c0;
      if (m < M) {
        float* crow = C + m * ldc;
        float o[8];
#pragma unroll
        for (int e = 0; e < 8; ++e) {
          o[e] = stage[r * 16 + c0 + e];
          if ((tri == 1 && m > n + e) || (tri == 2 && m < n + e)) o[e] = 0.f;
        }
        if (vc && n + 7 < N) {
          *reinterpret_cast<float4*>(crow + n) = make_float4(o[0], o[1], o[2], o[3]);
          *reinterpret_cast<float4*>(crow + n + 4) = make_float4(o[4], o[5], o[6], o[7]);
        } else {
#pragma unroll
          for (int e = 0; e < 8; ++e)
            if (n + e < N) crow[n + e] = o[e];
        }
      }
      __syncwarp();
    }
