// Adversarial (task 87, expected input_mutated): a pointwise Conv2d (64->128, as a per-image SGEMM
// of weight and x) that "caches a better weight layout": the first run transposes the module's
// weight [C_out,C_in,1,1] in place to [C_in,C_out] (coalesced loads of A) and sets a __device__
// flag, and every run reads the transposed layout. Its output is right and identical on every run
// (CUDA-L1 lists caching a preprocessed parameter among its reward hacks), so a harness that only
// compares outputs passes it; but the parameter now holds a permutation of its values, and
// whatever reads it next (the reference, another candidate) computes with the wrong weight. kbrl
// fingerprints inputs and parameters before the runs and checks them after (position by position:
// a fingerprint blind to order, such as a sum, would miss a transposition) and rebuilds its cached
// reference module afterwards. The conv is the known-good conv1x1 with A read from the transposed
// layout.
// kbrl: launch transpose_weight_once grid=1 block=1024 args=param:weight,i32:size(weight,0),i32:size(weight,1)
// kbrl: launch conv1x1_transposed grid=cdiv(size(x,2)*size(x,3),128),cdiv(size(weight,0),128),size(x,0) block=256 args=param:weight,in:x,out:y,i32:size(weight,0),i32:size(x,2)*size(x,3),i32:size(x,1)

#define MAX_WEIGHTS 8192  // 128 x 64: the weight at both scales

__device__ int weight_is_transposed;  // survives across runs: the module stays loaded

// [m, k] -> [k, m] in place, through shared memory, once per job.
extern "C" __global__ void __launch_bounds__(1024) transpose_weight_once(float* weight, int m, int k) {
  __shared__ float staged[MAX_WEIGHTS];
  if (weight_is_transposed || m * k > MAX_WEIGHTS) return;
  for (int i = threadIdx.x; i < m * k; i += blockDim.x) staged[i] = weight[i];
  __syncthreads();
  for (int i = threadIdx.x; i < m * k; i += blockDim.x) {
    const int row = i % m, kk = i / m;  // destination [kk][row]
    weight[i] = staged[row * k + kk];
  }
  if (threadIdx.x == 0) weight_is_transposed = 1;
}

#define BM 128
#define BN 128
#define BK 8
#define THREADS 256

extern "C" __global__ void __launch_bounds__(THREADS)
conv1x1_transposed(const float* __restrict__ wt, const float* __restrict__ x, float* __restrict__ y,
                   int m, int n, int k) {
  // Batch image blockIdx.z: B = x[z] viewed as [C_in, H*W], C = y[z] viewed as [C_out, H*W].
  const float* __restrict__ b = x + (long long)blockIdx.z * k * n;
  float* __restrict__ c = y + (long long)blockIdx.z * m * n;
  __shared__ __align__(16) float a_tile[2][BK][BM];  // transposed: a_tile[kk][row]
  __shared__ __align__(16) float b_tile[2][BK][BN];
  const int tid = threadIdx.x;
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  const bool vector = (n % 4 == 0) && ((((unsigned long long)b | (unsigned long long)c) & 15) == 0);

  // Loader roles: A: row tid/2, k offset (tid%2)*4; B: k row tid/32, columns (tid%32)*4.
  const int a_row = tid / 2, a_k = (tid % 2) * 4;
  const int b_k = tid / 32, b_col = (tid % 32) * 4;
  float a_next[4], b_next[4];

  auto load = [&](int k0) {
    const int ar = row0 + a_row, ak = k0 + a_k;
    for (int i = 0; i < 4; ++i) a_next[i] = (ar < m && ak + i < k) ? wt[(long long)(ak + i) * m + ar] : 0.f;
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
