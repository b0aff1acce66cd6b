#include "conv.h"

#include <algorithm>
#include <string>
#include <vector>

#include <kbrl/error.h>

#include "family_common.h"

namespace kbrl {
namespace {

// ---------------------------------------------------------------------------------------------
// Tasks
// ---------------------------------------------------------------------------------------------

enum class Kind { standard, depthwise, separable };

/// The module options a task's spec cannot show (reference/tasks_conv.cpp): stride, padding and
/// dilation, one value per spatial dim or one value for all (empty: PyTorch's default).
struct TaskConv {
  int id;
  Kind kind;
  std::vector<int64_t> stride, padding, dilation;
};

const std::vector<TaskConv>& task_table() {
  static const std::vector<TaskConv> t = {
      {50, Kind::standard, {4}, {2}, {}},
      {54, Kind::standard, {}, {}, {}},
      {55, Kind::standard, {}, {}, {}},
      {56, Kind::standard, {}, {}, {}},
      {59, Kind::standard, {}, {}, {}},
      {60, Kind::standard, {}, {}, {}},
      {62, Kind::standard, {}, {}, {}},
      {63, Kind::standard, {}, {}, {}},
      {66, Kind::standard, {}, {}, {}},
      {67, Kind::standard, {}, {}, {}},
      {76, Kind::standard, {3}, {}, {4}},
      {80, Kind::standard, {}, {2, 4}, {2, 3}},
      {82, Kind::depthwise, {}, {}, {}},
      {83, Kind::depthwise, {}, {}, {}},
      {84, Kind::depthwise, {}, {}, {}},
      {85, Kind::depthwise, {}, {}, {}},
      {86, Kind::separable, {}, {1}, {}},  // the depthwise stage's options; pointwise is 1x1
      {87, Kind::standard, {}, {}, {}},
  };
  return t;
}

const TaskConv* find_task(int id) { return find_entry(task_table(), &TaskConv::id, id); }

/// A convolution as a 3-d one (1-d and 2-d get unit leading dims), groups = 1 or depthwise.
struct Geo {
  int64_t N = 1, C = 1, D = 1, H = 1, W = 1;     // input
  int64_t Cout = 1, KD = 1, KH = 1, KW = 1;      // weight [Cout, C/groups, KD, KH, KW]
  int64_t OD = 1, OH = 1, OW = 1;                // output spatial
  int64_t sd = 1, sh = 1, sw = 1, pd = 0, ph = 0, pw = 0, dd = 1, dh = 1, dw = 1;
  int64_t Kred() const { return C * KD * KH * KW; }  // the reduction length (groups = 1)
  int64_t M() const { return N * OD * OH * OW; }     // output positions
};

int64_t round_up(int64_t a, int64_t b) { return (a + b - 1) / b * b; }

/// The geometry of x:[N, C, s...] * w:[Cout, Cg, k...] -> y:[N, Cout, o...] under `t`'s options;
/// checks the output shape against the convolution size formula.
Geo geometry(int id, const std::vector<int64_t>& x, const std::vector<int64_t>& w,
             const std::vector<int64_t>& y, const std::vector<int64_t>& stride,
             const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation) {
  const size_t r = x.size() - 2;
  KBRL_CHECK_INPUT(r >= 1 && r <= 3 && w.size() == x.size() && y.size() == x.size(),
                   "task {}: the conv generator expects a 1-d, 2-d or 3-d convolution", id);
  auto expand = [&](const std::vector<int64_t>& v, int64_t fallback) {
    std::vector<int64_t> out(3, fallback);
    for (size_t i = 0; i < r; ++i) out[3 - r + i] = v.empty() ? fallback : v.size() == 1 ? v[0] : v.at(i);
    return out;
  };
  std::vector<int64_t> xs(3, 1), ks(3, 1), ys(3, 1);
  for (size_t i = 0; i < r; ++i) {
    xs[3 - r + i] = x[2 + i];
    ks[3 - r + i] = w[2 + i];
    ys[3 - r + i] = y[2 + i];
  }
  const auto s = expand(stride, 1), p = expand(padding, 0), d = expand(dilation, 1);
  Geo g;
  g.N = x[0];
  g.C = x[1];
  g.D = xs[0], g.H = xs[1], g.W = xs[2];
  g.Cout = w[0];
  g.KD = ks[0], g.KH = ks[1], g.KW = ks[2];
  g.OD = ys[0], g.OH = ys[1], g.OW = ys[2];
  g.sd = s[0], g.sh = s[1], g.sw = s[2];
  g.pd = p[0], g.ph = p[1], g.pw = p[2];
  g.dd = d[0], g.dh = d[1], g.dw = d[2];
  KBRL_CHECK_INPUT(y[0] == g.N && y[1] == g.Cout, "task {}: unexpected output shape", id);
  for (int i = 0; i < 3; ++i)
    KBRL_CHECK_INPUT((xs[i] + 2 * p[i] - d[i] * (ks[i] - 1) - 1) / s[i] + 1 == ys[i],
                     "task {}: the output shape does not match the conv options", id);
  // 32-bit offsets inside one image, the positions and the gather table.
  KBRL_CHECK_INPUT(g.C * g.D * g.H * g.W < (int64_t{1} << 31) && g.M() < (int64_t{1} << 31) &&
                       g.Cout * g.OD * g.OH * g.OW < (int64_t{1} << 40),
                   "task {}: sizes past the conv generator's index ranges", id);
  return g;
}

struct TaskGeo {
  Kind kind;
  Geo conv;       // standard: the conv; depthwise / separable: the depthwise stage
  Geo pointwise;  // separable only: the 1x1 conv over the depthwise result
  bool bias = false;
};

TaskGeo task_geo(const TaskSpec& task) {
  const TaskConv* t = find_task(task.id);
  check_covered(t != nullptr, "conv", task);
  KBRL_CHECK_INPUT(task.inputs.size() == 1 && task.outputs.size() == 1 && !task.parameters.empty(),
                   "task {}: the conv generator expects y = conv(x) with weight parameters", task.id);
  const auto& x = task.inputs[0].shape;
  const auto& y = task.outputs[0].shape;
  TaskGeo tg;
  tg.kind = t->kind;
  if (t->kind == Kind::separable) {
    KBRL_CHECK_INPUT(task.parameters.size() == 2, "task {}: expected two weights", task.id);
    const auto& wd = task.parameters[0].shape;
    const auto& wp = task.parameters[1].shape;
    std::vector<int64_t> mid = {x[0], wd[0], 0, 0};
    for (int i = 0; i < 2; ++i) mid[2 + i] = x[2 + i] + 2 * t->padding[0] - (wd[2 + i] - 1);
    tg.conv = geometry(task.id, x, wd, mid, t->stride, t->padding, t->dilation);
    tg.pointwise = geometry(task.id, mid, wp, y, {}, {}, {});
    KBRL_CHECK_INPUT(wd[1] == 1 && wd[0] == x[1] && wp[1] == wd[0] && wp[2] == 1 && wp[3] == 1,
                     "task {}: expected a depthwise then a pointwise conv", task.id);
    return tg;
  }
  tg.conv = geometry(task.id, x, task.parameters[0].shape, y, t->stride, t->padding, t->dilation);
  tg.bias = task.parameters.size() > 1;
  if (t->kind == Kind::depthwise) {
    KBRL_CHECK_INPUT(task.parameters[0].shape[1] == 1 && tg.conv.Cout == tg.conv.C && !tg.bias &&
                         x.size() == 4,
                     "task {}: expected a 2-d depthwise conv without bias", task.id);
  } else {
    KBRL_CHECK_INPUT(task.parameters[0].shape[1] == x[1], "task {}: expected groups = 1", task.id);
  }
  return tg;
}

// ---------------------------------------------------------------------------------------------
// Sources
// ---------------------------------------------------------------------------------------------

constexpr int kKAlign = 16;    // the reduction dim padded to a multiple of the largest tile_k
constexpr int kNAlign = 128;   // output channels padded to a multiple of the largest tile_n
constexpr int kPrepBlock = 256;

const char* kPrelude = R"(
// Entries of the gather table past the reduction length, and positions past the output, carry
// this offset so that every bounds check on them fails.
#define KBRL_BIG (1 << 29)
)";

const char* kPrep = R"(
// Prep: wt[kk][co] = w[co][kk] (kk = c*KD*KH*KW + (kd*KH + kh)*KW + kw), rows padded to Kpad and
// columns to Npad with zeros; row Kpad holds the bias (zeros without one); the gather table holds
// per kk {input offset c*D*H*W + kd*dd*H*W + kh*dh*W + kw*dw, kd*dd, kh*dh, kw*dw}.
__device__ __forceinline__ void kbrl_prep_body(const float* __restrict__ w,
    const float* __restrict__ bias, float* __restrict__ wt, int4* __restrict__ table,
    long long C, long long KD, long long KH, long long KW, long long dd, long long dh,
    long long dw, long long D, long long H, long long W, long long Kred, long long Kpad,
    long long Cout, long long Npad) {
  const long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (e < (Kpad + 1) * Npad) {
    const long long kk = e / Npad, co = e - kk * Npad;
    float v = 0.0f;
    if (kk < Kpad) {
      if (kk < Kred && co < Cout) v = w[co * Kred + kk];
    } else if (bias != nullptr && co < Cout) {
      v = bias[co];
    }
    wt[e] = v;
  }
  if (e < Kpad) {
    int4 t = make_int4(0, KBRL_BIG, KBRL_BIG, KBRL_BIG);
    if (e < Kred) {
      const long long kvol = KD * KH * KW;
      const long long c = e / kvol, r = e - c * kvol;
      const long long kd = r / (KH * KW), kh = (r / KW) % KH, kw = r % KW;
      t = make_int4((int)(c * D * H * W + kd * dd * H * W + kh * dh * W + kw * dw),
                    (int)(kd * dd), (int)(kh * dh), (int)(kw * dw));
    }
    table[e] = t;
  }
}

extern "C" __global__ void kbrl_conv_prep(const float* __restrict__ w, float* __restrict__ wt,
    int4* __restrict__ table, long long C, long long KD, long long KH, long long KW,
    long long dd, long long dh, long long dw, long long D, long long H, long long W,
    long long Kred, long long Kpad, long long Cout, long long Npad) {
  kbrl_prep_body(w, nullptr, wt, table, C, KD, KH, KW, dd, dh, dw, D, H, W, Kred, Kpad, Cout, Npad);
}

extern "C" __global__ void kbrl_conv_prep_bias(const float* __restrict__ w,
    const float* __restrict__ bias, float* __restrict__ wt, int4* __restrict__ table,
    long long C, long long KD, long long KH, long long KW, long long dd, long long dh,
    long long dw, long long D, long long H, long long W, long long Kred, long long Kpad,
    long long Cout, long long Npad) {
  kbrl_prep_body(w, bias, wt, table, C, KD, KH, KW, dd, dh, dw, D, H, W, Kred, Kpad, Cout, Npad);
}
)";

