// The tiled GEMM of the gemm generator (gemm.cpp; every task but 4, whose matrix-vector kernel is in
// matvec.cuh). A unit is the header of its math path (gemm_simt.cuh or gemm_tensor_core.cuh), the
// constexpr line of the tile sizes, `common`, the path's `helpers` (tensor cores only) and `kernel`
// with the path's pieces filled in.
//   common  tile geometry, the global -> register -> k-major shared tile loader (Tile<R>), the
//           alignment test and the split-K reduction kernel kbrl_splitk_reduce
//   kernel  kbrl_gemm's skeleton: @DECL@ (accumulators), @COMPUTE@ (one shared k-tile at as, bs,
//           twice: the double- and the single-buffered loop) and @EPILOGUE@ (the stores of C)
//@section common

constexpr int THREADS_M = BM / TM, THREADS_N = BN / TN, THREADS = THREADS_M * THREADS_N;
constexpr int LDA_S = BM + 4, LDB_S = BN + 4;              // shared tiles are k-major, padded
constexpr int A_TILE = BK * LDA_S, B_TILE = BK * LDB_S;   // floats per stage

#define KB_DEV __device__ __forceinline__

// An R x BK tile of a logical matrix X(r, k), zero outside r < r_lim, k < k_lim, read from global
// memory into registers (load) and stored k-major into shared memory S[k * (R + 4) + r] (store).
// kcontig: X(r, k) = p[r * ld + k] (k contiguous); otherwise X(r, k) = p[k * ld + r].
// vec: 16-byte loads for whole in-bounds chunks (the caller checked p and ld for alignment).
template <int R>
struct Tile {
  static constexpr int CHUNKS = R * BK / 4;
  static constexpr int PER = (CHUNKS + THREADS - 1) / THREADS;
  static constexpr int LDS = R + 4;
  float4 v[PER];

  KB_DEV void load(const float* __restrict__ p, long long ld, bool kcontig, bool vec, long long r0,
                   long long r_lim, int k0, int k_lim) {
#pragma unroll
    for (int i = 0; i < PER; ++i) {
      const int c = (int)threadIdx.x + i * THREADS;
      float4 x = make_float4(0.f, 0.f, 0.f, 0.f);
      if (CHUNKS % THREADS == 0 || c < CHUNKS) {
        if (kcontig) {
          const long long r = r0 + c / (BK / 4);
          const int k = k0 + (c % (BK / 4)) * 4;
          if (r < r_lim) {
            const float* q = p + r * ld + k;
            if (vec && k + 3 < k_lim) {
              x = *reinterpret_cast<const float4*>(q);
            } else {
              if (k < k_lim) x.x = q[0];
              if (k + 1 < k_lim) x.y = q[1];
              if (k + 2 < k_lim) x.z = q[2];
              if (k + 3 < k_lim) x.w = q[3];
            }
          }
        } else {
          const int k = k0 + c / (R / 4);
          const long long r = r0 + (c % (R / 4)) * 4;
          if (k < k_lim) {
            const float* q = p + (long long)k * ld + r;
            if (vec && r + 3 < r_lim) {
              x = *reinterpret_cast<const float4*>(q);
            } else {
              if (r < r_lim) x.x = q[0];
              if (r + 1 < r_lim) x.y = q[1];
              if (r + 2 < r_lim) x.z = q[2];
              if (r + 3 < r_lim) x.w = q[3];
            }
          }
        }
      }
      v[i] = x;
    }
  }

  KB_DEV void store(float* S, bool kcontig) const {
#pragma unroll
    for (int i = 0; i < PER; ++i) {
      const int c = (int)threadIdx.x + i * THREADS;
      if (CHUNKS % THREADS == 0 || c < CHUNKS) {
        if (kcontig) {
          const int r = c / (BK / 4), k = (c % (BK / 4)) * 4;
          S[(k + 0) * LDS + r] = v[i].x;
          S[(k + 1) * LDS + r] = v[i].y;
          S[(k + 2) * LDS + r] = v[i].z;
          S[(k + 3) * LDS + r] = v[i].w;
        } else {
          const int k = c / (R / 4), r = (c % (R / 4)) * 4;
          *reinterpret_cast<float4*>(S + k * LDS + r) = v[i];
        }
      }
    }
  }
};

KB_DEV bool kb_aligned16(const void* p) { return (reinterpret_cast<unsigned long long>(p) & 15) == 0; }

