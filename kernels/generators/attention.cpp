#include "attention.h"

#include <algorithm>
#include <cmath>
#include <string>

#include <kbrl/error.h>

#include "device_snippets.h"
#include "family_common.h"

namespace kbrl {
namespace {

constexpr int kTaskId = 97;
constexpr int kThreadTile = 8;        // rows and columns of a thread's register tile
constexpr int kSoftmaxBlock = 256;    // threads of a softmax block

const char* const kDevice =
R"KBRL(
typedef long long i64;
#define KBRL_NEG_INF (__int_as_float(0xff800000))

#if KBRL_HALF
typedef __half SmemT;
__device__ __forceinline__ SmemT to_smem(float v) { return __float2half(v); }
__device__ __forceinline__ float from_smem(SmemT v) { return __half2float(v); }
#else
typedef float SmemT;
__device__ __forceinline__ SmemT to_smem(float v) { return v; }
__device__ __forceinline__ float from_smem(SmemT v) { return v; }
#endif

constexpr int kThreads = (kBM / kTM) * (kBN / kTN);
constexpr int kAF = kBM * kBK / 4 / kThreads;  // float4 of the A tile per thread
constexpr int kBF = kBK * kBN / 4 / kThreads;  // float4 of the B tile per thread
static_assert(kAF >= 1 && kBF >= 1, "tile too small for the block");

// C = alpha * A B for one batch entry: A [M][K] row-major; B [N][K] (kBT: C = A B^T) or [K][N].
// Block tile kBM x kBN, k-steps of kBK through shared memory (kStages buffers), a kTM x kTN
// register tile per thread, fp32 accumulation in k order. Tails in M, N and K are zero-filled
// (K and N multiples of 4).
template <bool kBT>
__device__ __forceinline__ void gemm_block(const float* __restrict__ A, const float* __restrict__ B,
                                           float* __restrict__ C, i64 M, i64 N, i64 K,
                                           float alpha) {
  __shared__ __align__(16) SmemT As[kStages][kBK][kBM];
  __shared__ __align__(16) SmemT Bs[kStages][kBK][kBN];
  const int t = threadIdx.x;
  const int tx = t % (kBN / kTN), ty = t / (kBN / kTN);
  const i64 m0 = (i64)blockIdx.y * kBM, n0 = (i64)blockIdx.x * kBN;
  float4 ra[kAF], rb[kBF];

  auto load = [&](i64 k0) {
#pragma unroll
    for (int i = 0; i < kAF; ++i) {
      const int idx = t + i * kThreads;
      const int r = idx / (kBK / 4), kq = idx % (kBK / 4);
      const i64 m = m0 + r, k = k0 + 4 * kq;
      ra[i] = (m < M && k < K) ? *reinterpret_cast<const float4*>(A + m * K + k)
                               : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
#pragma unroll
    for (int i = 0; i < kBF; ++i) {
      const int idx = t + i * kThreads;
      if (kBT) {
        const int r = idx / (kBK / 4), kq = idx % (kBK / 4);
        const i64 n = n0 + r, k = k0 + 4 * kq;
        rb[i] = (n < N && k < K) ? *reinterpret_cast<const float4*>(B + n * K + k)
                                 : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      } else {
        const int kr = idx / (kBN / 4), nq = idx % (kBN / 4);
        const i64 k = k0 + kr, n = n0 + 4 * nq;
        rb[i] = (k < K && n < N) ? *reinterpret_cast<const float4*>(B + k * N + n)
                                 : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      }
    }
  };
  auto store = [&](int buf) {
#pragma unroll
    for (int i = 0; i < kAF; ++i) {
      const int idx = t + i * kThreads;
      const int r = idx / (kBK / 4), kq = idx % (kBK / 4);
      As[buf][4 * kq + 0][r] = to_smem(ra[i].x);
      As[buf][4 * kq + 1][r] = to_smem(ra[i].y);
      As[buf][4 * kq + 2][r] = to_smem(ra[i].z);
      As[buf][4 * kq + 3][r] = to_smem(ra[i].w);
    }
#pragma unroll
    for (int i = 0; i < kBF; ++i) {
      const int idx = t + i * kThreads;
      if (kBT) {
        const int r = idx / (kBK / 4), kq = idx % (kBK / 4);
        Bs[buf][4 * kq + 0][r] = to_smem(rb[i].x);
        Bs[buf][4 * kq + 1][r] = to_smem(rb[i].y);
        Bs[buf][4 * kq + 2][r] = to_smem(rb[i].z);
        Bs[buf][4 * kq + 3][r] = to_smem(rb[i].w);
      } else {
        const int kr = idx / (kBN / 4), nq = idx % (kBN / 4);
        Bs[buf][kr][4 * nq + 0] = to_smem(rb[i].x);
        Bs[buf][kr][4 * nq + 1] = to_smem(rb[i].y);
        Bs[buf][kr][4 * nq + 2] = to_smem(rb[i].z);
        Bs[buf][kr][4 * nq + 3] = to_smem(rb[i].w);
      }
    }
  };

  float acc[kTM][kTN];
#pragma unroll
  for (int i = 0; i < kTM; ++i)
#pragma unroll
    for (int j = 0; j < kTN; ++j) acc[i][j] = 0.0f;

  auto compute = [&](int buf) {
#pragma unroll
    for (int k = 0; k < kBK; ++k) {
      float a[kTM], b[kTN];
#pragma unroll
      for (int i = 0; i < kTM; ++i) a[i] = from_smem(As[buf][k][ty * kTM + i]);
#pragma unroll
      for (int j = 0; j < kTN; ++j) b[j] = from_smem(Bs[buf][k][tx * kTN + j]);
#pragma unroll
      for (int i = 0; i < kTM; ++i)
#pragma unroll
        for (int j = 0; j < kTN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
  };

  const i64 nk = (K + kBK - 1) / kBK;
#if KBRL_STAGES == 2
  // Double buffering: the next k-step's global loads are in flight during this step's math.
  load(0);
  store(0);
  __syncthreads();
  for (i64 kt = 0; kt < nk; ++kt) {
    const int cur = (int)(kt & 1);
    if (kt + 1 < nk) load((kt + 1) * kBK);
    compute(cur);
    if (kt + 1 < nk) store(cur ^ 1);
    __syncthreads();
  }
#else
  for (i64 kt = 0; kt < nk; ++kt) {
    load(kt * kBK);
    store(0);
    __syncthreads();
    compute(0);
    __syncthreads();
  }
#endif

#pragma unroll
  for (int i = 0; i < kTM; ++i) {
    const i64 m = m0 + ty * kTM + i;
    if (m >= M) continue;
#pragma unroll
    for (int j = 0; j < kTN; j += 4) {
      const i64 n = n0 + tx * kTN + j;
      if (n < N)
        *reinterpret_cast<float4*>(C + m * N + n) =
            make_float4(alpha * acc[i][j], alpha * acc[i][j + 1], alpha * acc[i][j + 2],
                        alpha * acc[i][j + 3]);
    }
  }
}

// Launch 1: scores[z] = scale * Q[z] K[z]^T, z = blockIdx.z over batch * heads.
extern "C" __global__ void __launch_bounds__(kThreads)
kbrl_attn_scores(const float* __restrict__ q, const float* __restrict__ k, float* __restrict__ s,
                 i64 L, i64 S, i64 D, float scale) {
  const i64 z = blockIdx.z;
  gemm_block<true>(q + z * L * D, k + z * S * D, s + z * L * S, L, S, D, scale);
}

// Launch 3: out[z] = P[z] V[z].
extern "C" __global__ void __launch_bounds__(kThreads)
kbrl_attn_output(const float* __restrict__ p, const float* __restrict__ v, float* __restrict__ o,
                 i64 L, i64 S, i64 D) {
  const i64 z = blockIdx.z;
  gemm_block<false>(p + z * L * S, v + z * S * D, o + z * L * D, L, D, S, 1.0f);
}


// An online softmax state: the maximum and the sum of exp(v - max).
struct MaxSum { float m, s; };

__device__ __forceinline__ MaxSum ms_add(MaxSum st, float v) {
  if (v > st.m) return MaxSum{v, st.s * k_exp(st.m - v) + 1.0f};
  return MaxSum{st.m, st.s + k_exp(v - st.m)};
}

__device__ __forceinline__ MaxSum ms_merge(MaxSum a, MaxSum b) {
  const float m = a.m > b.m ? a.m : b.m;
  if (m == KBRL_NEG_INF) return MaxSum{m, 0.0f};
  return MaxSum{m, a.s * k_exp(a.m - m) + b.s * k_exp(b.m - m)};
}

__device__ __forceinline__ MaxSum ms_warp(MaxSum st) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
    st = ms_merge(st, MaxSum{__shfl_xor_sync(0xffffffffu, st.m, o),
                             __shfl_xor_sync(0xffffffffu, st.s, o)});
  return st;
}

// Launch 2 (variant=warp_per_row): one warp per row of the scores, in place.
extern "C" __global__ void kbrl_attn_softmax_warp(float* __restrict__ s, i64 rows, i64 cols) {
  const int lane = threadIdx.x & 31;
  const i64 warps = (i64)gridDim.x * (blockDim.x >> 5);
  for (i64 r = (i64)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); r < rows; r += warps) {
    float* row = s + r * cols;
    MaxSum st = {KBRL_NEG_INF, 0.0f};
    for (i64 c = lane; c < cols; c += 32) st = ms_add(st, row[c]);
    st = ms_warp(st);
    for (i64 c = lane; c < cols; c += 32) row[c] = k_div(k_exp(row[c] - st.m), st.s);
  }
}

// Launch 2 (variant=block_per_row): one block per row, merged through shared memory.
extern "C" __global__ void kbrl_attn_softmax_block(float* __restrict__ s, i64 rows, i64 cols) {
  __shared__ MaxSum part[32];
  __shared__ MaxSum total;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (i64 r = blockIdx.x; r < rows; r += gridDim.x) {
    float* row = s + r * cols;
    MaxSum st = {KBRL_NEG_INF, 0.0f};
    for (i64 c = threadIdx.x; c < cols; c += blockDim.x) st = ms_add(st, row[c]);
    st = ms_warp(st);
    if (lane == 0) part[warp] = st;
    __syncthreads();
    if (warp == 0) {
      st = lane < (int)(blockDim.x >> 5) ? part[lane] : MaxSum{KBRL_NEG_INF, 0.0f};
      st = ms_warp(st);
      if (lane == 0) total = st;
    }
    __syncthreads();
    st = total;
    for (i64 c = threadIdx.x; c < cols; c += blockDim.x) row[c] = k_div(k_exp(row[c] - st.m), st.s);
    __syncthreads();
  }
}
)KBRL"
    ;

struct Shape {
  int64_t batch_heads, L, D;
};

Shape check_task(const TaskSpec& task) {
  check_covered(task.id == kTaskId, "attention", task);
  KBRL_CHECK_INPUT(task.inputs.size() == 3 && task.outputs.size() == 1,
                   "task {}: expected Q, K, V and one output", task.id);
  const auto& shape = task.inputs[0].shape;
  KBRL_CHECK_INPUT(shape.size() == 4 && task.inputs[1].shape == shape &&
                       task.inputs[2].shape == shape && task.outputs[0].shape == shape,
                   "task {}: expected Q, K, V, out of one shape [B,H,L,D]", task.id);
  const Shape s{shape[0] * shape[1], shape[2], shape[3]};
  KBRL_CHECK_INPUT(s.L % 4 == 0 && s.D % 4 == 0,
                   "task {}: L and D must be multiples of 4 (float4 accesses)", task.id);
  KBRL_CHECK_INPUT(s.batch_heads <= 65535, "task {}: B*H exceeds gridDim.z", task.id);
  return s;
}

std::string source_of(const Config& c) {
  const bool half = c.at("precision") == "fp16_compute";
  const bool fast = c.at("fast_math") == "on";
  std::string s = fmt::format(
      "// kbrl attention generator: softmax(Q K^T * scale) V in three launches over a scratch\n"
      "// score matrix. tile_m={} tile_n={} tile_k={} stages={} precision={} fast_math={}\n",
      c.at("tile_m"), c.at("tile_n"), c.at("tile_k"), c.at("stages"), c.at("precision"),
      c.at("fast_math"));
  if (half)
    s += "#include <cuda_fp16.h>\n"
         "// precision=fp16_compute (unsafe): GEMM tiles rounded to __half in shared memory.\n";
  if (fast) s += "// fast_math=on (unsafe): __expf/__fdividef and --use_fast_math.\n";
  s += fmt::format(
      "#define KBRL_HALF {}\n#define KBRL_FAST {}\n#define KBRL_STAGES {}\n"
      "constexpr int kBM = {};\nconstexpr int kBN = {};\nconstexpr int kBK = {};\n"
      "constexpr int kStages = {};\nconstexpr int kTM = {};\nconstexpr int kTN = {};\n",
      half ? 1 : 0, fast ? 1 : 0, c.at("stages"), c.at("tile_m"), c.at("tile_n"), c.at("tile_k"),
      c.at("stages"), kThreadTile, kThreadTile);
  // The softmax's math (intrinsics only in fast_math units: the audit reads the source's text).
  const FloatMath math = fast ? FloatMath::fast : FloatMath::exact;
  s += k_exp_helper(math, "d") + k_div_helper(math);
  s += kDevice;
  return s;
}

class AttentionGenerator final : public Generator {
 public:
  std::string_view name() const override { return "attention"; }
  bool covers(int task_id) const override { return task_id == kTaskId; }

