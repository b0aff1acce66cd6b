#include "scan.h"

#include <algorithm>
#include <string>

#include <kbrl/error.h>

#include "cuda_text.h"
#include "family_common.h"

namespace kbrl {
namespace {

constexpr std::string_view kFile = "scan.cuh";  // the device code

struct ScanOp {
  int task_id;
  const char* math;  // for the source's comment
  bool product;      // cumprod; a sum otherwise
  bool reverse;      // suffix scan (from the end of the row)
  bool exclusive;    // y[i] excludes x[i]
  bool masked;       // x * mask, with a second (bool) input
};

constexpr ScanOp kOps[] = {
    {89, "y = cumsum(x, 1)", false, false, false, false},
    {90, "y = cumprod(x, 1)", true, false, false, false},
    {91, "y = cumsum(x.flip(1), 1).flip(1)", false, true, false, false},
    {92, "y = cat(0, cumsum(x[:, :-1], 1)): the exclusive cumsum", false, false, true, false},
    {93, "y = cumsum(x * mask, 1)", false, false, false, true},
};

const ScanOp* find_op(int task_id) { return find_entry(kOps, &ScanOp::task_id, task_id); }

const ScanOp& op_of(const TaskSpec& task) {
  const ScanOp* op = find_op(task.id);
  check_covered(op != nullptr, "scan", task);
  KBRL_CHECK_INPUT(task.inputs.size() == (op->masked ? 2u : 1u) &&
                       task.inputs[0].shape.size() == 2 && task.outputs.size() == 1 &&
                       task.outputs[0].shape == task.inputs[0].shape &&
                       (!op->masked || (task.inputs[1].shape == task.inputs[0].shape &&
                                        task.inputs[1].dtype == DType::b8)),
                   "task {}: the scan generator expects y = scan(x) along dim 1 of a 2-d x",
                   task.id);
  return *op;
}

const char* flag(bool b) { return b ? "true" : "false"; }

/// The value type, the operation, the configuration's constants, the accesses and the device
/// helpers.
std::string prelude(const ScanOp& op, const Config& config) {
  const bool half = config.at("precision") == "fp16_compute";
  const bool streaming = config.at("cache_hint") == "streaming";
  std::string s = cuda_text::section(kFile, half ? "fp16_types" : "fp32_types");
  s += cuda_text::section(kFile, half ? (op.product ? "fp16_product" : "fp16_sum")
                                      : (op.product ? "fp32_product" : "fp32_sum"));
  s += cuda_text::fill(kFile, "constants",
                       {{"ITEMS", config.at("items_per_thread")},
                        {"VEC4", flag(config.integer("vec") == 4)},
                        {"REVERSE", flag(op.reverse)},
                        {"EXCLUSIVE", flag(op.exclusive)},
                        {"SAFE_TAIL", flag(config.at("tail") == "safe")}});
  s += cuda_text::section(kFile, streaming ? "io_streaming" : "io_plain");
  s += cuda_text::section(kFile, op.masked ? "values_masked" : "values_plain");
  s += cuda_text::section(kFile, "helpers");
  return s;
}

/// The kernel, block_per_row or warp_per_row, with the signature and row pointers of the task.
std::string kernel(const ScanOp& op, const std::string& variant) {
  const std::string row_head = cuda_text::fill(
      kFile, "row_head",
      {{"MASK_ROW", cuda_text::section(kFile, op.masked ? "mask_row" : "mask_row_none")}});
  return cuda_text::fill(kFile, variant == "block_per_row" ? "block_kernel" : "warp_kernel",
                         {{"KERNEL_HEAD", cuda_text::section(kFile, op.masked ? "kernel_head_masked"
                                                                              : "kernel_head")},
                          {"ROW_HEAD", row_head}});
}

std::string source_of(const TaskSpec& task, const ScanOp& op, const Config& config) {
  std::string s = cuda_text::fill(
      kFile, "header",
      {{"TASK", std::to_string(task.id)}, {"NAME", task.name}, {"MATH", op.math},
       {"VARIANT", config.at("variant")}, {"ITEMS", config.at("items_per_thread")},
       {"VEC", config.at("vec")}, {"HINT", config.at("cache_hint")},
       {"PRECISION", config.at("precision")}, {"TAIL", config.at("tail")}});
  s += prelude(op, config);
  s += kernel(op, config.at("variant"));
  return s;
}

class ScanGenerator final : public Generator {
 public:
  std::string_view name() const override { return "scan"; }
  bool covers(int task_id) const override { return find_op(task_id) != nullptr; }

