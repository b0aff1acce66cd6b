#include "loss.h"

#include <algorithm>
#include <string>

#include <kbrl/error.h>

#include "cuda_text.h"
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

/// The device code (kernels/generators/cuda/): shared helpers, and the partial kernels.
constexpr std::string_view kHelpers = "loss.cuh";
constexpr std::string_view kPartial = "loss_partial.cuh";

/// The math helpers: k_exp, k_log, k_sqrt, k_sq per precision and fast_math, and the thread's
/// running-sum type Run (a __half under fp16_compute for the flat and hinge tasks).
std::string math_helpers(Kind kind, bool half, bool fast) {
  std::string s;
  if (half) s += cuda_text::section(kHelpers, "fp16_include");
  FloatMath math = FloatMath::exact;
  if (fast) {
    s += fast_math_note();
    math = FloatMath::fast;
  } else if (half && kind == Kind::cross_entropy) {
    s += cuda_text::section(kHelpers, "half_exp_note");
    math = FloatMath::half_exp;
  }
  s += k_exp_helper(math, "v") + k_log_helper(math);
  s += cuda_text::section(kHelpers, "k_sqrt");
  s += cuda_text::section(kHelpers, half && kind == Kind::triplet ? "k_sq_half" : "k_sq");
  const bool half_run = half && (kind == Kind::flat || kind == Kind::hinge);
  s += cuda_text::section(kHelpers, half_run ? "run_half" : "run_acc");
  return s;
}

/// Loads: kbrl_ld (one float of a streamed input), kbrl_ldv (kVec floats at vector index j),
/// kbrl_ldv_keep (kVec floats of an input read by every row: hinge's targets, always __ldg).
std::string load_helpers(int64_t vec, bool streaming) {
  std::string s =
      cuda_text::fill(kHelpers, "load_scalar", {{"LOAD", streaming ? "__ldcs(p)" : "*p"}});
  if (vec == 4)
    s += cuda_text::fill(kHelpers, "load_vec4",
                         {{"LOAD4", streaming ? "__ldcs(reinterpret_cast<const float4*>(p) + j)"
                                              : "reinterpret_cast<const float4*>(p)[j]"}});
  else
    s += cuda_text::section(kHelpers, "load_vec1");
  return s;
}

/// The name of a kind's sections in loss_partial.cuh ("<kind>_partial", "_aligned", "_tail").
std::string kind_name(Kind kind) {
  switch (kind) {
    case Kind::flat: return "flat";
    case Kind::cross_entropy: return "cross_entropy";
    case Kind::triplet: return "triplet";
    case Kind::hinge: return "hinge";
  }
  throw InternalError("loss: unknown kind");
}

/// kbrl_loss_partial of the task's kind: the row scan's element count (vec), its tail (tail),
/// and for the row-wise kinds the group of threads per row and the per-row reduction (variant).
std::string partial_kernel(Kind kind, const Config& config) {
  const std::string name = kind_name(kind);
  const std::string indent = kind == Kind::flat ? "  " : "    ";  // the scan's depth
  const std::string count = config.integer("vec") == 4
                                ? cuda_text::section(kPartial, name + "_aligned")
                                : cuda_text::fill(kPartial, "count_vec1", {{"INDENT", indent}});
  const std::string tail = config.at("tail") == "safe"
                               ? cuda_text::section(kPartial, name + "_tail")
                               : cuda_text::fill(kPartial, "tail_dropped", {{"INDENT", indent}});
  if (kind == Kind::flat)
    return cuda_text::fill(kPartial, "flat_partial", {{"COUNT", count}, {"TAIL", tail}});
  const bool block = config.at("variant") == "block_per_row";
  const std::string group = cuda_text::section(kPartial, block ? "group_block" : "group_warp");
  if (kind == Kind::hinge)
    return cuda_text::fill(kPartial, "hinge_partial",
                           {{"GROUP", group}, {"COUNT", count}, {"TAIL", tail}});
  // cross_entropy, triplet: the row's state merged over the group (a warp or the block).
  const std::string smem = block ? cuda_text::section(kPartial, name + "_block_smem") : "";
  const std::string reduce =
      cuda_text::section(kPartial, name + (block ? "_block_reduce" : "_warp_reduce"));
  return cuda_text::fill(kPartial, name + "_partial",
                         {{"ROW_SMEM", smem},
                          {"GROUP", group},
                          {"COUNT", count},
                          {"TAIL", tail},
                          {"ROW_REDUCE", reduce}});
}

std::string source_of(const TaskSpec& task, const LossTask& t, const Config& config) {
  // Row-wise tasks have no cache_hint knob: their read-once rows always go through __ldcs.
  const bool streaming = !config.has("cache_hint") || config.at("cache_hint") == "streaming";
  const bool half = config.at("precision") == "fp16_compute";
  const bool fast = config.has("fast_math") && config.at("fast_math") == "on";
  std::string knobs;  // the knobs the source depends on
  for (const auto& [k, v] : config.entries())
    if (k != "block" && k != "grid") knobs += (knobs.empty() ? "" : " ") + k + "=" + v;
  std::string s = cuda_text::fill(kHelpers, "unit_header",
                                  {{"TASK", std::to_string(task.id)},
                                   {"NAME", task.name},
                                   {"MATH", t.math},
                                   {"KNOBS", knobs}});
  s += fmt::format("typedef {} Acc;  // accumulate={}\n",
                   config.at("accumulate") == "fp64" ? "double" : "float", config.at("accumulate"));
  s += fmt::format("constexpr int kVec = {};\nconstexpr int kItems = {};\n", config.at("vec"),
                   config.at("items_per_thread"));
  s += math_helpers(t.kind, half, fast);
  s += load_helpers(config.integer("vec"), streaming);
  s += cuda_text::fill(kHelpers, "reduce",
                       {{"BLOCK_REDUCE", block_reduce_helper(WarpStep::warp_reduce_call)}});
  if (t.kind == Kind::flat || t.kind == Kind::hinge)
    s += cuda_text::section(kHelpers, "term_" + std::to_string(task.id));
  else if (t.kind == Kind::cross_entropy)
    s += cuda_text::fill(kHelpers, "cross_entropy_state", {{"MAX_SUM_STATE", max_sum_state()}});
  else
    s += cuda_text::section(kHelpers, "triplet_state");
  s += partial_kernel(t.kind, config);
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
