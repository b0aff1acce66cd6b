// Task 4's matrix-vector kernel, y = A x (matvec.cpp, in the gemm generator). A unit is `header`,
// the constexpr line of ROWS and UNROLL, one of the load_a_* macros (the cache_hint knob) and
// `kernel`.
//   header            the unit's opening comment (tile_m, unroll, cache_hint filled in)
//   load_a_plain      KB_LOAD_A(p): a plain load of A
//   load_a_streaming  KB_LOAD_A(p): __ldcs (A is read once)
//   kernel            kb_rows (ROWS rows of A times x, UNROLL loads in flight), the warp sum and
//                     kbrl_gemv (a block or a warp per ROWS rows)
//@section header
// kbrl gemm generator: task 4, y = A x (matrix-vector), fp32 accumulation.
// tile_m=@TILE_M@ (rows per block or warp, sharing each load of x), unroll=@UNROLL@, cache_hint=@CACHE_HINT@.
// variant (block or warp per row group), vec and the block size are kernel arguments.
//@section load_a_plain
#define KB_LOAD_A(p) (*(p))
//@section load_a_streaming
#define KB_LOAD_A(p) __ldcs(p)
//@section kernel

__device__ __forceinline__ float kb_dot4(float4 a, float4 b, float acc) {
  acc = fmaf(a.x, b.x, acc);
  acc = fmaf(a.y, b.y, acc);
  acc = fmaf(a.z, b.z, acc);
  return fmaf(a.w, b.w, acc);
}

// Rows row0 .. row0 + ROWS - 1 (those < M) of A times x: `lane` of `width` cooperating threads;
// returns each row's partial sum in part[] (fixed order: deterministic).
__device__ __forceinline__ void kb_rows(const float* __restrict__ A, const float* __restrict__ x,
                                        long long M, long long K, long long row0, int lane,
                                        int width, bool use_vec, float (&part)[ROWS]) {
  float acc[ROWS][UNROLL];
#pragma unroll
  for (int r = 0; r < ROWS; ++r)
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) acc[r][u] = 0.f;
  const float* a[ROWS];
  bool aligned = use_vec && (reinterpret_cast<unsigned long long>(x) & 15) == 0 && (K & 3) == 0 &&
                 (reinterpret_cast<unsigned long long>(A) & 15) == 0;
#pragma unroll
  for (int r = 0; r < ROWS; ++r) a[r] = A + min(row0 + r, M - 1) * K;  // rows past M repeat M - 1
  long long done = 0;
  if (aligned) {
    const long long nv = K / 4;
    const float4* x4 = reinterpret_cast<const float4*>(x);
    long long j = lane;
    for (; j + (long long)(UNROLL - 1) * width < nv; j += (long long)UNROLL * width) {
      float4 xv[UNROLL], av[ROWS][UNROLL];
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) xv[u] = __ldg(x4 + j + u * width);
#pragma unroll
      for (int r = 0; r < ROWS; ++r)
#pragma unroll
        for (int u = 0; u < UNROLL; ++u)
          av[r][u] = KB_LOAD_A(reinterpret_cast<const float4*>(a[r]) + j + u * width);
#pragma unroll
      for (int r = 0; r < ROWS; ++r)
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) acc[r][u] = kb_dot4(av[r][u], xv[u], acc[r][u]);
    }
    for (; j < nv; j += width) {
      const float4 xv = __ldg(x4 + j);
#pragma unroll
      for (int r = 0; r < ROWS; ++r)
        acc[r][0] = kb_dot4(KB_LOAD_A(reinterpret_cast<const float4*>(a[r]) + j), xv, acc[r][0]);
    }
    done = nv * 4;
  }
  long long i = done + lane;
  for (; i + (long long)(UNROLL - 1) * width < K; i += (long long)UNROLL * width) {
    float xv[UNROLL], av[ROWS][UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) xv[u] = __ldg(x + i + u * width);
#pragma unroll
    for (int r = 0; r < ROWS; ++r)
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) av[r][u] = KB_LOAD_A(a[r] + i + u * width);
#pragma unroll
    for (int r = 0; r < ROWS; ++r)
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) acc[r][u] = fmaf(av[r][u], xv[u], acc[r][u]);
  }
  for (; i < K; i += width) {
    const float xv = __ldg(x + i);
#pragma unroll
    for (int r = 0; r < ROWS; ++r) acc[r][0] = fmaf(KB_LOAD_A(a[r] + i), xv, acc[r][0]);
  }
#pragma unroll
  for (int r = 0; r < ROWS; ++r) {
    float s = 0.f;
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) s += acc[r][u];
    part[r] = s;
  }
}

__device__ __forceinline__ float kb_warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// warp_per_row = 0: block b computes rows b*ROWS ..; 1: warp w of block b computes rows
// (b * warps + w) * ROWS ... blockDim.x is a multiple of 32, at most 1024.
extern "C" __global__ void kbrl_gemv(const float* __restrict__ A, const float* __restrict__ x,
                                     float* __restrict__ y, long long M, long long K,
                                     int warp_per_row, int use_vec) {
  __shared__ float red[ROWS][32];
  const int lane = (int)threadIdx.x % 32, warp = (int)threadIdx.x / 32;
  const int warps = (int)blockDim.x / 32;
  float part[ROWS];
  if (warp_per_row) {
    const long long row0 = ((long long)blockIdx.x * warps + warp) * ROWS;
    if (row0 >= M) return;  // whole warps only: no block-wide barrier follows
    kb_rows(A, x, M, K, row0, lane, 32, use_vec != 0, part);
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
      const float s = kb_warp_sum(part[r]);
      if (lane == 0 && row0 + r < M) y[row0 + r] = s;
    }
    return;
  }
  const long long row0 = (long long)blockIdx.x * ROWS;
  kb_rows(A, x, M, K, row0, (int)threadIdx.x, (int)blockDim.x, use_vec != 0, part);
#pragma unroll
  for (int r = 0; r < ROWS; ++r) {
    const float s = kb_warp_sum(part[r]);
    if (lane == 0) red[r][warp] = s;
  }
  __syncthreads();
  if (warp < ROWS) {  // warp r sums row r's warp partials in a fixed order
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
      if (r == warp) {
        const float s = kb_warp_sum(lane < warps ? red[r][lane] : 0.f);
        if (lane == 0 && row0 + r < M) y[row0 + r] = s;
      }
    }
  }
}