// The main kernels' common arguments (after the four pointers).
const char* kShapeParams =
    "long long N, long long C, long long D, long long H, long long W, long long Cout,\n"
    "    long long OD, long long OH, long long OW, long long sd, long long sh, long long sw,\n"
    "    long long pd, long long ph, long long pw, long long Kred, long long Npad,\n"
    "    long long mtiles, int n_major";

// Decodes the block's tile (n_major: the output-channel tiles of one position tile are adjacent
// blocks) and defines the sizes.
const char* kTileDecode = R"(
  const long long HW = H * W, DHW = D * HW, OHW = OH * OW, OSP = OD * OHW, M = N * OSP;
  const long long ntiles = (Cout + TILE_N - 1) / TILE_N;
  long long bm, bn;
  if (n_major) {
    bn = blockIdx.x % ntiles;
    bm = blockIdx.x / ntiles;
  } else {
    bm = blockIdx.x % mtiles;
    bn = blockIdx.x / mtiles;
  }
  const float* __restrict__ bias = wt + ((Kred + KBRL_KALIGN - 1) / KBRL_KALIGN * KBRL_KALIGN) * Npad;
)";

// Position m -> the input window's origin (od*sd - pd, ...) and the flat offset of that origin.
const char* kDecodePosition = R"(
__device__ __forceinline__ void kbrl_position(long long m, long long M, long long OSP,
    long long OHW, long long OW, long long C, long long DHW, long long HW, long long W,
    long long sd, long long sh, long long sw, long long pd, long long ph, long long pw,
    long long& base, int& od0, int& oh0, int& ow0) {
  if (m < M) {
    const long long n = m / OSP, p = m - n * OSP;
    const long long od = p / OHW, q = p - od * OHW;
    const long long oh = q / OW, ow = q - oh * OW;
    od0 = (int)(od * sd - pd);
    oh0 = (int)(oh * sh - ph);
    ow0 = (int)(ow * sw - pw);
    base = n * C * DHW + (long long)od0 * HW + (long long)oh0 * W + ow0;
  } else {
    od0 = oh0 = ow0 = KBRL_BIG;
    base = 0;
  }
}
)";

