#include "elementwise.h"

#include <algorithm>
#include <string>

#include <kbrl/error.h>

#include "device_snippets.h"
#include "family_common.h"

namespace kbrl {
namespace {

/// How an output element is formed from the inputs.
enum class OpShape {
  unary,   // y[i] = f(x[i])
  scalar,  // C[i] = A[i] * s (task scalar 0)
  rows,    // C[r, c] = A[r] * B[r, c]
};

/// One task's math, written over `v` of type T (float or __half) with the helpers the prelude
/// defines (to_t, k_exp, k_tanh, k_erf, k_expm1, k_log1p, k_abs, k_div, k_min, k_max), in the same
/// order of operations as torch's CUDA kernels.
struct ElementwiseOp {
  int task_id;
  const char* math;  // for the source's comment
  OpShape shape;
  const char* expr;
  bool approximable;  // has a transcendental or a division: fast_math can change it
};

constexpr ElementwiseOp kOps[] = {
    {5, "C = A * s", OpShape::scalar, "v * to_t(s)", false},
    {12, "C = A.unsqueeze(1) * B", OpShape::rows, "to_t(rows[i / kCols]) * v", false},
    {19, "relu", OpShape::unary, "v < to_t(0.0f) ? to_t(0.0f) : v", false},
    {20, "leaky_relu, slope 0.01", OpShape::unary, "v > to_t(0.0f) ? v : v * to_t(0.01f)", false},
    {21, "sigmoid", OpShape::unary, "k_div(to_t(1.0f), to_t(1.0f) + k_exp(-v))", true},
    {22, "tanh", OpShape::unary, "k_tanh(v)", true},
    {25, "swish: x * sigmoid(x)", OpShape::unary,
     "v * k_div(to_t(1.0f), to_t(1.0f) + k_exp(-v))", true},
    {26, "gelu (exact, erf)", OpShape::unary,
     "v * to_t(0.5f) * (to_t(1.0f) + k_erf(v * to_t(0.70710678118654752f)))", true},
    // torch's elu kernel with alpha and scale of SELU: negcoef = float(alpha) * float(scale).
    {27, "selu", OpShape::unary,
     "v <= to_t(0.0f) ? k_expm1(v) * to_t(1.7580993175506592f) : v * to_t(1.0507010221481323f)",
     true},
    {28, "hardsigmoid", OpShape::unary,
     "k_min(k_max(v + to_t(3.0f), to_t(0.0f)), to_t(6.0f)) * to_t(0.16666666666666666f)", false},
    {29, "softplus, beta 1, threshold 20", OpShape::unary,
     "v > to_t(20.0f) ? v : k_log1p(k_exp(v))", true},
    {30, "softsign: x / (1 + |x|)", OpShape::unary, "k_div(v, to_t(1.0f) + k_abs(v))", true},
    {31, "elu, alpha 1", OpShape::unary, "v <= to_t(0.0f) ? k_expm1(v) : v", true},
    // clamp: NaN passes through.
    {32, "hardtanh, [-1, 1]", OpShape::unary,
     "v < to_t(-1.0f) ? to_t(-1.0f) : (v > to_t(1.0f) ? to_t(1.0f) : v)", false},
    // 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))); torch's pow(x, 3) is x * x * x.
    {88, "NewGELU (tanh approximation)", OpShape::unary,
     "to_t(0.5f) * v * (to_t(1.0f) + k_tanh(to_t(0.7978845608028654f) * "
     "(v + to_t(0.044715f) * (v * v * v))))",
     true},
};

const ElementwiseOp* find_op(int task_id) {
  return find_entry(kOps, &ElementwiseOp::task_id, task_id);
}

const ElementwiseOp& op_of(const TaskSpec& task) {
  const ElementwiseOp* op = find_op(task.id);
  check_covered(op != nullptr, "elementwise", task);
  return *op;
}

std::string prelude(bool half, bool fast) {
  std::string s;
  if (half) {
    s += "#include <cuda_fp16.h>\n\n"
         "// precision=fp16_compute: the math runs on __half (erf has no half version: it is\n"
         "// evaluated in float and rounded).\n"
         "typedef __half T;\n"
         "__device__ __forceinline__ T to_t(float v) { return __float2half(v); }\n"
         "__device__ __forceinline__ float from_t(T v) { return __half2float(v); }\n"
         "__device__ __forceinline__ T k_exp(T v) { return hexp(v); }\n"
         "__device__ __forceinline__ T k_tanh(T v) { return htanh(v); }\n"
         "__device__ __forceinline__ T k_erf(T v) { return __float2half(erff(__half2float(v))); }\n"
         "__device__ __forceinline__ T k_expm1(T v) { return hexp(v) - to_t(1.0f); }\n"
         "__device__ __forceinline__ T k_log1p(T v) { return hlog(to_t(1.0f) + v); }\n"
         "__device__ __forceinline__ T k_abs(T v) { return __habs(v); }\n"
         "__device__ __forceinline__ T k_div(T a, T b) { return a / b; }\n";
  } else if (fast) {
    s += "// fast_math=on: intrinsics, and the whole unit under --use_fast_math.\n"
         "typedef float T;\n"
         "__device__ __forceinline__ T to_t(float v) { return v; }\n"
         "__device__ __forceinline__ float from_t(T v) { return v; }\n"
         "__device__ __forceinline__ T k_exp(T v) { return __expf(v); }\n"
         "__device__ __forceinline__ T k_tanh(T v) { return 1.0f - __fdividef(2.0f, __expf(2.0f * v) "
         "+ 1.0f); }\n"
         "__device__ __forceinline__ T k_erf(T v) { return erff(v); }\n"
         "__device__ __forceinline__ T k_expm1(T v) { return __expf(v) - 1.0f; }\n"
         "__device__ __forceinline__ T k_log1p(T v) { return __logf(1.0f + v); }\n"
         "__device__ __forceinline__ T k_abs(T v) { return fabsf(v); }\n"
         "__device__ __forceinline__ T k_div(T a, T b) { return __fdividef(a, b); }\n";
  } else {
    s += "typedef float T;\n"
         "__device__ __forceinline__ T to_t(float v) { return v; }\n"
         "__device__ __forceinline__ float from_t(T v) { return v; }\n"
         "__device__ __forceinline__ T k_exp(T v) { return expf(v); }\n"
         "__device__ __forceinline__ T k_tanh(T v) { return tanhf(v); }\n"
         "__device__ __forceinline__ T k_erf(T v) { return erff(v); }\n"
         "__device__ __forceinline__ T k_expm1(T v) { return expm1f(v); }\n"
         "__device__ __forceinline__ T k_log1p(T v) { return log1pf(v); }\n"
         "__device__ __forceinline__ T k_abs(T v) { return fabsf(v); }\n"
         "__device__ __forceinline__ T k_div(T a, T b) { return a / b; }\n";
  }
  // std::max and std::min's semantics: (a < b) ? b : a and (b < a) ? b : a.
  s += "__device__ __forceinline__ T k_max(T a, T b) { return a < b ? b : a; }\n"
       "__device__ __forceinline__ T k_min(T a, T b) { return b < a ? b : a; }\n";
  return s;
}

std::string source_of(const TaskSpec& task, const ElementwiseOp& op, const Config& config) {
  const int64_t vec = config.integer("vec");
  const int64_t items = config.integer("items_per_thread");
  const std::string hint = config.at("cache_hint");
  const bool half = config.at("precision") == "fp16_compute";
  const bool fast = config.at("fast_math") == "on";
  const bool safe_tail = config.at("tail") == "safe";

  std::string extra_sig, extra_args, apply_params;
  switch (op.shape) {
    case OpShape::unary:
      apply_params = "float in";
      break;
    case OpShape::scalar:
      apply_params = "float in, float s";
      extra_sig = ", float s";
      extra_args = ", s";
      break;
    case OpShape::rows:
      apply_params = "float in, long long i, const float* __restrict__ rows";
      extra_sig = ", const float* __restrict__ rows";
      break;
  }
  // The arguments of kbrl_apply after the element, for element index `i`.
  auto call = [&](const std::string& value, const std::string& index) {
    if (op.shape == OpShape::rows) return "kbrl_apply(" + value + ", " + index + ", rows)";
    return "kbrl_apply(" + value + extra_args + ")";
  };

  std::string s = fmt::format(
      "// kbrl elementwise generator: task {} ({}), {}.\n"
      "// vec={} items_per_thread={} cache_hint={} precision={} fast_math={} tail={}\n",
      task.id, task.name, op.math, vec, items, hint, config.at("precision"), config.at("fast_math"),
      config.at("tail"));
  s += prelude(half, fast);
  if (op.shape == OpShape::rows)
    s += fmt::format("constexpr long long kCols = {};  // the row length of B\n",
                     task.inputs.at(1).shape.at(1));
  s += fmt::format(
      "\n__device__ __forceinline__ float kbrl_apply({}) {{\n"
      "  const T v = to_t(in);\n"
      "  return from_t({});\n"
      "}}\n\n",
      apply_params, op.expr);

  const std::string vt = vec == 1 ? "float" : fmt::format("float{}", vec);
  s += "extern \"C\" __global__ void kbrl_elementwise(const float* __restrict__ x, "
       "float* __restrict__ y, long long n" + extra_sig + ") {\n";
  s += fmt::format("  constexpr int kVec = {};\n  constexpr int kItems = {};\n", vec, items);
  s += "  const long long tile = (long long)blockDim.x * (kVec * kItems);\n"
       "  const long long stride = (long long)gridDim.x * tile;\n";
  if (vec > 1)
    s += fmt::format(
        "  const bool aligned = (((unsigned long long)x | (unsigned long long)y) & {}) == 0;\n",
        vec * 4 - 1);
  s += "  for (long long base = (long long)blockIdx.x * tile; base < n; base += stride) {\n"
       "    if (base + tile <= n) {\n";
  std::string indent = "      ";
  if (vec > 1) {
    s += "      if (aligned) {\n";
    indent = "        ";
  }
  s += indent + "const " + vt + "* xv = reinterpret_cast<const " + vt + "*>(x + base);\n";
  s += indent + vt + "* yv = reinterpret_cast<" + vt + "*>(y + base);\n";
  s += indent + vt + " r[kItems];\n";
  s += "#pragma unroll\n";
  s += indent + "for (int k = 0; k < kItems; ++k) r[k] = " +
       load_expr(hint, "xv + k * blockDim.x + threadIdx.x") + ";\n";
  s += "#pragma unroll\n";
  s += indent + "for (int k = 0; k < kItems; ++k) {\n";
  if (op.shape == OpShape::rows)
    s += indent + "  const long long i = base + ((long long)k * blockDim.x + threadIdx.x) * kVec;\n";
  if (vec == 1) {
    s += indent + "  r[k] = " + call("r[k]", "i") + ";\n";
  } else {
    const char* comps = "xyzw";
    for (int64_t c = 0; c < vec; ++c) {
      const std::string field = std::string("r[k].") + comps[c];
      s += indent + "  " + field + " = " + call(field, fmt::format("i + {}", c)) + ";\n";
    }
  }
  s += indent + "  " + store_expr(hint, "yv + k * blockDim.x + threadIdx.x", "r[k]") + ";\n";
  s += indent + "}\n";
  if (vec > 1) {
    s += "      } else {  // unaligned pointers: element by element\n"
         "        for (long long i = base + threadIdx.x; i < base + tile; i += blockDim.x)\n"
         "          " + store_expr(hint, "y + i", call(load_expr(hint, "x + i"), "i")) + ";\n"
         "      }\n";
  }
  s += "    }";
  if (safe_tail) {
    s += " else {  // the last, partial tile\n"
         "      for (long long i = base + threadIdx.x; i < n; i += blockDim.x)\n"
         "        " + store_expr(hint, "y + i", call(load_expr(hint, "x + i"), "i")) + ";\n"
         "    }\n";
  } else {
    s += "  // tail=dropped: a partial last tile is never written\n";
  }
  s += "  }\n}\n";
  return s;
}

class ElementwiseGenerator final : public Generator {
 public:
  std::string_view name() const override { return "elementwise"; }
  bool covers(int task_id) const override { return find_op(task_id) != nullptr; }