  KnobSpace space(const TaskSpec& task) const override {
    check_task(task);
    KnobSpace space;
    space
        .add_knob({"tile_m", {"64", "128"},
                   "rows of the GEMM block tile (each thread computes an 8 x 8 register tile)"})
        .add_knob({"tile_n", {"64", "128"},
                   "columns of the GEMM block tile; threads per block = tile_m * tile_n / 64"})
        .add_knob({"tile_k", {"8", "16"}, "k-step of the GEMMs through shared memory"})
        .add_knob({"stages", {"1", "2"},
                   "shared-memory buffers: 2 overlaps the next k-step's global loads with the "
                   "math (one barrier per step)"})
        .add_knob({"variant", {"warp_per_row", "block_per_row"},
                   "the softmax launch: one warp, or one 256-thread block, per score row"})
        .add_knob({"precision", {"fp32", "fp16_compute"},
                   "fp16_compute (unsafe): GEMM tiles rounded to __half in shared memory (fp32 "
                   "products and sums)"})
        .add_knob({"fast_math", {"off", "on"},
                   "on (unsafe): __expf/__fdividef in the softmax and --use_fast_math"});
    space.add_constraint(fast_math_needs_fp32());
    return space;
  }

  Candidate generate(const TaskSpec& task, const Config& given) const override {
    const Shape sh = check_task(task);
    const Config config = checked_config(space(task), given);
    const int64_t bm = config.integer("tile_m"), bn = config.integer("tile_n");
    const uint32_t threads = static_cast<uint32_t>(bm * bn / (kThreadTile * kThreadTile));
    const uint32_t z = static_cast<uint32_t>(sh.batch_heads);
    auto cdiv = [](int64_t a, int64_t b) { return static_cast<uint32_t>((a + b - 1) / b); };
    const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(sh.D)));

