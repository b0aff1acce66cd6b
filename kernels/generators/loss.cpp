#include "loss.h"

#include <algorithm>
#include <string>

#include <kbrl/error.h>

#include "device_snippets.h"
#include "family_common.h"

namespace kbrl {
namespace {

/// Threads of the final (single-block) launch that reduces the partials.
constexpr int64_t kFinalBlock = 256;

/// How a task's elements map onto threads.
enum class Kind {
  flat,           // one flat stream over two same-shaped inputs (94, 96, 98)
  cross_entropy,  // row-wise log-sum-exp, then a reduction over rows (95)
  triplet,        // row-wise distances, then a reduction over rows (99)
  hinge,          // rows of predictions times targets broadcast along the columns (100)
};

struct LossTask {
  int task_id;
  Kind kind;
  bool transcendental;  // exp/log in the per-element math: offers fast_math
  const char* math;     // in words, for the source's header
};

constexpr LossTask kTasks[] = {
    {94, Kind::flat, false, "mean((p - t)^2)"},
    {95, Kind::cross_entropy, true,
     "mean over rows of -((x[t] - max) - log(sum(exp(x - max))))"},
    {96, Kind::flat, false, "mean(z < 1 ? 0.5 * z * z / 1 : z - 0.5 * 1), z = |p - t| (beta = 1)"},
    {98, Kind::flat, true, "sum(xlogy(t, t) - t * log(p)) / rows (kl_div of log(p), batchmean)"},
    {99, Kind::triplet, true,
     "mean over rows of max(1 + ||a - p + 1e-6||_2 - ||a - n + 1e-6||_2, 0)"},
    {100, Kind::hinge, false, "mean(max(1 - p[i, j] * t[j], 0)) (t broadcast along the last dim)"},
};

const LossTask* find_task(int task_id) { return find_entry(kTasks, &LossTask::task_id, task_id); }

const LossTask& task_of(const TaskSpec& task) {
  const LossTask* t = find_task(task.id);
  check_covered(t != nullptr, "loss", task);
  const size_t inputs = t->kind == Kind::triplet ? 3 : 2;
  KBRL_CHECK_INPUT(task.inputs.size() == inputs && task.outputs.size() == 1 &&
                       task.outputs[0].shape.empty() && !task.inputs[0].shape.empty(),
                   "task {}: the loss generator expects {} inputs and a 0-d output", task.id,
                   inputs);
  return *t;
}

bool row_wise(Kind kind) { return kind != Kind::flat; }

/// The math helpers: k_exp, k_log, k_sqrt, k_sq per precision and fast_math, and the thread's
/// running-sum type Run (a __half under fp16_compute for the flat and hinge tasks).
std::string math_helpers(Kind kind, bool half, bool fast) {
  std::string s;
  if (half) s += "#include <cuda_fp16.h>\n\n";
  FloatMath math = FloatMath::exact;
  if (fast) {
    s += kFastMathNote;
    math = FloatMath::fast;
  } else if (half && kind == Kind::cross_entropy) {
    s += "// precision=fp16_compute (unsafe): exp(x - max) is evaluated in __half.\n";
    math = FloatMath::half_exp;
  }
  s += k_exp_helper(math, "v") + k_log_helper(math);
  s += "__device__ __forceinline__ float k_sqrt(float v) { return sqrtf(v); }\n";
  if (half && kind == Kind::triplet)
    s += "// precision=fp16_compute (unsafe): each squared difference is taken in __half.\n"
         "__device__ __forceinline__ float k_sq(float d) {\n"
         "  const __half h = __float2half(d);\n"
         "  return __half2float(__hmul(h, h));\n"
         "}\n";
  else
    s += "__device__ __forceinline__ float k_sq(float d) { return d * d; }\n";
  if (half && (kind == Kind::flat || kind == Kind::hinge))
    s += "// precision=fp16_compute (unsafe): the thread's running sum is a __half.\n"
         "typedef __half Run;\n"
         "__device__ __forceinline__ Run kbrl_run_zero() { return __float2half(0.0f); }\n"
         "__device__ __forceinline__ Run kbrl_run_add(Run r, float v) { return __hadd(r, "
         "__float2half(v)); }\n"
         "__device__ __forceinline__ Acc kbrl_run_out(Run r) { return (Acc)__half2float(r); }\n";
  else
    s += "typedef Acc Run;  // the thread's running sum\n"
         "__device__ __forceinline__ Run kbrl_run_zero() { return (Run)0; }\n"
         "__device__ __forceinline__ Run kbrl_run_add(Run r, float v) { return r + (Run)v; }\n"
         "__device__ __forceinline__ Acc kbrl_run_out(Run r) { return r; }\n";
  return s;
}

/// Loads: kbrl_ld (one float of a streamed input), kbrl_ldv (kVec floats at vector index j),
/// kbrl_ldv_keep (kVec floats of an input read by every row: hinge's targets, always __ldg).
std::string load_helpers(int64_t vec, bool streaming) {
  const std::string ld1 = streaming ? "__ldcs(p)" : "*p";
  std::string s = "__device__ __forceinline__ float kbrl_ld(const float* p) { return " + ld1 + "; }\n";
  if (vec == 4) {
    const std::string ld4 = streaming ? "__ldcs(reinterpret_cast<const float4*>(p) + j)"
                                      : "reinterpret_cast<const float4*>(p)[j]";
    s += "__device__ __forceinline__ void kbrl_ldv(const float* __restrict__ p, long long j, "
         "float (&v)[kVec]) {\n"
         "  const float4 q = " + ld4 + ";\n"
         "  v[0] = q.x; v[1] = q.y; v[2] = q.z; v[3] = q.w;\n"
         "}\n"
         "__device__ __forceinline__ void kbrl_ldv_keep(const float* __restrict__ p, long long j, "
         "float (&v)[kVec]) {\n"
         "  const float4 q = __ldg(reinterpret_cast<const float4*>(p) + j);\n"
         "  v[0] = q.x; v[1] = q.y; v[2] = q.z; v[3] = q.w;\n"
         "}\n";
  } else {
    s += "__device__ __forceinline__ void kbrl_ldv(const float* __restrict__ p, long long j, "
         "float (&v)[kVec]) { v[0] = kbrl_ld(p + j); }\n"
         "__device__ __forceinline__ void kbrl_ldv_keep(const float* __restrict__ p, long long j, "
         "float (&v)[kVec]) { v[0] = __ldg(p + j); }\n";
  }
  return s;
}

/// Deterministic reductions (a fixed shuffle tree, then warp 0 over the warp results) and the final
/// single-block launch over the partials.
std::string reduce_helpers() {
  return R"(
#define KBRL_NEG_INF (__int_as_float(0xff800000))

struct SumOp {
  template <class T>
  __device__ __forceinline__ T operator()(T a, T b) const { return a + b; }
};

__device__ __forceinline__ float kbrl_shfl(float v, int o) { return __shfl_xor_sync(0xffffffffu, v, o); }
__device__ __forceinline__ double kbrl_shfl(double v, int o) { return __shfl_xor_sync(0xffffffffu, v, o); }

template <class T, class Op>
__device__ __forceinline__ T kbrl_warp_reduce(T v, Op op) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = op(v, kbrl_shfl(v, o));
  return v;
}

)" + block_reduce_helper(WarpStep::warp_reduce_call) + R"(
// The second stage: one block sums the partials in a fixed order and divides as torch's reduction.
extern "C" __global__ void kbrl_loss_final(const Acc* __restrict__ part, float* __restrict__ out,
                                           long long parts, long long denom) {
  __shared__ Acc smem[32];
  Acc v = (Acc)0;
  for (long long i = threadIdx.x; i < parts; i += blockDim.x) v += part[i];
  v = kbrl_block_reduce(v, (Acc)0, smem, SumOp{});
  if (threadIdx.x == 0) out[0] = (float)((double)v / (double)denom);
}
)";
}

