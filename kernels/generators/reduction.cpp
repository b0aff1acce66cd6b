#include "reduction.h"

#include <algorithm>
#include <string>

#include <kbrl/error.h>

#include "cuda_text.h"
#include "device_snippets.h"
#include "family_common.h"

namespace kbrl {
namespace {

constexpr std::string_view kFile = "reduction.cuh";  // the device code

enum class Op { sum, max, min, argmax, argmin };

struct ReductionTask {
  int task_id;
  Op op;
  bool mean;  // sum then * (1 / R)
};

constexpr ReductionTask kTasks[] = {
    {47, Op::sum, false}, {48, Op::sum, true},     {49, Op::max, false},
    {51, Op::argmax, false}, {52, Op::argmin, false}, {53, Op::min, false},
};

const ReductionTask* find_task(int task_id) {
  return find_entry(kTasks, &ReductionTask::task_id, task_id);
}

const ReductionTask& task_of(const TaskSpec& task) {
  const ReductionTask* t = find_task(task.id);
  check_covered(t != nullptr, "reduction", task);
  return *t;
}

bool is_arg(Op op) { return op == Op::argmax || op == Op::argmin; }
bool is_sum(Op op) { return op == Op::sum; }

/// The operation's helpers: for value ops Acc, k_init, k_add (Acc, float), k_out (Acc -> float),
/// k_merge (float, float); for arg ops k_better.
std::string helpers(Op op, bool half) {
  switch (op) {
    case Op::sum: return cuda_text::section(kFile, half ? "sum_fp16" : "sum_fp32");
    case Op::max: return cuda_text::section(kFile, "max_ops");
    case Op::min: return cuda_text::section(kFile, "min_ops");
    case Op::argmax: return cuda_text::fill(kFile, "arg_better", {{"OP", "argmax"}, {"CMP", ">"}});
    case Op::argmin: return cuda_text::fill(kFile, "arg_better", {{"OP", "argmin"}, {"CMP", "<"}});
  }
  throw InternalError("unknown reduction op");
}

/// The scan of one thread over rows r0, r0 + step, ... < r1 of column pointer p (x + b*R*K + k),
/// inside `if (k < K)`: leaves `float part` (value ops, its `accumulators` merged) or
/// `float best; int at` (arg ops).
std::string column_scan(Op op, int64_t accumulators, const std::string& hint) {
  const std::string ld = load_expr(hint, "p + r * K");
  const std::string ldu = load_expr(hint, "p + (r + u * step) * K");
  if (is_arg(op)) return cuda_text::fill(kFile, "scan_arg", {{"LOAD_U", ldu}, {"LOAD", ld}});
  KBRL_ASSERT(accumulators == 1 || accumulators == 2 || accumulators == 4,
              "reduction: {} accumulators", accumulators);
  const char* merge = accumulators == 4 ? "merge_4" : accumulators == 2 ? "merge_2" : "merge_1";
  return cuda_text::fill(kFile, "scan_value",
                         {{"LOAD_U", ldu}, {"LOAD", ld}, {"MERGE", cuda_text::section(kFile, merge)}});
}

std::string source_of(const ReductionTask& t, const Config& config) {
  const Op op = t.op;
  const bool arg = is_arg(op);
  const std::string variant = config.at("variant");
  const int64_t acc = config.has("accumulators") ? config.integer("accumulators") : 1;
  const std::string hint = config.at("cache_hint");
  const bool half = config.has("precision") && config.at("precision") == "fp16_compute";
  const bool dropped = config.has("tail") && config.at("tail") == "dropped";
  const char* op_name = op == Op::sum      ? "sum (times scale: 1 for sum, 1/R for mean)"
                        : op == Op::max    ? "max"
                        : op == Op::min    ? "min"
                        : op == Op::argmax ? "argmax (int64)"
                                           : "argmin (int64)";

  std::string s = cuda_text::fill(
      kFile, "header",
      {{"OP", op_name}, {"VARIANT", variant}, {"UNROLL", config.at("unroll")},
       {"ACC", std::to_string(acc)}, {"HINT", hint}, {"PRECISION", half ? "fp16_compute" : "fp32"},
       {"TAIL", dropped ? "dropped" : "safe"}});
  s += helpers(op, half);
  s += cuda_text::fill(kFile, "constants",
                       {{"UNROLL", config.at("unroll")}, {"ACC", std::to_string(acc)}});

  // The main kernel: its outputs are the partials (two_kernel) or y.
  const bool two = variant == "two_kernel";
  s += cuda_text::section(kFile, two ? (arg ? "reduce_head_partials_arg" : "reduce_head_partials")
                                     : (arg ? "reduce_head_arg" : "reduce_head"));
  if (dropped) s += cuda_text::section(kFile, "tail_dropped");
  s += cuda_text::section(kFile, two ? "rows_chunked" : "rows_all");
  s += column_scan(op, acc, hint);
  if (variant != "column_per_thread") s += cuda_text::section(kFile, arg ? "slices_arg" : "slices_value");
  s += cuda_text::section(kFile, two ? (arg ? "store_partials_arg" : "store_partials")
                                     : (arg ? "store_arg" : "store_value"));
  if (!two) return s;

  // two_kernel's combine launch.
  s += cuda_text::section(kFile, arg ? "combine_head_arg" : "combine_head");
  if (dropped) s += cuda_text::fill(kFile, "combine_dropped", {{"COLS", config.at("cols_per_block")}});
  s += cuda_text::section(kFile, arg ? "combine_arg" : "combine_value");
  return s;
}

class ReductionGenerator final : public Generator {
 public:
  std::string_view name() const override { return "reduction"; }
  bool covers(int task_id) const override { return find_task(task_id) != nullptr; }