    Candidate c;
    c.task_id = task.id;
    c.source = source_of(config);
    c.scratch.push_back({"scores", sh.batch_heads * sh.L * sh.L * 4});

    Launch scores;
    scores.kernel = "kbrl_attn_scores";
    scores.grid = {cdiv(sh.L, bn), cdiv(sh.L, bm), z};
    scores.block = {threads, 1, 1};
    scores.args = {KernelArg{ArgKind::input, 0}, KernelArg{ArgKind::input, 1},
                   KernelArg{ArgKind::scratch, 0}, i64_arg(sh.L), i64_arg(sh.L), i64_arg(sh.D),
                   f32_arg(scale)};
    c.launches.push_back(std::move(scores));

    const int64_t rows = sh.batch_heads * sh.L;
    Launch softmax;
    softmax.block = {kSoftmaxBlock, 1, 1};
    if (config.at("variant") == "warp_per_row") {
      softmax.kernel = "kbrl_attn_softmax_warp";
      softmax.grid = {cdiv(rows, kSoftmaxBlock / 32), 1, 1};
    } else {
      softmax.kernel = "kbrl_attn_softmax_block";
      softmax.grid = {static_cast<uint32_t>(std::min<int64_t>(rows, 2147483647)), 1, 1};
    }
    softmax.args = {KernelArg{ArgKind::scratch, 0}, i64_arg(rows), i64_arg(sh.L)};
    c.launches.push_back(std::move(softmax));

    Launch out;
    out.kernel = "kbrl_attn_output";
    out.grid = {cdiv(sh.D, bn), cdiv(sh.L, bm), z};
    out.block = {threads, 1, 1};
    out.args = {KernelArg{ArgKind::scratch, 0}, KernelArg{ArgKind::input, 2},
                KernelArg{ArgKind::output, 0}, i64_arg(sh.L), i64_arg(sh.L), i64_arg(sh.D)};
    c.launches.push_back(std::move(out));
    add_fast_math_option(c, config);
    return c;
  }

  Config expert(const TaskSpec& task) const override {
    check_task(task);
    // The classic fp32 SIMT SGEMM shape: 128 x 128 block tiles, 8 x 8 per thread (256 threads),
    // k-steps of 8 double-buffered; a warp per 512-long score row for the softmax.
    return Config{{"tile_m", "128"},       {"tile_n", "128"},   {"tile_k", "8"},
                  {"stages", "2"},         {"variant", "warp_per_row"},
                  {"precision", "fp32"},   {"fast_math", "off"}};
  }
};

}  // namespace

const Generator& attention_generator() {
  static const AttentionGenerator generator;
  return generator;
}

}  // namespace kbrl