/// The online (max, sum of exp(v - max)) state of cross-entropy rows.
std::string max_sum_helpers() {
  return std::string("\n") + max_sum_state() + R"(
struct MergeOp {
  __device__ __forceinline__ MaxSum operator()(MaxSum a, MaxSum b) const {
    const float m = kbrl_max(a.m, b.m);
    if (m == KBRL_NEG_INF) return MaxSum{m, a.s + b.s};  // both empty
    return MaxSum{m, a.s * k_exp(a.m - m) + b.s * k_exp(b.m - m)};
  }
};

__device__ __forceinline__ MaxSum kbrl_shfl(MaxSum v, int o) {
  return MaxSum{__shfl_xor_sync(0xffffffffu, v.m, o), __shfl_xor_sync(0xffffffffu, v.s, o)};
}
)";
}

/// The two squared-distance sums of a triplet row.
const char* kPairHelpers = R"(
struct Pair {
  float p;  // sum of (a - positive + eps)^2
  float n;  // sum of (a - negative + eps)^2
};
struct PairSumOp {
  __device__ __forceinline__ Pair operator()(Pair a, Pair b) const { return Pair{a.p + b.p, a.n + b.n}; }
};
__device__ __forceinline__ Pair kbrl_shfl(Pair v, int o) {
  return Pair{__shfl_xor_sync(0xffffffffu, v.p, o), __shfl_xor_sync(0xffffffffu, v.n, o)};
}
)";