  KnobSpace space(const TaskSpec& task) const override {
    const ElementwiseOp& op = op_of(task);
    KnobSpace space;
    space.add_knob({"block", {"128", "256", "512", "1024"}, "threads per block"})
        .add_knob({"vec", {"1", "2", "4"},
                   "floats per access (float2/float4 when both pointers are aligned, else element "
                   "by element)"})
        .add_knob({"items_per_thread", {"1", "2", "4", "8"},
                   "vector items each thread loads before computing any (per tile)"})
        .add_knob({"grid", {"exact", "waves"},
                   "exact: one tile per block; waves: at most two waves of resident blocks of an "
                   "H100 (132 SMs), grid-stride over the tiles"})
        .add_knob({"cache_hint", {"none", "ldg", "streaming"},
                   "plain accesses; __ldg loads; __ldcs loads and __stcs stores (evict first)"})
        .add_knob({"precision", {"fp32", "fp16_compute"},
                   "fp16_compute (unsafe): each element is converted to __half and the math runs "
                   "in half"})
        .add_knob({"fast_math", {"off", "on"},
                   "on (unsafe): --use_fast_math and the __expf/__logf/__fdividef intrinsics"})
        .add_knob({"tail", {"safe", "dropped"},
                   "dropped (unsafe): the last partial tile is never written (wrong unless numel "
                   "is a multiple of the tile)"});
    space.add_constraint({"vec * items_per_thread <= 8 (at most 32 bytes in flight per thread)",
                          {"vec", "items_per_thread"},
                          [](const Config& c) {
                            return c.integer("vec") * c.integer("items_per_thread") <= 8;
                          }});
    space.add_constraint({"block * vec * items_per_thread <= 2048 (a tile of at most 2048 elements)",
                          {"block", "vec", "items_per_thread"},
                          [](const Config& c) {
                            return c.integer("block") * c.integer("vec") *
                                       c.integer("items_per_thread") <= 2048;
                          }});
    if (!op.approximable) {
      space.add_constraint({"fast_math=off: this task's math has no transcendental or division "
                            "for fast-math to approximate",
                            {"fast_math"},
                            [](const Config& c) { return c.at("fast_math") == "off"; }});
    }
    space.add_constraint(fast_math_needs_fp32());
    return space;
  }

