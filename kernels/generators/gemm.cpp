#include "gemm.h"

#include <algorithm>
#include <string>
#include <vector>

#include <kbrl/error.h>

#include "family_common.h"

namespace kbrl {
namespace {

constexpr int kMatvecTask = 4;
constexpr int kSplitTask = 6;
constexpr int kTasks[] = {1, 2, 3, 4, 6, 7, 8, 9, 10, 11, 13, 14, 15, 16, 17, 18};

bool covered(int id) { return std::find(std::begin(kTasks), std::end(kTasks), id) != std::end(kTasks); }

void check_covered(const TaskSpec& task) {
  check_covered(covered(task.id), "gemm", task);
}

/// The block tiles (tile_m, tile_n, items_per_thread) the space offers: threads = tile_m * tile_n /
/// items_per_thread^2, from 64 to 512.
struct Shape {
  int bm, bn, ipt;
};
constexpr Shape kShapes[] = {{128, 128, 8}, {128, 64, 8}, {64, 128, 8}, {64, 64, 8},
                             {128, 64, 4},  {64, 128, 4}, {64, 64, 4},  {32, 32, 4}};

bool is_shape(int bm, int bn, int ipt) {
  for (const Shape& s : kShapes)
    if (s.bm == bm && s.bn == bn && s.ipt == ipt) return true;
  return false;
}

/// C[z](M,N) = op(A[z]) op(B[z]) over K, as the task stores it.
struct Problem {
  int64_t batch = 1, m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  int tri = 0;  // 0: none, 1: triu of the product of upper-triangular inputs, 2: tril (lower)
  int64_t lda = 0, ldb = 0, ldc = 0;
};

int64_t product(const std::vector<int64_t>& shape, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p *= shape[i];
  return p;
}

Problem problem_of(const TaskSpec& task) {
  check_covered(task);
  KBRL_CHECK_INPUT(task.inputs.size() == 2 && task.outputs.size() == 1 && task.parameters.empty(),
                   "task {}: the gemm generator expects C = f(A, B)", task.id);
  const auto& a = task.inputs[0].shape;
  const auto& b = task.inputs[1].shape;
  const auto& c = task.outputs[0].shape;
  Problem p;
  p.trans_a = task.id == 16 || task.id == 18;
  p.trans_b = task.id == 17 || task.id == 18;
  p.tri = task.id == 14 ? 1 : task.id == 15 ? 2 : 0;
  if (task.id == 3) {
    KBRL_CHECK_INPUT(a.size() == 3 && b.size() == 3 && a[0] == b[0] && a[2] == b[1],
                     "task 3: bmm shapes");
    p.batch = a[0];
    p.m = a[1];
    p.k = a[2];
    p.n = b[2];
  } else {
    KBRL_CHECK_INPUT(a.size() >= 2 && b.size() == 2, "task {}: matmul shapes", task.id);
    if (p.trans_a) {
      p.k = a[0];
      p.m = a[1];
    } else {
      p.m = product(a, 0, a.size() - 1);
      p.k = a.back();
    }
    p.n = p.trans_b ? b[0] : b[1];
    KBRL_CHECK_INPUT((p.trans_b ? b[1] : b[0]) == p.k, "task {}: inner dimensions differ", task.id);
  }
  KBRL_CHECK_INPUT(product(c, 0, c.size()) == p.batch * p.m * p.n && c.back() == p.n,
                   "task {}: output shape", task.id);
  p.lda = p.trans_a ? p.m : p.k;
  p.ldb = p.trans_b ? p.k : p.n;
  p.ldc = p.n;
  return p;
}

// ---------------------------------------------------------------------------------------------
// The tiled GEMM (every task but 4).

const char* kGemmCommon = R"(
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
)";

// The kernel's skeleton: $DECL (accumulators), $COMPUTE (one shared k-tile at As, Bs), $EPILOGUE.
const char* kGemmKernel = R"(
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
$DECL
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
$COMPUTE
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
$COMPUTE
      }
      __syncthreads();
    }
  }
  const bool vc = use_vec && kb_aligned16(C) && (ldc & 3) == 0;
$EPILOGUE
}
)";

const char* kSimtDecl = R"(  // fp32 SIMT: each thread owns TM x TN outputs, rows ty*4 + q*THREADS_M*4 + (0..3) and
  // columns tx*4 + p*THREADS_N*4 + (0..3) of the tile (conflict-free float4 shared reads).
  const int tx = (int)threadIdx.x % THREADS_N, ty = (int)threadIdx.x / THREADS_N;
  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.f;
)";

const char* kSimtCompute = R"(#pragma unroll
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
        })";

const char* kSimtEpilogue = R"(#pragma unroll
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
  })";

const char* kTensorCoreHelpers = R"(
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
)";