/// The per-element term of the flat and hinge tasks.
std::string term_of(int task_id) {
  switch (task_id) {
    case 94:
      return "// (p - t)^2, as torch's pow(2): d * d\n"
             "__device__ __forceinline__ float kbrl_term(float p, float t) {\n"
             "  const float d = p - t;\n"
             "  return d * d;\n"
             "}\n";
    case 96:
      return "// smooth_l1 with beta = 1 (torch's default): z < beta ? 0.5 z^2 / beta : z - 0.5 beta\n"
             "constexpr float kBeta = 1.0f;\n"
             "__device__ __forceinline__ float kbrl_term(float p, float t) {\n"
             "  const float z = fabsf(p - t);\n"
             "  return z < kBeta ? 0.5f * z * z / kBeta : z - 0.5f * kBeta;\n"
             "}\n";
    case 98:
      return "// kl_div(log(p), t): xlogy(t, t) - t * log(p) (xlogy: NaN for NaN t, 0 for t == 0)\n"
             "__device__ __forceinline__ float kbrl_term(float p, float t) {\n"
             "  const float xl = t != t ? t : (t == 0.0f ? 0.0f : t * k_log(t));\n"
             "  return xl - t * k_log(p);\n"
             "}\n";
    case 100:
      return "// clamp_min(1 - p * t, 0), the product rounded as torch's separate multiply\n"
             "__device__ __forceinline__ float kbrl_term(float p, float t) {\n"
             "  const float v = 1.0f - __fmul_rn(p, t);\n"
             "  return v < 0.0f ? 0.0f : v;  // NaN stays NaN\n"
             "}\n";
  }
  throw InternalError(fmt::format("loss: no per-element term for task {}", task_id));
}

/// The per-row scan of a row-wise kernel over `cols` elements of the row pointer(s): a group of G
/// threads (gi: this thread's index in it) covers the row with kItems vectors per thread per step,
/// then the remaining vectors and the scalar tail (unless the tail is dropped). `ptrs` are the
/// streamed row pointers; `tile` is the code run on `float v[kInputs][kItems][kVec]` of a full
/// step, `one` on `float v[kInputs][kVec]` of a single vector, `scalar` on `float e[kInputs]`.
std::string row_scan(const std::vector<std::string>& ptrs, const std::string& keep,
                     const std::string& tile, const std::string& one, const std::string& scalar,
                     int64_t vec, bool safe_tail, const std::string& indent) {
  const size_t n = ptrs.size() + (keep.empty() ? 0 : 1);
  std::string s;
  std::string mask;
  for (const auto& p : ptrs) mask += (mask.empty() ? "" : " | ") + std::string("(unsigned long long)") + p;
  if (!keep.empty()) mask += " | (unsigned long long)" + keep;
  if (vec == 4)
    s += indent + "const bool aligned = ((" + mask + ") & 15) == 0;  // float4 needs 16 bytes\n" +
         indent + "const long long nv = aligned ? len / kVec : 0;\n";
  else
    s += indent + "const long long nv = len;\n";
  auto loads = [&](const std::string& idx, const std::string& dst) {
    std::string r;
    for (size_t i = 0; i < ptrs.size(); ++i)
      r += fmt::format("kbrl_ldv({}, {}, v[{}]{}); ", ptrs[i], idx, i, dst);
    if (!keep.empty()) r += fmt::format("kbrl_ldv_keep({}, {}, v[{}]{}); ", keep, idx, ptrs.size(), dst);
    return r;
  };
  s += indent + "long long j = gi;\n" + indent +
       "for (; j + (long long)(kItems - 1) * G < nv; j += (long long)kItems * G) {\n" + indent +
       fmt::format("  float v[{}][kItems][kVec];\n", n) + "#pragma unroll\n" + indent +
       "  for (int k = 0; k < kItems; ++k) { " + loads("j + k * G", "[k]") + "}\n" + tile + indent +
       "}\n";
  if (safe_tail) {
    s += indent + "for (; j < nv; j += G) {  // the thread's last vectors (fewer than kItems)\n" +
         indent + fmt::format("  float v[{}][kVec];\n", n) + indent + "  " + loads("j", "") + "\n" +
         one + indent + "}\n";
    std::string e;
    for (size_t i = 0; i < ptrs.size(); ++i)
      e += fmt::format("kbrl_ld({} + i){}", ptrs[i], i + 1 < n ? ", " : "");
    if (!keep.empty()) e += "__ldg(" + keep + " + i)";
    s += indent + "for (long long i = nv * kVec + gi; i < len; i += G) {  // scalar tail\n" + indent +
         fmt::format("  const float e[{}] = {{{}}};\n", n, e) + scalar + indent + "}\n";
  } else {
    s += indent + "// tail=dropped (unsafe): the last partial step and the scalar tail are skipped.\n";
  }
  return s;
}