struct GemmCfg {
  int bm, bn, bk, items, stages;
  std::string precision;  // fp32, tf32, tf32x3
  bool fused = false;     // task 86: the A operand is the depthwise conv of x
  int dkh = 3, dkw = 3;   // fused: the depthwise kernel
};

int gemm_threads(int bm, int bn, int items) { return bm * bn / items; }
int tm_of(int items) { return items >= 32 ? 8 : 4; }
int tn_of(int items) { return items == 64 ? 8 : 4; }

std::string gemm_source(const GemmCfg& c) {
  const bool wmma = c.precision != "fp32";
  const int threads = gemm_threads(c.bm, c.bn, c.items);
  std::string s;
  if (wmma) s += "#include <mma.h>\n";
  s += fmt::format(
      "\n// Implicit GEMM: a block computes TILE_M output positions x TILE_N output channels,\n"
      "// staging the gathered input patches (A, [TILE_K][TILE_M]) and the transposed weights\n"
      "// (B, [TILE_K][TILE_N]) in shared memory, TILE_K reduction indices at a time.\n"
      "#define TILE_M {}\n#define TILE_N {}\n#define TILE_K {}\n#define NTHREADS {}\n"
      "#define STAGES {}\n#define TM {}\n#define TN {}\n#define KBRL_KALIGN {}\n",
      c.bm, c.bn, c.bk, threads, c.stages, tm_of(c.items), tn_of(c.items), kKAlign);
  if (c.fused)
    s += fmt::format("#define DKH {}\n#define DKW {}\n", c.dkh, c.dkw);
  s += R"(
// A operand: each thread gathers MA positions x KA reduction indices per slice.
#define MA (TILE_M >= NTHREADS ? TILE_M / NTHREADS : 1)
#define KSTEP (NTHREADS >= TILE_M ? NTHREADS / TILE_M : 1)
#define KA (TILE_K / KSTEP)
// B operand: float4 loads of the slice's TILE_K x TILE_N weights.
#define BV (TILE_K * TILE_N / 4)
#define BL ((BV + NTHREADS - 1) / NTHREADS)
#define TILE_FLOATS (STAGES * TILE_K * (TILE_M + TILE_N))
)";
  if (wmma)
    s += "#define SMEM_FLOATS (TILE_FLOATS > TILE_M * TILE_N / 4 ? TILE_FLOATS : TILE_M * TILE_N / 4)\n";
  else
    s += "#define SMEM_FLOATS TILE_FLOATS\n";
  s += kDecodePosition;
  s += std::string("\nextern \"C\" __global__ void __launch_bounds__(NTHREADS) kbrl_conv_igemm(\n"
                   "    const float* __restrict__ x, const float* __restrict__ wt,\n    ") +
       (c.fused ? "const float* __restrict__ dwt" : "const int4* __restrict__ table") +
       ", float* __restrict__ y,\n    " + kShapeParams + ") {\n";
  s += kTileDecode;
  s += R"(  const int tid = threadIdx.x;
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
)";
  if (c.fused) {
    s += R"(      // A = the depthwise conv of channel c at the position (stride 1, dilation 1).
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
)";
  } else {
    s += R"(      const int4 e = __ldg(table + k0 + a_k0 + i * KSTEP);
#pragma unroll
      for (int j = 0; j < MA; ++j) {
        const bool ok = (unsigned)(a_d[j] + e.y) < uD && (unsigned)(a_h[j] + e.z) < uH &&
                        (unsigned)(a_w[j] + e.w) < uW;
        a_reg[i][j] = ok ? __ldg(x + (a_base[j] + e.x)) : 0.0f;
      }
)";
  }
  s += R"(    }
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
)";
  if (!wmma) {
    s += R"(
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
)";
  } else {
    s += "\n  // Tensor cores: each warp computes a 32x32 tile as 2x2 wmma m16n16k8 fragments.\n";
    if (c.precision == "tf32")
      s += "  // precision=tf32 (unsafe): the operands are rounded to TF32 (10-bit mantissa).\n";
    else
      s += "  // precision=tf32x3 (unsafe): each operand split into a TF32 high and low part,\n"
           "  // three products (hi*lo, lo*hi, hi*hi) accumulated in fp32.\n";
    s += R"(  using namespace nvcuda;
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
)";
    if (c.precision == "tf32x3")
      s += R"(      wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::col_major> a_lo[2];
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
)";
    else
      s += R"(#pragma unroll
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
)";
  }
  if (c.stages == 2)
    s += R"(
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
)";
  else
    s += R"(
  // One stage: load, compute, repeat.
  const int nk = (int)((Kred + TILE_K - 1) / TILE_K);
  for (int kt = 0; kt < nk; ++kt) {
    load_tiles(kt);
    store_tiles(0);
    __syncthreads();
    compute(0);
    __syncthreads();
  }
)";
  if (!wmma) {
    s += R"(
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
)";
  } else {
    s += R"(
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
)";
  }
  return s;
}