const char* kTensorCoreDecl = R"(  const int warp = (int)threadIdx.x / 32, lane = (int)threadIdx.x % 32;
  const int wm = warp / WARPS_N, wn = warp % WARPS_N;
  wmma::fragment<wmma::accumulator, 16, 16, 8, float> acc[FM][FN];
#pragma unroll
  for (int i = 0; i < FM; ++i)
#pragma unroll
    for (int j = 0; j < FN; ++j) wmma::fill_fragment(acc[i][j], 0.f);
)";

const char* kTensorCoreCompute = R"(#pragma unroll
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
        })";

const char* kTensorCoreEpilogue = R"(  // Each fragment goes through the warp's 16 x 16 staging area in shared memory, then to C with
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
    })";

bool tensor_core(const Config& c) { return c.at("precision") != "fp32"; }

std::string gemm_source(const TaskSpec& task, const Config& config) {
  const int bm = static_cast<int>(config.integer("tile_m"));
  const int bn = static_cast<int>(config.integer("tile_n"));
  const int bk = static_cast<int>(config.integer("tile_k"));
  const int ipt = static_cast<int>(config.integer("items_per_thread"));
  const bool tc = tensor_core(config);
  (void)task;
  std::string s = fmt::format(
      "// kbrl gemm generator: a tiled GEMM, C = op(A) op(B) with fp32 {}.\n"
      "// tile_m={} tile_n={} tile_k={} items_per_thread={} ({}x{} outputs per thread), {}.\n"
      "// Shapes, strides, batch, layout, vec and stages are kernel arguments.\n"
      "constexpr int BM = {}, BN = {}, BK = {}, TM = {}, TN = {};\n",
      tc ? "accumulation" : "math", bm, bn, bk, ipt, ipt, ipt,
      tc ? "tensor cores (tf32 / tf32x3 by argument)" : "fp32 SIMT (FFMA)", bm, bn, bk, ipt, ipt);
  s += kGemmCommon;
  if (tc) s += kTensorCoreHelpers;
  std::string kernel = kGemmKernel;
  replace_all(kernel, "$DECL", tc ? kTensorCoreDecl : kSimtDecl);
  replace_all(kernel, "$COMPUTE", tc ? kTensorCoreCompute : kSimtCompute);
  replace_all(kernel, "$EPILOGUE", tc ? kTensorCoreEpilogue : kSimtEpilogue);
  s += kernel;
  return s;
}

/// The split-K factors of task 6 (K = 524288 at KernelBench's scale, 256 x 256 output).
const std::vector<std::string> kSplits = {"16", "64", "256"};

KnobSpace gemm_space(int task_id) {
  KnobSpace space;
  space
      .add_knob({"tile_m", {"32", "64", "128"}, "rows of C per block"})
      .add_knob({"tile_n", {"32", "64", "128"}, "columns of C per block"})
      .add_knob({"tile_k", {"8", "16", "32"}, "k-depth of the shared-memory tiles"})
      .add_knob({"items_per_thread", {"4", "8"},
                 "per-thread micro-tile: items_per_thread x items_per_thread outputs (fp32); the "
                 "warp tile's area for tensor cores"})
      .add_knob({"vec", {"1", "4"},
                 "floats per global access: 4 = float4 loads and stores where the address is "
                 "16-byte aligned and the chunk is in bounds (scalar otherwise)"})
      .add_knob({"stages", {"1", "2"},
                 "shared-memory buffers: 2 = double-buffered (the next tile's global loads overlap "
                 "the math), 1 = single-buffered"})
      .add_knob({"precision", {"fp32", "tf32x3", "tf32"},
                 "fp32: FFMA; tf32x3 (unsafe): tensor cores, TF32 with 3-way split operands (near "
                 "fp32); tf32 (unsafe): tensor cores, plain TF32"});
  if (task_id == kSplitTask)
    space.add_knob({"split_k", kSplits,
                    "K is cut into this many chunks; each writes its partial C to scratch, then a "
                    "second launch sums the chunks in order (deterministic)"});
  space.add_constraint(
      {"(tile_m, tile_n, items_per_thread) is one of 128x128/8, 128x64/8, 64x128/8, 64x64/8, "
       "128x64/4, 64x128/4, 64x64/4, 32x32/4 (64 to 512 threads)",
       {"tile_m", "tile_n", "items_per_thread"}, [](const Config& c) {
         return is_shape(static_cast<int>(c.integer("tile_m")),
                         static_cast<int>(c.integer("tile_n")),
                         static_cast<int>(c.integer("items_per_thread")));
       }});
  return space;
}