/// `code` with two more spaces at the start of each line (preprocessor lines stay put).
std::string indented(const std::string& code) {
  std::string r;
  bool at_start = true;
  for (const char ch : code) {
    if (at_start && ch != '#' && ch != '\n') r += "  ";
    r += ch;
    at_start = ch == '\n';
  }
  return r;
}

std::string group_setup(const std::string& variant) {
  if (variant == "warp_per_row")
    return "  // warp_per_row: each warp takes rows warp, warp + warps, ...\n"
           "  const long long G = 32;\n"
           "  const long long gi = threadIdx.x & 31;\n"
           "  const long long group = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);\n"
           "  const long long groups = (long long)gridDim.x * (blockDim.x >> 5);\n";
  return "  // block_per_row: each block takes rows blockIdx.x, blockIdx.x + gridDim.x, ...\n"
         "  const long long G = blockDim.x;\n"
         "  const long long gi = threadIdx.x;\n"
         "  const long long group = blockIdx.x;\n"
         "  const long long groups = gridDim.x;\n";
}

/// The end of every partial kernel: the block's sum of the threads' running sums.
const char* kPartialEnd =
    "  const Acc total = kbrl_block_reduce(kbrl_run_out(run), (Acc)0, acc_smem, SumOp{});\n"
    "  if (threadIdx.x == 0) part[blockIdx.x] = total;\n"
    "}\n";