  KnobSpace space(const TaskSpec& task) const override {
    const ReductionTask& t = task_of(task);
    const bool sum = is_sum(t.op);
    KnobSpace space;
    space.add_knob({"variant", {"column_per_thread", "split_rows", "two_kernel"},
                    "column_per_thread: one thread per column over all R rows; split_rows: a "
                    "block covers cols_per_block columns and splits R over its row slices "
                    "(combined in shared memory); two_kernel: split_rows over row_splits chunks "
                    "of R with partials in scratch, then a combine launch"})
        .add_knob({"block", {"128", "256", "512"}, "threads per block"})
        .add_knob({"cols_per_block", {"32", "64", "block"},
                   "consecutive columns a block covers (blockDim.x); 'block': all its threads "
                   "(column_per_thread)"})
        .add_knob({"row_splits", {"1", "4", "16"},
                   "chunks of R reduced by separate blocks (two_kernel), else 1"})
        .add_knob({"unroll", {"1", "2", "4"}, "rows each thread loads before combining any"});
    if (sum)
      space.add_knob({"accumulators", {"1", "2", "4"},
                      "independent fp32 running sums per thread (rows go round-robin)"});
    space.add_knob({"cache_hint", {"none", "ldg", "streaming"}, "plain loads; __ldg; __ldcs"});
    if (sum)
      space.add_knob({"precision", {"fp32", "fp16_compute"},
                      "fp16_compute (unsafe): the running sums are __half"});
    else
      space.add_knob({"tail", {"safe", "dropped"},
                      "dropped (unsafe): the last partial group of columns is never written "
                      "(K = 4095 is odd, so always wrong)"});

    space.add_constraint({"cols_per_block=block exactly when variant=column_per_thread",
                          {"variant", "cols_per_block"},
                          [](const Config& c) {
                            return (c.at("variant") == "column_per_thread") ==
                                   (c.at("cols_per_block") == "block");
                          }});
    space.add_constraint({"row_splits > 1 exactly when variant=two_kernel",
                          {"variant", "row_splits"},
                          [](const Config& c) {
                            return (c.at("variant") == "two_kernel") == (c.at("row_splits") != "1");
                          }});
    if (sum)
      space.add_constraint({"accumulators <= unroll (each accumulator takes whole rows of a pass)",
                            {"unroll", "accumulators"},
                            [](const Config& c) {
                              return c.integer("accumulators") <= c.integer("unroll");
                            }});
    return space;
  }