std::string direct_source(int items) {
  std::string s = fmt::format(
      "\n// Direct: one thread per output position, {} output channels per thread (weights read\n"
      "// as warp-uniform float4 loads), looping over the reduction with the gather table.\n"
      "#define TILE_N {}\n#define KBRL_KALIGN {}\n",
      items, items, kKAlign);
  s += kDecodePosition;
  s += std::string(
           "\nextern \"C\" __global__ void kbrl_conv_direct(const float* __restrict__ x,\n"
           "    const float* __restrict__ wt, const int4* __restrict__ table, float* __restrict__ y,\n"
           "    ") +
       kShapeParams + ") {\n";
  s += kTileDecode;
  s += R"(  const long long m = bm * blockDim.x + threadIdx.x;
  if (m >= M) return;
  const long long co0 = bn * TILE_N;
  long long base;
  int d0, h0, w0;
  kbrl_position(m, M, OSP, OHW, OW, C, DHW, HW, W, sd, sh, sw, pd, ph, pw, base, d0, h0, w0);
  const unsigned uD = (unsigned)D, uH = (unsigned)H, uW = (unsigned)W;
  float acc[TILE_N];
#pragma unroll
  for (int j = 0; j < TILE_N; ++j) acc[j] = 0.0f;
#pragma unroll 4
  for (int kk = 0; kk < (int)Kred; ++kk) {
    const int4 e = __ldg(table + kk);
    const bool ok = (unsigned)(d0 + e.y) < uD && (unsigned)(h0 + e.z) < uH &&
                    (unsigned)(w0 + e.w) < uW;
    const float v = ok ? __ldg(x + (base + e.x)) : 0.0f;
    const float4* wr = reinterpret_cast<const float4*>(wt + (long long)kk * Npad + co0);
#pragma unroll
    for (int q = 0; q < TILE_N / 4; ++q) {
      const float4 w4 = __ldg(wr + q);
      acc[4 * q] = fmaf(v, w4.x, acc[4 * q]);
      acc[4 * q + 1] = fmaf(v, w4.y, acc[4 * q + 1]);
      acc[4 * q + 2] = fmaf(v, w4.z, acc[4 * q + 2]);
      acc[4 * q + 3] = fmaf(v, w4.w, acc[4 * q + 3]);
    }
  }
  const long long n = m / OSP, p = m - n * OSP;
#pragma unroll
  for (int j = 0; j < TILE_N; ++j) {
    const long long co = co0 + j;
    if (co < Cout) y[(n * Cout + co) * OSP + p] = acc[j] + bias[co];
  }
}
)";
  return s;
}

struct DwCfg {
  int kh, kw, sh, sw, dh, dw;  // the kernel, stride and dilation (compile-time)
  int rows, items;             // outputs per thread: rows x consecutive columns
  bool half = false;           // precision=fp16_compute
};