std::string source_of(const TaskSpec& task, const LossTask& t, const Config& config) {
  const int64_t vec = config.integer("vec");
  const int64_t items = config.integer("items_per_thread");
  // Row-wise tasks have no cache_hint knob: their read-once rows always go through __ldcs.
  const bool streaming = !config.has("cache_hint") || config.at("cache_hint") == "streaming";
  const bool dbl = config.at("accumulate") == "fp64";
  const bool half = config.at("precision") == "fp16_compute";
  const bool fast = config.has("fast_math") && config.at("fast_math") == "on";
  const bool safe_tail = config.at("tail") == "safe";
  const std::string variant = config.has("variant") ? config.at("variant") : "flat";

  std::string s = fmt::format("// kbrl loss generator: task {} ({}): {}.\n// ", task.id, task.name,
                              t.math);
  for (const auto& [k, v] : config.entries())
    if (k != "block" && k != "grid") s += k + "=" + v + " ";
  s.back() = '\n';
  s += "// Stage 1 (kbrl_loss_partial): one partial sum per block into scratch; stage 2\n"
       "// (kbrl_loss_final): one block reduces the partials in a fixed order. No atomics.\n";
  s += fmt::format("typedef {} Acc;  // accumulate={}\n", dbl ? "double" : "float",
                   config.at("accumulate"));
  s += fmt::format("constexpr int kVec = {};\nconstexpr int kItems = {};\n", vec, items);
  s += math_helpers(t.kind, half, fast);
  s += load_helpers(vec, streaming);
  s += reduce_helpers();
  const std::string tile_sum =
      "    float s = 0.0f;\n"
      "#pragma unroll\n"
      "    for (int k = 0; k < kItems; ++k)\n"
      "#pragma unroll\n"
      "      for (int c = 0; c < kVec; ++c) s += kbrl_term(v[0][k][c], v[1][k][c]);\n"
      "    run = kbrl_run_add(run, s);\n";
  const std::string one_sum =
      "    float s = 0.0f;\n"
      "#pragma unroll\n"
      "    for (int c = 0; c < kVec; ++c) s += kbrl_term(v[0][c], v[1][c]);\n"
      "    run = kbrl_run_add(run, s);\n";
  const std::string scalar_sum = "    run = kbrl_run_add(run, kbrl_term(e[0], e[1]));\n";

  switch (t.kind) {
    case Kind::flat: {
      s += "\n" + term_of(task.id);
      s += "\n// The whole grid is one group streaming x and y (n elements each), grid-stride.\n"
           "extern \"C\" __global__ void kbrl_loss_partial(const float* __restrict__ x, "
           "const float* __restrict__ y, Acc* __restrict__ part, long long len) {\n"
           "  __shared__ Acc acc_smem[32];\n"
           "  const long long G = (long long)gridDim.x * blockDim.x;\n"
           "  const long long gi = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
           "  Run run = kbrl_run_zero();\n";
      s += row_scan({"x", "y"}, "", tile_sum, one_sum, scalar_sum, vec, safe_tail, "  ");
      s += kPartialEnd;
      break;
    }
    case Kind::hinge: {
      s += "\n" + term_of(task.id);
      s += "\n// Row r of predictions (cols elements) against targets[0..cols): column j uses t[j].\n"
           "extern \"C\" __global__ void kbrl_loss_partial(const float* __restrict__ x, "
           "const float* __restrict__ t, Acc* __restrict__ part, long long rows, long long cols) {\n"
           "  __shared__ Acc acc_smem[32];\n";
      s += group_setup(variant);
      s += "  Run run = kbrl_run_zero();\n"
           "  const long long len = cols;\n"
           "  for (long long row = group; row < rows; row += groups) {\n"
           "    const float* __restrict__ in = x + row * cols;\n";
      s += row_scan({"in"}, "t", indented(tile_sum), indented(one_sum), indented(scalar_sum), vec,
                    safe_tail, "    ");
      s += "  }\n";
      s += kPartialEnd;
      break;
    }
    case Kind::cross_entropy: {
      s += max_sum_helpers();
      const std::string tile =
          "      float lm = KBRL_NEG_INF;  // the step's maximum, then one rescale\n"
          "#pragma unroll\n"
          "      for (int k = 0; k < kItems; ++k)\n"
          "#pragma unroll\n"
          "        for (int c = 0; c < kVec; ++c) lm = kbrl_max(lm, v[0][k][c]);\n"
          "      if (lm > st.m) {\n"
          "        st.s *= k_exp(st.m - lm);  // exp(-inf) = 0 for the first step\n"
          "        st.m = lm;\n"
          "      }\n"
          "#pragma unroll\n"
          "      for (int k = 0; k < kItems; ++k)\n"
          "#pragma unroll\n"
          "        for (int c = 0; c < kVec; ++c)\n"
          "          if (v[0][k][c] != KBRL_NEG_INF) st.s += k_exp(v[0][k][c] - st.m);  // -inf adds 0\n";
      const std::string one =
          "#pragma unroll\n"
          "      for (int c = 0; c < kVec; ++c) kbrl_add(st, v[0][c]);\n";
      const std::string scalar = "      kbrl_add(st, e[0]);\n";
      s += "\n// log_softmax over each row then nll_loss (mean over rows): the row's online (max, sum\n"
           "// of exp) per thread, merged over its group; the group's first thread adds the row's\n"
           "// loss -((x[target] - max) - log(sum)) to its running sum.\n"
           "extern \"C\" __global__ void kbrl_loss_partial(const float* __restrict__ x, "
           "const long long* __restrict__ target, Acc* __restrict__ part, long long rows, "
           "long long cols) {\n"
           "  __shared__ Acc acc_smem[32];\n";
      if (variant == "block_per_row") s += "  __shared__ MaxSum ms_smem[32];\n";
      s += group_setup(variant);
      s += "  Run run = kbrl_run_zero();\n"
           "  const long long len = cols;\n"
           "  for (long long row = group; row < rows; row += groups) {\n"
           "    const float* __restrict__ in = x + row * cols;\n"
           "    float xt = 0.0f;  // x[row, target[row]], loaded early by the group's first thread\n"
           "    bool valid = false;\n"
           "    if (gi == 0) {\n"
           "      const long long c = target[row];\n"
           "      valid = c >= 0 && c < cols;  // torch raises on an out-of-range class; NaN here\n"
           "      if (valid) xt = in[c];\n"
           "    }\n"
           "    MaxSum st = {KBRL_NEG_INF, 0.0f};\n";
      s += row_scan({"in"}, "", tile, one, scalar, vec, safe_tail, "    ");
      if (variant == "block_per_row")
        s += "    st = kbrl_block_reduce(st, MaxSum{KBRL_NEG_INF, 0.0f}, ms_smem, MergeOp{});\n";
      else
        s += "    st = kbrl_warp_reduce(st, MergeOp{});\n";
      s += "    if (gi == 0) {\n"
           "      const float loss = valid ? -((xt - st.m) - k_log(st.s)) : __int_as_float(0x7fc00000);\n"
           "      run = kbrl_run_add(run, loss);\n"
           "    }\n"
           "  }\n";
      s += kPartialEnd;
      break;
    }
    case Kind::triplet: {
      s += kPairHelpers;
      const std::string tile =
          "#pragma unroll\n"
          "      for (int k = 0; k < kItems; ++k)\n"
          "#pragma unroll\n"
          "        for (int c = 0; c < kVec; ++c) {\n"
          "          st.p += k_sq((v[0][k][c] - v[1][k][c]) + kEps);\n"
          "          st.n += k_sq((v[0][k][c] - v[2][k][c]) + kEps);\n"
          "        }\n";
      const std::string one =
          "#pragma unroll\n"
          "      for (int c = 0; c < kVec; ++c) {\n"
          "        st.p += k_sq((v[0][c] - v[1][c]) + kEps);\n"
          "        st.n += k_sq((v[0][c] - v[2][c]) + kEps);\n"
          "      }\n";
      const std::string scalar =
          "      st.p += k_sq((e[0] - e[1]) + kEps);\n"
          "      st.n += k_sq((e[0] - e[2]) + kEps);\n";
      s += "\n// pairwise_distance(x1, x2) = ||x1 - x2 + eps||_2 per row (torch: eps added to the\n"
           "// difference), loss = clamp_min(margin + d(a, p) - d(a, n), 0), mean over rows.\n"
           "constexpr float kMargin = 1.0f;\n"
           "constexpr float kEps = 1e-6f;\n"
           "extern \"C\" __global__ void kbrl_loss_partial(const float* __restrict__ a, "
           "const float* __restrict__ p, const float* __restrict__ n, Acc* __restrict__ part, "
           "long long rows, long long cols) {\n"
           "  __shared__ Acc acc_smem[32];\n";
      if (variant == "block_per_row") s += "  __shared__ Pair pair_smem[32];\n";
      s += group_setup(variant);
      s += "  Run run = kbrl_run_zero();\n"
           "  const long long len = cols;\n"
           "  for (long long row = group; row < rows; row += groups) {\n"
           "    const float* __restrict__ ra = a + row * cols;\n"
           "    const float* __restrict__ rp = p + row * cols;\n"
           "    const float* __restrict__ rn = n + row * cols;\n"
           "    Pair st = {0.0f, 0.0f};\n";
      s += row_scan({"ra", "rp", "rn"}, "", tile, one, scalar, vec, safe_tail, "    ");
      if (variant == "block_per_row")
        s += "    st = kbrl_block_reduce(st, Pair{0.0f, 0.0f}, pair_smem, PairSumOp{});\n";
      else
        s += "    st = kbrl_warp_reduce(st, PairSumOp{});\n";
      s += "    if (gi == 0) {\n"
           "      const float v = kMargin + k_sqrt(st.p) - k_sqrt(st.n);\n"
           "      run = kbrl_run_add(run, v < 0.0f ? 0.0f : v);  // clamp_min(., 0); NaN stays NaN\n"
           "    }\n"
           "  }\n";
      s += kPartialEnd;
      break;
    }
  }
  return s;
}