// The split-K second stage: C[i] = sum over z of ws[z * slice + i], in the order z = 0, 1, ...
extern "C" __global__ void kbrl_splitk_reduce(const float* __restrict__ ws, float* __restrict__ C,
                                              long long n, long long slice, int splits) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float s = 0.f;
  for (int z = 0; z < splits; ++z) s += ws[(long long)z * slice + i];
  C[i] = s;
}
//@section kernel

// C[z] (M x N, leading dimension ldc) = op(A[z]) op(B[z]) over k < min(k_chunk, K - z * k_step),
// A[z] = A + z * a_z (likewise B, C). trans_a: A(m, k) = A[k * lda + m], else A[m * lda + k];
// trans_b: B(k, n) = B[n * ldb + k], else B[k * ldb + n]. tri = 1: upper-triangular inputs, C =
// triu(A B), k runs over [m0, n0 + BN) of the block's tile; tri = 2: lower, C = tril(A B), k over
// [n0, m0 + BM). stages = 2: double-buffered shared tiles (loads of tile t + 1 overlap the math on
// tile t); 1: single-buffered. use_vec: 16-byte global accesses where aligned.
extern "C" __global__ void __launch_bounds__(THREADS) kbrl_gemm(
    const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, long long M,
    long long N, long long K, long long lda, long long ldb, long long ldc, long long a_z,
    long long b_z, long long c_z, long long k_chunk, long long k_step, int trans_a, int trans_b,
    int use_vec, int stages, int tri, int x3) {
  extern __shared__ __align__(128) float smem[];
  const long long z = blockIdx.y;
  A += z * a_z;
  B += z * b_z;
  C += z * c_z;
  // Grouped raster: runs of 8 tile rows sweep the tile columns (A and B tiles reused from L2).
  const long long tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
  const long long bid = blockIdx.x, group = 8 * tiles_n;
  const long long first_m = (bid / group) * 8;
  const long long gsize = min(tiles_m - first_m, 8LL);
  const long long m0 = (first_m + (bid % group) % gsize) * BM;
  const long long n0 = ((bid % group) / gsize) * BN;

  long long kb = 0, ke = min(k_chunk, K - z * k_step);  // ke <= 0: an empty split
  if (tri == 1) {
    kb = m0;
    ke = min(ke, n0 + BN);
  } else if (tri == 2) {
    kb = n0;
    ke = min(ke, m0 + BM);
  }
  const int k_begin = (int)kb, k_end = (int)max(ke, kb);
  const int ntiles = (k_end - k_begin + BK - 1) / BK;
  const bool ka = !trans_a, kbc = trans_b != 0;
  const bool va = use_vec && kb_aligned16(A) && (lda & 3) == 0;
  const bool vb = use_vec && kb_aligned16(B) && (ldb & 3) == 0;
  float* As = smem;
  float* Bs = smem + stages * A_TILE;
  Tile<BM> ta;
  Tile<BN> tb;
@DECL@
  if (stages == 2) {
    if (ntiles > 0) {
      ta.load(A, lda, ka, va, m0, M, k_begin, k_end);
      tb.load(B, ldb, kbc, vb, n0, N, k_begin, k_end);
      ta.store(As, ka);
      tb.store(Bs, kbc);
    }
    __syncthreads();
    for (int t = 0; t < ntiles; ++t) {
      const int cur = t & 1;
      if (t + 1 < ntiles) {
        ta.load(A, lda, ka, va, m0, M, k_begin + (t + 1) * BK, k_end);
        tb.load(B, ldb, kbc, vb, n0, N, k_begin + (t + 1) * BK, k_end);
      }
      {
        const float* as = As + cur * A_TILE;
        const float* bs = Bs + cur * B_TILE;
@COMPUTE@
      }
      if (t + 1 < ntiles) {
        ta.store(As + (cur ^ 1) * A_TILE, ka);
        tb.store(Bs + (cur ^ 1) * B_TILE, kbc);
      }
      __syncthreads();
    }
  } else {
    for (int t = 0; t < ntiles; ++t) {
      ta.load(A, lda, ka, va, m0, M, k_begin + t * BK, k_end);
      tb.load(B, ldb, kbc, vb, n0, N, k_begin + t * BK, k_end);
      ta.store(As, ka);
      tb.store(Bs, kbc);
      __syncthreads();
      {
        const float* as = As;
        const float* bs = Bs;
@COMPUTE@
      }
      __syncthreads();
    }
  }
  const bool vc = use_vec && kb_aligned16(C) && (ldc & 3) == 0;
@EPILOGUE@
}