std::string depthwise_source(const DwCfg& c) {
  std::string s;
  if (c.half) s += "#include <cuda_fp16.h>\n";
  s += fmt::format(
      "\n// Depthwise: a thread computes DW_ROWS x DW_ITEMS outputs of one (n, c) plane from a\n"
      "// register window of the input rows it needs; the channel's weights stay in registers.\n"
      "#define DW_KH {}\n#define DW_KW {}\n#define DW_SH {}\n#define DW_SW {}\n#define DW_DH {}\n"
      "#define DW_DW {}\n#define DW_ROWS {}\n#define DW_ITEMS {}\n",
      c.kh, c.kw, c.sh, c.sw, c.dh, c.dw, c.rows, c.items);
  if (c.half)
    s += "// precision=fp16_compute (unsafe): each product x*w is formed in __half; sums stay fp32.\n"
         "#define DW_MAC(acc, a, b) ((acc) + __half2float(__hmul(__float2half(a), __float2half(b))))\n";
  else
    s += "#define DW_MAC(acc, a, b) fmaf((a), (b), (acc))\n";
  s += R"(#define DW_IN_ROWS ((DW_ROWS - 1) * DW_SH + (DW_KH - 1) * DW_DH + 1)
#define DW_IN_COLS ((DW_ITEMS - 1) * DW_SW + (DW_KW - 1) * DW_DW + 1)

extern "C" __global__ void kbrl_conv_dw(const float* __restrict__ x, const float* __restrict__ w,
    float* __restrict__ y, long long C, long long H, long long W, long long OH, long long OW,
    long long ph, long long pw, long long total) {
  const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= total) return;
  const long long OWG = (OW + DW_ITEMS - 1) / DW_ITEMS, OHG = (OH + DW_ROWS - 1) / DW_ROWS;
  const long long owg = t % OWG, r = t / OWG;
  const long long ohg = r % OHG, nc = r / OHG;
  const long long c = nc % C;
  const int oh0 = (int)(ohg * DW_ROWS), ow0 = (int)(owg * DW_ITEMS);
  const int ih0 = oh0 * DW_SH - (int)ph, iw0 = ow0 * DW_SW - (int)pw;
  const float* __restrict__ xp = x + nc * H * W;
  float* __restrict__ yp = y + nc * OH * OW;
  float wr[DW_KH * DW_KW];
#pragma unroll
  for (int i = 0; i < DW_KH * DW_KW; ++i) wr[i] = __ldg(w + c * (DW_KH * DW_KW) + i);
  float acc[DW_ROWS][DW_ITEMS];
#pragma unroll
  for (int a = 0; a < DW_ROWS; ++a)
#pragma unroll
    for (int b = 0; b < DW_ITEMS; ++b) acc[a][b] = 0.0f;
#pragma unroll
  for (int rr = 0; rr < DW_IN_ROWS; ++rr) {
    const int ih = ih0 + rr;
    const bool rok = (unsigned)ih < (unsigned)H;
    float seg[DW_IN_COLS];
#pragma unroll
    for (int cc = 0; cc < DW_IN_COLS; ++cc) {
      const int iw = iw0 + cc;
      seg[cc] = (rok && (unsigned)iw < (unsigned)W) ? __ldg(xp + (long long)ih * W + iw) : 0.0f;
    }
#pragma unroll
    for (int a = 0; a < DW_ROWS; ++a)
#pragma unroll
      for (int kh = 0; kh < DW_KH; ++kh)
        if (a * DW_SH + kh * DW_DH == rr) {
#pragma unroll
          for (int b = 0; b < DW_ITEMS; ++b)
#pragma unroll
            for (int kw = 0; kw < DW_KW; ++kw)
              acc[a][b] = DW_MAC(acc[a][b], seg[b * DW_SW + kw * DW_DW], wr[kh * DW_KW + kw]);
        }
  }
#pragma unroll
  for (int a = 0; a < DW_ROWS; ++a) {
    const int oh = oh0 + a;
    if (oh >= OH) continue;
#pragma unroll
    for (int b = 0; b < DW_ITEMS; ++b) {
      const int ow = ow0 + b;
      if (ow < OW) yp[(long long)oh * OW + ow] = acc[a][b];
    }
  }
}
)";
  return s;
}

// ---------------------------------------------------------------------------------------------
// Knob spaces
// ---------------------------------------------------------------------------------------------

bool is_gemm_variant(const std::string& v) {
  return v == "implicit_gemm" || v == "fused" || v == "two_pass";
}

/// A GEMM tiling is legal with 128..512 threads (tile_m*tile_n/items_per_thread), at most 256 of
/// them with the 4x4 register tile.
bool gemm_tiling_ok(const Config& c) {
  const int64_t items = c.integer("items_per_thread");
  const int64_t t = c.integer("tile_m") * c.integer("tile_n") / items;
  return t >= 128 && t <= (items == 16 ? 256 : 512);
}