class LossGenerator final : public Generator {
 public:
  std::string_view name() const override { return "loss"; }
  bool covers(int task_id) const override { return find_task(task_id) != nullptr; }

  KnobSpace space(const TaskSpec& task) const override {
    const LossTask& t = task_of(task);
    const bool rows = row_wise(t.kind);
    KnobSpace space;
    if (rows)
      space.add_knob({"variant", {"warp_per_row", "block_per_row"},
                      "warp_per_row: each warp walks whole rows (shuffle reductions per row); "
                      "block_per_row: each block walks whole rows (block reductions per row)"});
    if (rows)
      space.add_knob({"block", {"128", "256", "512"}, "threads per block"});
    else
      space.add_knob({"block", {"128", "256", "512", "1024"}, "threads per block"});
    space
        .add_knob({"vec", {"1", "4"},
                   "floats per access (float4 when the pointers are 16-byte aligned, else element "
                   "by element)"})
        .add_knob({"items_per_thread", {"1", "2", "4"},
                   "vec-wide accesses of each input a thread issues per step before using any"})
        .add_knob({"grid", {"2", "4", "8"},
                   "partial blocks per SM of an H100 (132 SMs), capped by the work: the number of "
                   "partial sums the final launch reduces"});
    if (!rows)
      space.add_knob({"cache_hint", {"none", "streaming"},
                      "streaming: the read-once inputs through __ldcs (evict first)"});
    space
        .add_knob({"accumulate", {"fp32", "fp64"},
                   "the type of the threads' running sums, the block tree, the partials and the "
                   "final reduction (per-step sums stay fp32); both safe"})
        .add_knob({"precision", {"fp32", "fp16_compute"},
                   t.kind == Kind::cross_entropy ? "fp16_compute (unsafe): exp(x - max) in __half"
                   : t.kind == Kind::triplet
                       ? "fp16_compute (unsafe): the squared differences in __half"
                       : "fp16_compute (unsafe): the threads' running sums are __half"});
    if (t.transcendental)
      space.add_knob({"fast_math", {"off", "on"},
                      "on (unsafe): --use_fast_math and the __expf/__logf intrinsics"});
    space.add_knob({"tail", {"safe", "dropped"},
                    "dropped (unsafe): the partial last step of each thread and the scalar tail "
                    "are skipped (wrong unless the length is a multiple of the step)"});

    space.add_constraint({"vec * items_per_thread >= 2 (at least two floats of each input in "
                          "flight per thread)",
                          {"vec", "items_per_thread"},
                          [](const Config& c) {
                            return c.integer("vec") * c.integer("items_per_thread") >= 2;
                          }});
    std::vector<std::string> unsafe_knobs = {"accumulate", "precision"};
    if (t.transcendental) unsafe_knobs.push_back("fast_math");
    unsafe_knobs.push_back("tail");
    space.add_constraint(
        {"at most one unsafe value (precision, fast_math, tail), and only with accumulate=fp32",
         unsafe_knobs, [](const Config& c) {
           const int n = (c.at("precision") != "fp32") +
                         (c.has("fast_math") && c.at("fast_math") != "off") +
                         (c.at("tail") != "safe");
           return n == 0 || (n == 1 && c.at("accumulate") == "fp32");
         }});
    return space;
  }