Candidate gemm_generate(const TaskSpec& task, const Config& config) {
  const Problem p = problem_of(task);
  const int64_t bm = config.integer("tile_m"), bn = config.integer("tile_n"),
                bk = config.integer("tile_k"), ipt = config.integer("items_per_thread");
  const int64_t stages = config.integer("stages");
  const bool tc = tensor_core(config);
  const int64_t threads = (bm / ipt) * (bn / ipt);
  const int64_t tiles = ((p.m + bm - 1) / bm) * ((p.n + bn - 1) / bn);
  KBRL_CHECK_INPUT(tiles >= 1 && tiles <= 2147483647, "task {}: {} tiles exceed CUDA's grid limit",
                   task.id, tiles);

  int64_t zs = p.batch, a_z = p.m * p.k, b_z = p.k * p.n, c_z = p.m * p.n;
  int64_t k_chunk = p.k, k_step = 0;
  const bool split = config.has("split_k");
  if (split) {
    const int64_t want = config.integer("split_k");
    k_chunk = (p.k + want - 1) / want;
    k_chunk = std::max<int64_t>(bk, (k_chunk + bk - 1) / bk * bk);  // whole k-tiles, aligned
    zs = (p.k + k_chunk - 1) / k_chunk;
    k_step = k_chunk;
    a_z = p.trans_a ? k_chunk * p.lda : k_chunk;
    b_z = p.trans_b ? k_chunk : k_chunk * p.ldb;
    c_z = p.m * p.n;
  }
  KBRL_CHECK_INPUT(zs >= 1 && zs <= 65535, "task {}: {} batches exceed CUDA's grid limit", task.id,
                   zs);

  int64_t smem = stages * bk * ((bm + 4) + (bn + 4)) * 4;
  if (tc) smem = std::max<int64_t>(smem, threads / 32 * 256 * 4);

  Candidate candidate;
  candidate.task_id = task.id;
  candidate.source = gemm_source(task, config);
  Launch main;
  main.kernel = "kbrl_gemm";
  main.grid = {static_cast<uint32_t>(tiles), static_cast<uint32_t>(zs), 1};
  main.block = {static_cast<uint32_t>(threads), 1, 1};
  main.shared_bytes = static_cast<uint32_t>(smem);
  main.args = {KernelArg{ArgKind::input, 0},
               KernelArg{ArgKind::input, 1},
               split ? KernelArg{ArgKind::scratch, 0} : KernelArg{ArgKind::output, 0},
               i64_arg(p.m),
               i64_arg(p.n),
               i64_arg(p.k),
               i64_arg(p.lda),
               i64_arg(p.ldb),
               i64_arg(p.ldc),
               i64_arg(p.batch > 1 || split ? a_z : 0),
               i64_arg(p.batch > 1 || split ? b_z : 0),
               i64_arg(p.batch > 1 || split ? c_z : 0),
               i64_arg(k_chunk),
               i64_arg(k_step),
               i32_arg(p.trans_a ? 1 : 0),
               i32_arg(p.trans_b ? 1 : 0),
               i32_arg(config.integer("vec") == 4 ? 1 : 0),
               i32_arg(stages),
               i32_arg(p.tri),
               i32_arg(config.at("precision") == "tf32x3" ? 1 : 0)};
  candidate.launches.push_back(std::move(main));
  if (split) {
    const int64_t n = p.m * p.n;
    candidate.scratch.push_back({"split_k_partials", zs * n * 4});
    Launch reduce;
    reduce.kernel = "kbrl_splitk_reduce";
    reduce.grid = {static_cast<uint32_t>((n + 255) / 256), 1, 1};
    reduce.block = {256, 1, 1};
    reduce.args = {KernelArg{ArgKind::scratch, 0}, KernelArg{ArgKind::output, 0}, i64_arg(n),
                   i64_arg(n), i32_arg(zs)};
    candidate.launches.push_back(std::move(reduce));
  }
  return candidate;
}

Config gemm_expert(const TaskSpec& task) {
  // The classic fp32 SIMT SGEMM: 128 x 128 block tiles, 8 x 8 outputs per thread (256 threads),
  // k-tiles of 16, double-buffered shared memory, float4 global accesses. Task 6 (256 x 256 output,
  // K = 524288) splits K 64 ways: 4 tiles x 64 chunks = 256 blocks, about one wave of an H100.
  Config c{{"tile_m", "128"}, {"tile_n", "128"}, {"tile_k", "16"}, {"items_per_thread", "8"},
           {"vec", "4"},      {"stages", "2"},    {"precision", "fp32"}};
  if (task.id == kSplitTask) c.set("split_k", "64");
  return c;
}

// ---------------------------------------------------------------------------------------------
// Task 4: matrix-vector, y[M] = A[M,K] x[K] (memory-bound: every element of A read once).

