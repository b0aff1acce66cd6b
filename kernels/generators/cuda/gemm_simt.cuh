// The fp32 SIMT (FFMA) path of the gemm generator's tiled GEMM (gemm.cpp, precision=fp32); the
// skeleton is gemm.cuh's `kernel`.
//   header    the unit's opening comment (tile sizes filled in)
//   decl      each thread's TM x TN accumulators and its place in the block
//   compute   one k-tile: float4 reads of the k-major shared tiles, TM x TN FFMAs per k
//   epilogue  the stores of C (float4 where aligned, the triangular mask of tasks 14 / 15)
//@section header
// kbrl gemm generator: a tiled GEMM, C = op(A) op(B) with fp32 math.
// tile_m=@TILE_M@ tile_n=@TILE_N@ tile_k=@TILE_K@ items_per_thread=@IPT@ (@IPT@x@IPT@ outputs per thread), fp32 SIMT (FFMA).
// Shapes, strides, batch, layout, vec and stages are kernel arguments.
//@section decl
  // fp32 SIMT: each thread owns TM x TN outputs, rows ty*4 + q*THREADS_M*4 + (0..3) and
  // columns tx*4 + p*THREADS_N*4 + (0..3) of the tile (conflict-free float4 shared reads).
  const int tx = (int)threadIdx.x % THREADS_N, ty = (int)threadIdx.x / THREADS_N;
  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.f;
//@section compute nonl
#pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
          float a[TM], b[TN];
#pragma unroll
          for (int q = 0; q < TM / 4; ++q) {
            const float4 v = *reinterpret_cast<const float4*>(as + kk * LDA_S + q * THREADS_M * 4 + ty * 4);
            a[4 * q] = v.x; a[4 * q + 1] = v.y; a[4 * q + 2] = v.z; a[4 * q + 3] = v.w;
          }
#pragma unroll
          for (int p = 0; p < TN / 4; ++p) {
            const float4 v = *reinterpret_cast<const float4*>(bs + kk * LDB_S + p * THREADS_N * 4 + tx * 4);
            b[4 * p] = v.x; b[4 * p + 1] = v.y; b[4 * p + 2] = v.z; b[4 * p + 3] = v.w;
          }
#pragma unroll
          for (int i = 0; i < TM; ++i)
#pragma unroll
            for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
//@section epilogue nonl
#pragma unroll
  for (int q = 0; q < TM / 4; ++q) {
#pragma unroll
    for (int ii = 0; ii < 4; ++ii) {
      const long long m = m0 + q * THREADS_M * 4 + ty * 4 + ii;
      if (m >= M) continue;
      float* crow = C + m * ldc;
#pragma unroll
      for (int p = 0; p < TN / 4; ++p) {
        const long long n = n0 + p * THREADS_N * 4 + tx * 4;
        float o[4];
#pragma unroll
        for (int jj = 0; jj < 4; ++jj) {
          o[jj] = acc[4 * q + ii][4 * p + jj];
          if ((tri == 1 && m > n + jj) || (tri == 2 && m < n + jj)) o[jj] = 0.f;
        }
        if (vc && n + 3 < N) {
          *reinterpret_cast<float4*>(crow + n) = make_float4(o[0], o[1], o[2], o[3]);
        } else {
#pragma unroll
          for (int jj = 0; jj < 4; ++jj)
            if (n + jj < N) crow[n + jj] = o[jj];
        }
      }
    }
  }