  Candidate generate(const TaskSpec& task, const Config& given) const override {
    const LossTask& t = task_of(task);
    const Config config = checked_config(space(task), given);

    const int64_t block = config.integer("block");
    const int64_t vec = config.integer("vec");
    const int64_t items = config.integer("items_per_thread");
    const int64_t cap = config.integer("grid") * kH100Sms;  // partial blocks per SM
    const int64_t acc_bytes = config.at("accumulate") == "fp64" ? 8 : 4;
    const auto& shape = task.inputs[0].shape;
    const int64_t numel = task.inputs[0].numel();

    int64_t grid = 1, denom = 1;
    std::vector<KernelArg> args;
    for (size_t i = 0; i < task.inputs.size(); ++i)
      args.push_back(KernelArg{ArgKind::input, static_cast<int>(i)});
    args.push_back(KernelArg{ArgKind::scratch, 0});
    if (t.kind == Kind::flat) {
      KBRL_CHECK_INPUT(task.inputs[1].shape == shape, "task {}: expected same-shaped inputs",
                       task.id);
      const int64_t vectors = (numel + vec - 1) / vec;
      grid = std::min(cap, (vectors + block * items - 1) / (block * items));
      args.push_back(i64_arg(numel));
      denom = task.id == 98 ? shape[0] : numel;  // KL batchmean: the sum over the batch size
    } else {
      KBRL_CHECK_INPUT(shape.size() == 2, "task {}: expected a 2-d first input", task.id);
      const int64_t rows = shape[0], cols = shape[1];
      if (t.kind == Kind::cross_entropy)
        KBRL_CHECK_INPUT(task.inputs[1].shape == std::vector<int64_t>{rows} &&
                             task.inputs[1].dtype == DType::i64,
                         "task {}: expected int64 targets [rows]", task.id);
      if (t.kind == Kind::hinge)
        KBRL_CHECK_INPUT(task.inputs[1].shape == std::vector<int64_t>{cols},
                         "task {}: expected targets [cols]", task.id);
      if (t.kind == Kind::triplet)
        KBRL_CHECK_INPUT(task.inputs[1].shape == shape && task.inputs[2].shape == shape,
                         "task {}: expected same-shaped inputs", task.id);
      const int64_t per_block = config.at("variant") == "warp_per_row" ? block / 32 : 1;
      grid = std::min(cap, (rows + per_block - 1) / per_block);
      args.push_back(i64_arg(rows));
      args.push_back(i64_arg(cols));
      denom = t.kind == Kind::hinge ? numel : rows;
    }
    grid = std::max<int64_t>(grid, 1);

    Candidate candidate;
    candidate.task_id = task.id;
    candidate.source = source_of(task, t, config);
    candidate.scratch.push_back({"partials", grid * acc_bytes});
    Launch partial;
    partial.kernel = "kbrl_loss_partial";
    partial.grid = {static_cast<uint32_t>(grid), 1, 1};
    partial.block = {static_cast<uint32_t>(block), 1, 1};
    partial.args = std::move(args);
    candidate.launches.push_back(std::move(partial));
    Launch final;
    final.kernel = "kbrl_loss_final";
    final.grid = {1, 1, 1};
    final.block = {static_cast<uint32_t>(kFinalBlock), 1, 1};
    final.args = {KernelArg{ArgKind::scratch, 0}, KernelArg{ArgKind::output, 0}, i64_arg(grid),
                  i64_arg(denom)};
    candidate.launches.push_back(std::move(final));
    add_fast_math_option(candidate, config);
    return candidate;
  }

