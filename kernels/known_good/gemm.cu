// Known-good: task 1 (square matmul C = A @ B, 4096^3, fp32). Shared-memory tiled SGEMM with
// register blocking, plain FP32 FFMA (no TF32, no tensor cores): 128x128 block tiles, k-steps of
// 8, 256 threads each owning an 8x8 sub-block of C (two 4x4 quadrants, 64 rows/columns apart, for
// conflict-free float4 reads of shared memory), global->register prefetch of the next k-step while
// the current one is computed (double-buffered shared memory, one barrier per k-step).
// Any M, N, K work: loads outside the matrices read zeros and stores are guarded; float4 global
// accesses are used when K and N are multiples of 4 and the pointers are 16-byte aligned.
// kbrl: launch sgemm_128x128 grid=cdiv(size(B,1),128),cdiv(size(A,0),128) block=256 args=in:A,in:B,out:C,i32:size(A,0),i32:size(B,1),i32:size(A,1)

#define BM 128
#define BN 128
#define BK 8
#define THREADS 256

extern "C" __global__ void __launch_bounds__(THREADS)
sgemm_128x128(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c,
              int m, int n, int k) {
  __shared__ __align__(16) float a_tile[2][BK][BM];  // transposed: a_tile[kk][row]
  __shared__ __align__(16) float b_tile[2][BK][BN];
  const int tid = threadIdx.x;
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  const bool vector = (k % 4 == 0) && (n % 4 == 0) &&
                      ((((unsigned long long)a | (unsigned long long)b | (unsigned long long)c) & 15) == 0);

  // Loader roles: A: row tid/2, k offset (tid%2)*4; B: k row tid/32, columns (tid%32)*4.
  const int a_row = tid / 2, a_k = (tid % 2) * 4;
  const int b_k = tid / 32, b_col = (tid % 32) * 4;
  float a_next[4], b_next[4];

  auto load = [&](int k0) {
    const int ar = row0 + a_row, ak = k0 + a_k;
    if (vector && ar < m && ak < k) {
      const float4 v = *reinterpret_cast<const float4*>(a + (long long)ar * k + ak);
      a_next[0] = v.x, a_next[1] = v.y, a_next[2] = v.z, a_next[3] = v.w;
    } else {
      for (int i = 0; i < 4; ++i) a_next[i] = (ar < m && ak + i < k) ? a[(long long)ar * k + ak + i] : 0.f;
    }
    const int bk = k0 + b_k, bc = col0 + b_col;
    if (vector && bk < k && bc < n) {
      const float4 v = *reinterpret_cast<const float4*>(b + (long long)bk * n + bc);
      b_next[0] = v.x, b_next[1] = v.y, b_next[2] = v.z, b_next[3] = v.w;
    } else {
      for (int i = 0; i < 4; ++i) b_next[i] = (bk < k && bc + i < n) ? b[(long long)bk * n + bc + i] : 0.f;
    }
  };
  auto store = [&](int buf) {
    for (int i = 0; i < 4; ++i) a_tile[buf][a_k + i][a_row] = a_next[i];
    *reinterpret_cast<float4*>(&b_tile[buf][b_k][b_col]) = make_float4(b_next[0], b_next[1], b_next[2], b_next[3]);
  };

  // Compute roles: rows ty*4 + {0..3} and 64 + ty*4 + {0..3}; columns likewise with tx.
  const int ty = tid / 16, tx = tid % 16;
  float acc[8][8];
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 8; ++j) acc[i][j] = 0.f;

  load(0);
  store(0);
  __syncthreads();
  for (int k0 = 0, buf = 0; k0 < k; k0 += BK, buf ^= 1) {
    const bool more = k0 + BK < k;
    if (more) load(k0 + BK);
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      const float4 a_lo = *reinterpret_cast<const float4*>(&a_tile[buf][kk][ty * 4]);
      const float4 a_hi = *reinterpret_cast<const float4*>(&a_tile[buf][kk][64 + ty * 4]);
      const float4 b_lo = *reinterpret_cast<const float4*>(&b_tile[buf][kk][tx * 4]);
      const float4 b_hi = *reinterpret_cast<const float4*>(&b_tile[buf][kk][64 + tx * 4]);
      const float av[8] = {a_lo.x, a_lo.y, a_lo.z, a_lo.w, a_hi.x, a_hi.y, a_hi.z, a_hi.w};
      const float bv[8] = {b_lo.x, b_lo.y, b_lo.z, b_lo.w, b_hi.x, b_hi.y, b_hi.z, b_hi.w};
#pragma unroll
      for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
    }
    if (more) store(buf ^ 1);
    __syncthreads();
  }

#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int row = row0 + (i < 4 ? ty * 4 + i : 64 + ty * 4 + i - 4);
    if (row >= m) continue;
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int col = col0 + half * 64 + tx * 4;
      float* out = c + (long long)row * n + col;
      const float* v = &acc[i][half * 4];
      if (vector && col < n) {
        *reinterpret_cast<float4*>(out) = make_float4(v[0], v[1], v[2], v[3]);
      } else {
        for (int j = 0; j < 4; ++j)
          if (col + j < n) out[j] = v[j];
      }
    }
  }
}
