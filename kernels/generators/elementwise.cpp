#include "elementwise.h"

#include <algorithm>
#include <string>

#include <kbrl/error.h>

#include "cuda_text.h"
#include "device_snippets.h"
#include "family_common.h"

namespace kbrl {
namespace {

constexpr std::string_view kFile = "elementwise.cuh";  // the device code

/// How an output element is formed from the inputs.
enum class OpShape {
  unary,   // y[i] = f(x[i])
  scalar,  // C[i] = A[i] * s (task scalar 0)
  rows,    // C[r, c] = A[r] * B[r, c]
};

/// One task's math, written over `v` of type T (float or __half) with the helpers
/// cuda/elementwise.cuh defines (to_t, k_exp, k_tanh, k_erf, k_expm1, k_log1p, k_abs, k_div, k_min,
/// k_max), in the same order of operations as torch's CUDA kernels.
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

std::string source_of(const TaskSpec& task, const ElementwiseOp& op, const Config& config) {
  const int64_t vec = config.integer("vec");
  const std::string hint = config.at("cache_hint");
  const bool half = config.at("precision") == "fp16_compute";
  const bool fast = config.at("fast_math") == "on";

  const char* apply_params = op.shape == OpShape::unary    ? "apply_params_unary"
                             : op.shape == OpShape::scalar ? "apply_params_scalar"
                                                           : "apply_params_rows";
  std::string kernel_params;  // after n
  if (op.shape == OpShape::scalar) kernel_params = cuda_text::section(kFile, "kernel_params_scalar");
  if (op.shape == OpShape::rows) kernel_params = cuda_text::section(kFile, "kernel_params_rows");
  // kbrl_apply of `value` (element index `index`), with the kernel's extra argument.
  auto call = [&](const std::string& value, const std::string& index) {
    if (op.shape == OpShape::rows) return "kbrl_apply(" + value + ", " + index + ", rows)";
    if (op.shape == OpShape::scalar) return "kbrl_apply(" + value + ", s)";
    return "kbrl_apply(" + value + ")";
  };

  std::string s = cuda_text::fill(
      kFile, "header",
      {{"TASK", std::to_string(task.id)}, {"NAME", task.name}, {"MATH", op.math},
       {"VEC", config.at("vec")}, {"ITEMS", config.at("items_per_thread")}, {"HINT", hint},
       {"PRECISION", config.at("precision")}, {"FAST_MATH", config.at("fast_math")},
       {"TAIL", config.at("tail")}});
  s += cuda_text::section(kFile, half ? "math_fp16" : fast ? "math_fast" : "math_fp32");
  s += cuda_text::section(kFile, "min_max");
  if (op.shape == OpShape::rows)
    s += cuda_text::fill(kFile, "row_length", {{"COLS", std::to_string(task.inputs.at(1).shape.at(1))}});
  s += cuda_text::fill(kFile, "apply",
                       {{"PARAMS", cuda_text::section(kFile, apply_params)}, {"EXPR", op.expr}});

  s += cuda_text::fill(kFile, "kernel_head",
                       {{"EXTRA_PARAMS", kernel_params}, {"VEC", config.at("vec")},
                        {"ITEMS", config.at("items_per_thread")}});
  if (vec > 1) s += cuda_text::fill(kFile, "aligned_check", {{"ALIGN_MASK", std::to_string(vec * 4 - 1)}});
  s += cuda_text::section(kFile, "tile_loop");
  if (vec > 1) s += cuda_text::section(kFile, "if_aligned");
  // The full tile: float / float2 / float4 items, the aligned path's indent.
  const std::string indent = vec > 1 ? "        " : "      ";
  s += cuda_text::fill(kFile, "full_tile",
                       {{"INDENT", indent},
                        {"VT", vec == 1 ? "float" : fmt::format("float{}", vec)},
                        {"LOAD", load_expr(hint, "xv + k * blockDim.x + threadIdx.x")}});
  if (op.shape == OpShape::rows) s += cuda_text::fill(kFile, "row_index", {{"INDENT", indent}});
  if (vec == 1) {
    s += cuda_text::fill(kFile, "apply_item",
                         {{"INDENT", indent}, {"ITEM", "r[k]"}, {"APPLY", call("r[k]", "i")}});
  } else {
    for (int64_t c = 0; c < vec; ++c) {
      const std::string item = std::string("r[k].") + "xyzw"[c];
      s += cuda_text::fill(kFile, "apply_item",
                           {{"INDENT", indent}, {"ITEM", item}, {"APPLY", call(item, fmt::format("i + {}", c))}});
    }
  }
  s += cuda_text::fill(kFile, "full_tile_store",
                       {{"INDENT", indent}, {"STORE", store_expr(hint, "yv + k * blockDim.x + threadIdx.x", "r[k]")}});
  // Element by element: unaligned pointers (vec > 1), the last partial tile (tail=safe).
  const std::string one = store_expr(hint, "y + i", call(load_expr(hint, "x + i"), "i"));
  if (vec > 1) s += cuda_text::fill(kFile, "unaligned", {{"STORE", one}});
  if (config.at("tail") == "safe")
    s += cuda_text::fill(kFile, "tile_close_safe", {{"STORE", one}});
  else
    s += cuda_text::section(kFile, "tile_close_dropped");
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