  Candidate generate(const TaskSpec& task, const Config& given) const override {
    const ReductionTask& t = task_of(task);
    const Config config = checked_config(space(task), given);
    const bool arg = is_arg(t.op);

    const auto& shape = task.inputs.at(0).shape;
    KBRL_CHECK_INPUT(shape.size() == 3, "task {}: expected x:[B,R,K]", task.id);
    const int64_t B = shape[0], R = shape[1], K = shape[2];
    const int64_t block = config.integer("block");
    const std::string variant = config.at("variant");
    const int64_t cols = variant == "column_per_thread" ? block : config.integer("cols_per_block");
    const int64_t slices = block / cols;
    const int64_t splits = config.integer("row_splits");
    const int64_t col_blocks = (K + cols - 1) / cols;
    KBRL_CHECK_INPUT(col_blocks <= 2147483647 && B <= 65535, "task {}: grid too large", task.id);
    const float scale = t.mean ? static_cast<float>(1.0 / static_cast<double>(R)) : 1.0f;

    Candidate candidate;
    candidate.task_id = task.id;
    candidate.source = source_of(t, config);

    Launch main;
    main.kernel = "kbrl_reduce";
    main.block = {static_cast<uint32_t>(cols), static_cast<uint32_t>(slices), 1};
    if (variant != "column_per_thread")
      main.shared_bytes = static_cast<uint32_t>(block * (arg ? 8 : 4));
    main.args = {KernelArg{ArgKind::input, 0}};
    if (variant == "two_kernel") {
      main.grid = {static_cast<uint32_t>(col_blocks), static_cast<uint32_t>(splits),
                   static_cast<uint32_t>(B)};
      candidate.scratch.push_back({"part_value", B * splits * K * 4});
      main.args.push_back(KernelArg{ArgKind::scratch, 0});
      if (arg) {
        candidate.scratch.push_back({"part_index", B * splits * K * 4});
        main.args.push_back(KernelArg{ArgKind::scratch, 1});
      }
      main.args.push_back(i64_arg(R));
      main.args.push_back(i64_arg(K));
      candidate.launches.push_back(std::move(main));

      Launch combine;
      combine.kernel = "kbrl_reduce_combine";
      const int64_t n = B * K;
      combine.block = {256, 1, 1};
      combine.grid = {static_cast<uint32_t>((n + 255) / 256), 1, 1};
      combine.args = {KernelArg{ArgKind::scratch, 0}};
      if (arg) combine.args.push_back(KernelArg{ArgKind::scratch, 1});
      combine.args.push_back(KernelArg{ArgKind::output, 0});
      combine.args.push_back(i64_arg(K));
      combine.args.push_back(i64_arg(n));
      combine.args.push_back(i64_arg(splits));
      if (!arg) combine.args.push_back(f32_arg(scale));
      candidate.launches.push_back(std::move(combine));
    } else {
      main.grid = {static_cast<uint32_t>(col_blocks), static_cast<uint32_t>(B), 1};
      main.args.push_back(KernelArg{ArgKind::output, 0});
      main.args.push_back(i64_arg(R));
      main.args.push_back(i64_arg(K));
      if (!arg) main.args.push_back(f32_arg(scale));
      candidate.launches.push_back(std::move(main));
    }
    return candidate;
  }

  Config expert(const TaskSpec& task) const override {
    const ReductionTask& t = task_of(task);
    // A warp-wide group of 32 columns (128-byte rows) per block, 8 row slices combined in shared
    // memory, 4 rows in flight per thread (4 fp32 sums for sum/mean), read-once data evicted first.
    // 128 x 128 blocks at KernelBench scale: enough parallelism without a second launch.
    Config c{{"variant", "split_rows"}, {"block", "256"}, {"cols_per_block", "32"},
             {"row_splits", "1"},       {"unroll", "4"}};
    if (is_sum(t.op)) c.set("accumulators", "4");
    c.set("cache_hint", "streaming");
    if (is_sum(t.op))
      c.set("precision", "fp32");
    else
      c.set("tail", "safe");
    return c;
  }
};

}  // namespace

const Generator& reduction_generator() {
  static const ReductionGenerator generator;
  return generator;
}

}  // namespace kbrl