KnobSpace gemm_like_space(Kind kind) {
  KnobSpace space;
  const bool sep = kind == Kind::separable;
  if (sep)
    space.add_knob({"variant", {"fused", "two_pass"},
                    "fused: one implicit GEMM whose A operand is the depthwise conv computed while "
                    "staging (the intermediate never leaves the chip); two_pass: the depthwise conv "
                    "into a scratch tensor, then the pointwise conv as an implicit GEMM"});
  else
    space.add_knob({"variant", {"direct", "implicit_gemm"},
                    "direct: a thread per output position with items_per_thread output channels; "
                    "implicit_gemm: a block computes a tile_m x tile_n tile of (positions x output "
                    "channels), staging gathered input patches and weights in shared memory"});
  space
      .add_knob({"precision", {"fp32", "tf32", "tf32x3"},
                 "fp32 FMA; tf32 (unsafe): wmma tensor cores with TF32 operands; tf32x3 (unsafe): "
                 "wmma with each operand split in TF32 high and low parts, three products"})
      .add_knob({"tile_m", {"64", "128"},
                 "output positions per block (the GEMM's M tile; direct: threads per block)"})
      .add_knob({"tile_n", {"32", "64", "128"}, "output channels per block (the GEMM's N tile)"})
      .add_knob({"tile_k", {"8", "16"}, "reduction indices (C_in x kernel taps) per staged slice"})
      .add_knob({"items_per_thread", {"8", "16", "32", "64"},
                 "outputs per thread: GEMM 16 = 4x4, 32 = 8x4, 64 = 8x8 (positions x channels) "
                 "register tile; direct: output channels per thread (8, 16, 32)"})
      .add_knob({"stages", {"1", "2"},
                 "1: load, compute, repeat; 2: double-buffered shared memory with the next "
                 "slice's global loads in flight during the compute"})
      .add_knob({"grid", {"m_major", "n_major"},
                 "order of the tiles over the 1-d grid: m_major walks the positions first; "
                 "n_major puts the output-channel tiles of a position tile next to each other "
                 "(the input patches are read from DRAM once)"})
      .add_knob({"tail", {"safe", "dropped"},
                 "dropped (unsafe): the last partial tile of output positions is not launched"});
  space.add_constraint({"tf32/tf32x3 only with a GEMM variant, items_per_thread=32 (a warp per "
                        "32x32 tile), tile_k=16, stages=2 and tail=safe (one unsafe knob at a time)",
                        {"variant", "precision", "tile_k", "items_per_thread", "stages", "tail"},
                        [](const Config& c) {
                          if (c.at("precision") == "fp32") return true;
                          return is_gemm_variant(c.at("variant")) &&
                                 c.integer("items_per_thread") == 32 &&
                                 c.integer("tile_k") == 16 && c.integer("stages") == 2 &&
                                 c.at("tail") == "safe";
                        }});
  space.add_constraint(
      {"direct: tile_n=32, tile_k=8, stages=1 and items_per_thread in {8, 16, 32}; GEMM: "
       "items_per_thread in {16, 32, 64}, 128..512 threads (tile_m*tile_n/items_per_thread; at "
       "most 256 with items_per_thread=16) and stages=1 only with tile_k=16",
       {"variant", "tile_m", "tile_n", "tile_k", "items_per_thread", "stages"},
       [](const Config& c) {
         const int64_t items = c.integer("items_per_thread");
         if (c.at("variant") == "direct")
           return c.integer("tile_n") == 32 && c.integer("tile_k") == 8 &&
                  c.integer("stages") == 1 && items <= 32;
         return items >= 16 && gemm_tiling_ok(c) &&
                (c.integer("stages") == 2 || c.integer("tile_k") == 16);
       }});
  if (sep)
    space.add_constraint({"task 86: tile_n >= 64, and tile_k=8 with precision=fp32",
                          {"precision", "tile_n", "tile_k"}, [](const Config& c) {
                            return c.integer("tile_n") >= 64 &&
                                   (c.at("precision") != "fp32" || c.integer("tile_k") == 8);
                          }});
  return space;
}

KnobSpace depthwise_space() {
  KnobSpace space;
  space
      .add_knob({"rows_per_thread", {"1", "2", "4"},
                 "consecutive output rows per thread (input rows loaded once for all of them)"})
      .add_knob({"items_per_thread", {"2", "4", "8"},
                 "consecutive output columns per thread (input columns loaded once for all)"})
      .add_knob({"block", {"64", "128", "256", "512"}, "threads per block"})
      .add_knob({"precision", {"fp32", "fp16_compute"},
                 "fp16_compute (unsafe): each product x*w formed in __half (sums stay fp32)"})
      .add_knob({"tail", {"safe", "dropped"},
                 "dropped (unsafe): the last partial block of threads is not launched"});
  space.add_constraint({"one unsafe knob at a time", {"precision", "tail"}, [](const Config& c) {
                          return c.at("precision") == "fp32" || c.at("tail") == "safe";
                        }});
  return space;
}

// ---------------------------------------------------------------------------------------------
// Launch plans
// ---------------------------------------------------------------------------------------------

KernelArg arg(ArgKind kind, int index) { return KernelArg{kind, index}; }