std::string matvec_source(const Config& config) {
  const int64_t unroll = config.integer("unroll"), rows = config.integer("tile_m");
  const bool streaming = config.at("cache_hint") == "streaming";
  std::string s = fmt::format(
      "// kbrl gemm generator: task 4, y = A x (matrix-vector), fp32 accumulation.\n"
      "// tile_m={} (rows per block or warp, sharing each load of x), unroll={}, cache_hint={}.\n"
      "// variant (block or warp per row group), vec and the block size are kernel arguments.\n"
      "constexpr int ROWS = {}, UNROLL = {};\n",
      rows, unroll, config.at("cache_hint"), rows, unroll);
  s += streaming ? "#define KB_LOAD_A(p) __ldcs(p)\n" : "#define KB_LOAD_A(p) (*(p))\n";
  s += R"(
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
)";
  return s;
}

KnobSpace matvec_space() {
  KnobSpace space;
  space
      .add_knob({"variant", {"block_per_row", "warp_per_row"},
                 "block_per_row: a block reduces tile_m rows (warp sums, then across warps); "
                 "warp_per_row: each warp reduces its own tile_m rows"})
      .add_knob({"block", {"128", "256", "512"}, "threads per block"})
      .add_knob({"tile_m", {"1", "2", "4"},
                 "rows per block (block_per_row) or per warp (warp_per_row); each load of x "
                 "serves that many rows"})
      .add_knob({"vec", {"1", "4"},
                 "floats per access of A and x: 4 = float4 when 16-byte aligned (scalar "
                 "otherwise)"})
      .add_knob({"unroll", {"1", "2", "4"}, "independent loads in flight per row per thread"})
      .add_knob({"cache_hint", {"none", "streaming"},
                 "streaming: A (read once) with __ldcs; x is read through the read-only path"})
      .add_knob({"fast_math", {"off", "on"}, "on (unsafe): --use_fast_math"});
  return space;
}

Candidate matvec_generate(const TaskSpec& task, const Config& config) {
  check_covered(task);
  KBRL_CHECK_INPUT(task.inputs.size() == 2 && task.inputs[0].shape.size() == 2 &&
                       task.inputs[1].shape.size() == 2 && task.inputs[1].shape[1] == 1 &&
                       task.inputs[1].shape[0] == task.inputs[0].shape[1],
                   "task 4: expects A[M,K] x B[K,1]");
  const int64_t m = task.inputs[0].shape[0], k = task.inputs[0].shape[1];
  const int64_t block = config.integer("block"), rows = config.integer("tile_m");
  const bool warp_mode = config.at("variant") == "warp_per_row";
  const int64_t per_block = warp_mode ? rows * (block / 32) : rows;
  const int64_t grid = (m + per_block - 1) / per_block;
  Candidate candidate;
  candidate.task_id = task.id;
  candidate.source = matvec_source(config);
  Launch launch;
  launch.kernel = "kbrl_gemv";
  launch.grid = {grid_dim(grid, task.id), 1, 1};
  launch.block = {static_cast<uint32_t>(block), 1, 1};
  launch.args = {KernelArg{ArgKind::input, 0},
                 KernelArg{ArgKind::input, 1},
                 KernelArg{ArgKind::output, 0},
                 i64_arg(m),
                 i64_arg(k),
                 i32_arg(warp_mode ? 1 : 0),
                 i32_arg(config.integer("vec") == 4 ? 1 : 0)};
  candidate.launches.push_back(std::move(launch));
  add_fast_math_option(candidate, config);
  return candidate;
}

class GemmGenerator final : public Generator {
 public:
  std::string_view name() const override { return "gemm"; }
  bool covers(int task_id) const override { return covered(task_id); }

  KnobSpace space(const TaskSpec& task) const override {
    check_covered(task);
    return task.id == kMatvecTask ? matvec_space() : gemm_space(task.id);
  }

  Candidate generate(const TaskSpec& task, const Config& given) const override {
    const Config config = checked_config(space(task), given);
    return task.id == kMatvecTask ? matvec_generate(task, config) : gemm_generate(task, config);
  }

  Config expert(const TaskSpec& task) const override {
    check_covered(task);
    if (task.id == kMatvecTask)
      // One block of 256 threads per 2 rows (each float4 of x serves both rows, halving x's L2
      // traffic), float4 loads, 4 independent loads in flight per row, A streamed (read once).
      return Config{{"variant", "block_per_row"}, {"block", "256"},  {"tile_m", "2"},
                    {"vec", "4"},                 {"unroll", "4"},   {"cache_hint", "streaming"},
                    {"fast_math", "off"}};
    return gemm_expert(task);
  }
};

}  // namespace

const Generator& gemm_generator() {
  static const GemmGenerator generator;
  return generator;
}

}  // namespace kbrl