  Candidate generate(const TaskSpec& task, const Config& given) const override {
    const ElementwiseOp& op = op_of(task);
    const Config config = checked_config(space(task), given);

    const int64_t block = config.integer("block");
    const int64_t tile = block * config.integer("vec") * config.integer("items_per_thread");
    const TensorSpec& out = task.outputs.at(0);
    const int64_t n = out.numel();
    int64_t grid = std::max<int64_t>(1, (n + tile - 1) / tile);
    if (config.at("grid") == "waves") grid = std::min(grid, kTwoWaveThreads / block);

    Candidate candidate;
    candidate.task_id = task.id;
    candidate.source = source_of(task, op, config);
    Launch launch;
    launch.kernel = "kbrl_elementwise";
    launch.grid = {grid_dim(grid, task.id), 1, 1};
    launch.block = {static_cast<uint32_t>(block), 1, 1};
    const int primary = op.shape == OpShape::rows ? 1 : 0;
    launch.args = {KernelArg{ArgKind::input, primary}, KernelArg{ArgKind::output, 0}, i64_arg(n)};
    if (op.shape == OpShape::scalar) launch.args.push_back(KernelArg{ArgKind::task_scalar, 0});
    if (op.shape == OpShape::rows) launch.args.push_back(KernelArg{ArgKind::input, 0});
    candidate.launches.push_back(std::move(launch));
    add_fast_math_option(candidate, config);
    return candidate;
  }

  Config expert(const TaskSpec& task) const override {
    op_of(task);
    // float4 accesses, two in flight per thread (2048-element tiles), a grid of two waves with a
    // grid-stride loop, evict-first hints (every element is touched once), nothing unsafe.
    return Config{{"block", "256"},       {"vec", "4"},         {"items_per_thread", "2"},
                  {"grid", "waves"},      {"cache_hint", "streaming"}, {"precision", "fp32"},
                  {"fast_math", "off"},   {"tail", "safe"}};
  }
};

}  // namespace

const Generator& elementwise_generator() {
  static const ElementwiseGenerator generator;
  return generator;
}

}  // namespace kbrl