/// Scratch 0: the transposed weights and the bias row; scratch 1: the gather table.
void add_prep(Candidate& cand, const Geo& g, KernelArg weight, bool bias, int task_id) {
  const int64_t kpad = round_up(g.Kred(), kKAlign), npad = round_up(g.Cout, kNAlign);
  cand.scratch.push_back({"wt", (kpad + 1) * npad * 4});
  cand.scratch.push_back({"gather_table", kpad * 16});
  Launch l;
  l.kernel = bias ? "kbrl_conv_prep_bias" : "kbrl_conv_prep";
  l.grid = {grid_dim(((kpad + 1) * npad + kPrepBlock - 1) / kPrepBlock, task_id), 1, 1};
  l.block = {kPrepBlock, 1, 1};
  l.args = {weight};
  if (bias) l.args.push_back(arg(ArgKind::parameter, 1));
  l.args.insert(l.args.end(),
                {arg(ArgKind::scratch, 0), arg(ArgKind::scratch, 1), i64_arg(g.C), i64_arg(g.KD),
                 i64_arg(g.KH), i64_arg(g.KW), i64_arg(g.dd), i64_arg(g.dh), i64_arg(g.dw),
                 i64_arg(g.D), i64_arg(g.H), i64_arg(g.W), i64_arg(g.Kred()), i64_arg(kpad),
                 i64_arg(g.Cout), i64_arg(npad)});
  cand.launches.push_back(std::move(l));
}

/// The main kernel's launch: one block per (position tile, channel tile).
Launch main_launch(const std::string& kernel, const Geo& g, int64_t tile_m, int64_t tile_n,
                   int64_t threads, bool dropped, bool n_major, KernelArg x, KernelArg aux,
                   int task_id) {
  const int64_t M = g.M();
  int64_t mtiles = (M + tile_m - 1) / tile_m;
  if (dropped) mtiles = std::max<int64_t>(1, M / tile_m);
  const int64_t ntiles = (g.Cout + tile_n - 1) / tile_n;
  Launch l;
  l.kernel = kernel;
  l.grid = {grid_dim(mtiles * ntiles, task_id), 1, 1};
  l.block = {static_cast<uint32_t>(threads), 1, 1};
  l.args = {x,               arg(ArgKind::scratch, 0), aux,             arg(ArgKind::output, 0),
            i64_arg(g.N),    i64_arg(g.C),             i64_arg(g.D),    i64_arg(g.H),
            i64_arg(g.W),    i64_arg(g.Cout),          i64_arg(g.OD),   i64_arg(g.OH),
            i64_arg(g.OW),   i64_arg(g.sd),            i64_arg(g.sh),   i64_arg(g.sw),
            i64_arg(g.pd),   i64_arg(g.ph),            i64_arg(g.pw),   i64_arg(g.Kred()),
            i64_arg(round_up(g.Cout, kNAlign)), i64_arg(mtiles), i32_arg(n_major ? 1 : 0)};
  return l;
}

Launch depthwise_launch(const Geo& g, int rows, int items, int64_t block, bool dropped,
                        KernelArg x, KernelArg out, int task_id) {
  const int64_t total =
      g.N * g.C * ((g.OH + rows - 1) / rows) * ((g.OW + items - 1) / items);
  int64_t blocks = (total + block - 1) / block;
  if (dropped) blocks = std::max<int64_t>(1, total / block);
  Launch l;
  l.kernel = "kbrl_conv_dw";
  l.grid = {grid_dim(blocks, task_id), 1, 1};
  l.block = {static_cast<uint32_t>(block), 1, 1};
  l.args = {x,             arg(ArgKind::parameter, 0), out,           i64_arg(g.C),
            i64_arg(g.H),  i64_arg(g.W),               i64_arg(g.OH), i64_arg(g.OW),
            i64_arg(g.ph), i64_arg(g.pw),              i64_arg(total)};
  return l;
}

DwCfg dw_cfg(const Geo& g, int rows, int items, bool half) {
  return DwCfg{static_cast<int>(g.KH), static_cast<int>(g.KW), static_cast<int>(g.sh),
               static_cast<int>(g.sw), static_cast<int>(g.dh), static_cast<int>(g.dw),
               rows, items, half};
}

/// The source's first lines: the knobs the source depends on (shapes are kernel arguments, so
/// tasks and launch-only knobs share compile units).
std::string header(const Config& config, std::initializer_list<const char*> knobs) {
  std::string s = "// kbrl conv generator:";
  for (const char* k : knobs) s += fmt::format(" {}={}", k, config.at(k));
  return s + "\n" + kPrelude;
}

class ConvGenerator final : public Generator {
 public:
  std::string_view name() const override { return "conv"; }
  bool covers(int task_id) const override { return find_task(task_id) != nullptr; }

  KnobSpace space(const TaskSpec& task) const override {
    const TaskConv* t = find_task(task.id);
    check_covered(t != nullptr, "conv", task);
    return t->kind == Kind::depthwise ? depthwise_space() : gemm_like_space(t->kind);
  }