  Config expert(const TaskSpec& task) const override {
    const LossTask& t = task_of(task);
    // Streaming at HBM speed: float4 loads, 4 (3 inputs: 2) accesses of each input in flight per
    // thread, 256-thread blocks, 4 partial blocks per SM (one wave at the register use of these
    // kernels), read-once data evicted first. Rows of 4096 / 8192 floats go warp per row (shuffle
    // reductions only); the hinge's 32768-float rows go block per row. Double partials where a
    // thread's running sum covers ~1e9 / (528 * 256) elements (flat, hinge); fp32 over row losses.
    Config c;
    if (t.kind == Kind::cross_entropy || t.kind == Kind::triplet) c.set("variant", "warp_per_row");
    if (t.kind == Kind::hinge) c.set("variant", "block_per_row");
    c.set("block", "256");
    c.set("vec", "4");
    c.set("items_per_thread", t.kind == Kind::triplet ? "2" : "4");
    c.set("grid", "4");
    if (t.kind == Kind::flat) c.set("cache_hint", "streaming");
    c.set("accumulate",
          t.kind == Kind::cross_entropy || t.kind == Kind::triplet ? "fp32" : "fp64");
    c.set("precision", "fp32");
    if (t.transcendental) c.set("fast_math", "off");
    c.set("tail", "safe");
    return c;
  }
};

}  // namespace

const Generator& loss_generator() {
  static const LossGenerator generator;
  return generator;
}

}  // namespace kbrl