  KnobSpace space(const TaskSpec& task) const override {
    op_of(task);
    KnobSpace space;
    space
        .add_knob({"variant", {"block_per_row", "warp_per_row"},
                   "block_per_row: a block scans a row in chunks of block * items_per_thread (two "
                   "barriers per chunk); warp_per_row: a warp scans a row in chunks of "
                   "32 * items_per_thread (no barriers)"})
        .add_knob({"block", {"128", "256", "512", "1024"}, "threads per block"})
        .add_knob({"items_per_thread", {"4", "8", "16"},
                   "contiguous elements each thread scans in registers per chunk"})
        .add_knob({"vec", {"1", "4"},
                   "float4 (and 4-byte mask) accesses when the row pointers are aligned and the "
                   "thread's items lie inside the row; element by element otherwise"})
        .add_knob({"cache_hint", {"none", "streaming"},
                   "streaming: __ldcs loads and __stcs stores (each element is touched once)"})
        .add_knob({"precision", {"fp32", "fp16_compute"},
                   "fp16_compute (unsafe): the scan runs on __half values"})
        .add_knob({"tail", {"safe", "dropped"},
                   "dropped (unsafe): a row's last, partial chunk is never processed"});
    space.add_constraint({"precision=fp16_compute requires tail=safe (one unsafe knob at a time)",
                          {"precision", "tail"},
                          [](const Config& c) {
                            return c.at("precision") == "fp32" || c.at("tail") == "safe";
                          }});
    return space;
  }

  Candidate generate(const TaskSpec& task, const Config& given) const override {
    const ScanOp& op = op_of(task);
    const Config config = checked_config(space(task), given);

    const int64_t block = config.integer("block");
    const int64_t rows = task.inputs[0].shape[0];
    const int64_t length = task.inputs[0].shape[1];
    const int64_t rows_per_block = config.at("variant") == "block_per_row" ? 1 : block / 32;
    int64_t grid = std::max<int64_t>(1, (rows + rows_per_block - 1) / rows_per_block);
    grid = std::min<int64_t>(grid, 2147483647);  // the kernels grid-stride over the rows

    Candidate candidate;
    candidate.task_id = task.id;
    candidate.source = source_of(task, op, config);
    Launch launch;
    launch.kernel = "kbrl_scan";
    launch.grid = {static_cast<uint32_t>(grid), 1, 1};
    launch.block = {static_cast<uint32_t>(block), 1, 1};
    launch.args = {KernelArg{ArgKind::input, 0}};
    if (op.masked) launch.args.push_back(KernelArg{ArgKind::input, 1});
    launch.args.push_back(KernelArg{ArgKind::output, 0});
    launch.args.push_back(i64_arg(rows));
    launch.args.push_back(i64_arg(length));
    candidate.launches.push_back(std::move(launch));
    return candidate;
  }

  Config expert(const TaskSpec& task) const override {
    op_of(task);
    // One block of 256 threads per row, 8 contiguous elements per thread as two float4 (chunks of
    // 2048, 16 per row at KernelBench's scale, each with two barriers), evict-first loads and
    // stores (every element is read and written once), nothing unsafe.
    return Config{{"variant", "block_per_row"}, {"block", "256"},         {"items_per_thread", "8"},
                  {"vec", "4"},                 {"cache_hint", "streaming"}, {"precision", "fp32"},
                  {"tail", "safe"}};
  }
};

}  // namespace

const Generator& scan_generator() {
  static const ScanGenerator generator;
  return generator;
}

}  // namespace kbrl