  Candidate generate(const TaskSpec& task, const Config& given) const override {
    const TaskGeo tg = task_geo(task);
    const Config c = checked_config(space(task), given);
    Candidate cand;
    cand.task_id = task.id;
    const bool dropped = c.at("tail") == "dropped";
    if (tg.kind == Kind::depthwise) {
      const int rows = static_cast<int>(c.integer("rows_per_thread"));
      const int items = static_cast<int>(c.integer("items_per_thread"));
      const bool half = c.at("precision") == "fp16_compute";
      cand.source = header(c, {"rows_per_thread", "items_per_thread", "precision"}) +
                    depthwise_source(dw_cfg(tg.conv, rows, items, half));
      cand.launches.push_back(depthwise_launch(tg.conv, rows, items, c.integer("block"), dropped,
                                               arg(ArgKind::input, 0), arg(ArgKind::output, 0),
                                               task.id));
      return cand;
    }
    const std::string variant = c.at("variant");
    const int64_t tile_m = c.integer("tile_m"), tile_n = c.integer("tile_n");
    const int items = static_cast<int>(c.integer("items_per_thread"));
    const bool n_major = c.at("grid") == "n_major";
    const auto gemm_header = [&] {
      return header(c, {"variant", "precision", "tile_m", "tile_n", "tile_k", "items_per_thread",
                        "stages"});
    };
    if (variant == "direct") {
      cand.source = header(c, {"variant", "items_per_thread"}) + kPrep + direct_source(items);
      add_prep(cand, tg.conv, arg(ArgKind::parameter, 0), tg.bias, task.id);
      Geo g = tg.conv;
      cand.launches.push_back(main_launch("kbrl_conv_direct", g, tile_m, items, tile_m, dropped,
                                          n_major, arg(ArgKind::input, 0),
                                          arg(ArgKind::scratch, 1), task.id));
      return cand;
    }
    GemmCfg gc{static_cast<int>(tile_m), static_cast<int>(tile_n),
               static_cast<int>(c.integer("tile_k")), items,
               static_cast<int>(c.integer("stages")), c.at("precision")};
    const int64_t threads = gemm_threads(gc.bm, gc.bn, items);
    if (variant == "implicit_gemm") {
      cand.source = gemm_header() + kPrep + gemm_source(gc);
      add_prep(cand, tg.conv, arg(ArgKind::parameter, 0), tg.bias, task.id);
      cand.launches.push_back(main_launch("kbrl_conv_igemm", tg.conv, tile_m, tile_n, threads,
                                          dropped, n_major, arg(ArgKind::input, 0),
                                          arg(ArgKind::scratch, 1), task.id));
      return cand;
    }
    // Task 86: depthwise (tg.conv) then pointwise (tg.pointwise).
    const Geo& dw = tg.conv;
    const Geo& pw = tg.pointwise;
    if (variant == "fused") {
      KBRL_CHECK_INPUT(dw.sh == 1 && dw.sw == 1 && dw.dh == 1 && dw.dw == 1 && dw.D == 1,
                       "task {}: the fused variant expects a stride-1, undilated 2-d depthwise conv",
                       task.id);
      gc.fused = true;
      gc.dkh = static_cast<int>(dw.KH);
      gc.dkw = static_cast<int>(dw.KW);
      cand.source = gemm_header() + kPrep + gemm_source(gc);
      add_prep(cand, pw, arg(ArgKind::parameter, 1), false, task.id);
      // The GEMM over the depthwise output's positions, gathering from x with its padding.
      Geo g = pw;
      g.H = dw.H;
      g.W = dw.W;
      g.ph = dw.ph;
      g.pw = dw.pw;
      cand.launches.push_back(main_launch("kbrl_conv_igemm", g, tile_m, tile_n, threads, dropped,
                                          n_major, arg(ArgKind::input, 0),
                                          arg(ArgKind::parameter, 0), task.id));
      return cand;
    }
    // two_pass: the depthwise conv into scratch 2, then the pointwise GEMM over it.
    constexpr int kDwRows = 4, kDwItems = 4, kDwBlock = 256;
    cand.source = gemm_header() + depthwise_source(dw_cfg(dw, kDwRows, kDwItems, false)) +
                  kPrep + gemm_source(gc);
    add_prep(cand, pw, arg(ArgKind::parameter, 1), false, task.id);
    cand.scratch.push_back({"depthwise_out", dw.N * dw.Cout * dw.OH * dw.OW * 4});
    cand.launches.insert(cand.launches.begin(),
                         depthwise_launch(dw, kDwRows, kDwItems, kDwBlock, false,
                                          arg(ArgKind::input, 0), arg(ArgKind::scratch, 2),
                                          task.id));
    cand.launches.push_back(main_launch("kbrl_conv_igemm", pw, tile_m, tile_n, threads, dropped,
                                        n_major, arg(ArgKind::scratch, 2),
                                        arg(ArgKind::scratch, 1), task.id));
    return cand;
  }

  Config expert(const TaskSpec& task) const override {
    const TaskGeo tg = task_geo(task);
    if (tg.kind == Kind::depthwise)
      return Config{{"rows_per_thread", "4"}, {"items_per_thread", "4"}, {"block", "256"},
                    {"precision", "fp32"},    {"tail", "safe"}};
    // An implicit GEMM with 128 positions per block and a 8x8 register tile per thread; the
    // channel tile covers all output channels when there are at most 128 of them.
    const int64_t cout = tg.kind == Kind::separable ? tg.pointwise.Cout : tg.conv.Cout;
    const std::string tile_n = cout <= 64 ? "64" : "128";
    return Config{{"variant", tg.kind == Kind::separable ? "fused" : "implicit_gemm"},
                  {"precision", "fp32"},
                  {"tile_m", "128"},
                  {"tile_n", tile_n},
                  {"tile_k", "8"},
                  {"items_per_thread", "64"},
                  {"stages", "2"},
                  {"grid", "n_major"},
                  {"tail", "safe"}};
  }
};

}  // namespace

const Generator& conv_generator() {
  static const ConvGenerator generator;
  return generator;
}

}  // namespace kbrl
