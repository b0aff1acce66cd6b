#include "pooling.h"

#include <algorithm>
#include <array>
#include <string>

#include <kbrl/error.h>

#include "cuda_text.h"
#include "device_snippets.h"
#include "family_common.h"

namespace kbrl {
namespace {

constexpr std::string_view kFile = "pooling.cuh";  // the device code

/// One task's pooling: the window is the same along every spatial dimension.
struct PoolOp {
  int task_id;
  int nd;        // spatial dimensions
  bool is_max;   // max pooling; average pooling otherwise
  int kernel;
  int stride;
  int padding;
  int dilation;
  int tile_w;    // smem_tile's tile width in outputs (2-d and 3-d; 1-d uses block * items)
  bool row_taps; // smem_tile stages one row tap at a time (windows that do not overlap along h)
};

constexpr PoolOp kOps[] = {
    {41, 1, true, 8, 1, 4, 3, 0, false},     {42, 2, true, 4, 1, 1, 1, 128, false},
    {43, 3, true, 3, 2, 1, 3, 64, false},    {44, 1, false, 8, 1, 4, 1, 0, false},
    {45, 2, false, 11, 11, 0, 1, 32, true},  {46, 3, false, 3, 2, 1, 1, 64, false},
};

/// The most shared memory smem_tile may stage (one depth tap's region).
constexpr int64_t kMaxRegionBytes = 128 * 1024;

const PoolOp* find_op(int task_id) { return find_entry(kOps, &PoolOp::task_id, task_id); }

const PoolOp& op_of(const TaskSpec& task) {
  const PoolOp* op = find_op(task.id);
  check_covered(op != nullptr, "pooling", task);
  const size_t rank = static_cast<size_t>(op->nd) + 2;
  KBRL_CHECK_INPUT(task.inputs.size() == 1 && task.inputs[0].shape.size() == rank &&
                       task.outputs.size() == 1 && task.outputs[0].shape.size() == rank,
                   "task {}: the pooling generator expects y = pool(x) over a {}-d x", task.id,
                   rank);
  return *op;
}

/// The window along each of (d, h, w): dimensions the task does not have get a window of 1.
struct Axis {
  int k = 1, s = 1, p = 0, d = 1;
};

Axis axis(const PoolOp& op, int which) {  // which: 0 = d, 1 = h, 2 = w
  if (which < 3 - op.nd) return {};
  return {op.kernel, op.stride, op.padding, op.is_max ? op.dilation : 1};
}

/// smem_tile's tile: TW x TH outputs, and the staged region of one depth tap.
struct Tile {
  int64_t tw = 0, th = 0, tw_log2 = 0;
  int64_t region_h = 0, region_w = 0;
  int64_t bytes() const { return region_h * region_w * 4; }
};

Tile tile_of(const PoolOp& op, int64_t block, int64_t items) {
  Tile t;
  t.tw = op.nd == 1 ? block * items : std::min<int64_t>(op.tile_w, block * items);
  t.th = block * items / t.tw;
  while ((int64_t{1} << t.tw_log2) < t.tw) ++t.tw_log2;
  const Axis h = axis(op, 1), w = axis(op, 2);
  t.region_h = op.row_taps ? t.th : (t.th - 1) * h.s + (h.k - 1) * h.d + 1;
  t.region_w = (t.tw - 1) * w.s + (w.k - 1) * w.d + 1;
  return t;
}

/// The spatial extents as (d, h, w), 1 for dimensions the task does not have.
std::array<int64_t, 3> dhw(const std::vector<int64_t>& shape) {
  std::array<int64_t, 3> r = {1, 1, 1};
  const size_t nd = shape.size() - 2;
  for (size_t i = 0; i < nd; ++i) r[3 - nd + i] = shape[2 + i];
  return r;
}

/// The window's constants, the accumulator, the padding value and divisor, and kbrl_div.
std::string prelude(const PoolOp& op, bool half, bool fast) {
  std::string s = half ? cuda_text::section(kFile, "fp16_include") : std::string();
  s += cuda_text::section(kFile, "neg_inf");
  for (int a = 0; a < 3; ++a) {
    const Axis x = axis(op, a);
    s += cuda_text::fill(kFile, "axis",
                         {{"A", a == 0 ? "D" : a == 1 ? "H" : "W"}, {"K", std::to_string(x.k)},
                          {"S", std::to_string(x.s)}, {"P", std::to_string(x.p)},
                          {"L", std::to_string(x.d)}});
  }
  const char* acc = half      ? (op.is_max ? "max_fp16" : "avg_fp16")
                    : op.is_max ? "max_fp32"
                    : fast      ? "avg_fp32_fast"
                                : "avg_fp32";
  s += cuda_text::section(kFile, acc);
  // The value padding stands for in a staged region (the reduction's identity), and the divisor.
  s += cuda_text::section(kFile, op.is_max ? "max_divisor" : "avg_divisor");
  s += cuda_text::section(kFile, "index_div");
  return s;
}

std::string direct_kernel(const PoolOp& op, int64_t items, const std::string& hint,
                          bool safe_tail) {
  std::string s = cuda_text::fill(kFile, "items", {{"ITEMS", std::to_string(items)}});
  s += cuda_text::section(kFile, "direct_head");
  if (op.nd >= 2) s += cuda_text::section(kFile, "direct_unflatten_h");
  if (op.nd >= 3) s += cuda_text::section(kFile, "direct_unflatten_d");
  s += cuda_text::fill(
      kFile, "direct_body",
      {{"STORE", store_expr(hint, "y + base + (unsigned long long)k * blockDim.x + threadIdx.x", "r[k]")}});
  if (safe_tail)
    s += cuda_text::fill(kFile, "direct_close_safe",
                         {{"STORE", store_expr(hint, "y + e", "pool_one(x, e, ID, IH, IW, OD, OH, OW)")}});
  else
    s += cuda_text::section(kFile, "direct_close_dropped");
  return s;
}

std::string tile_kernel(const PoolOp& op, int64_t items, const std::string& hint,
                        bool safe_tail) {
  std::string s = cuda_text::fill(kFile, "items", {{"ITEMS", std::to_string(items)}});
  s += cuda_text::section(kFile, op.row_taps ? "tile_comment_rows" : "tile_comment_region");
  s += cuda_text::section(kFile, "tile_head");
  s += cuda_text::section(kFile, op.row_taps ? "tile_rh_rows" : "tile_rh_region");
  s += cuda_text::section(kFile, "tile_loop");
  if (!safe_tail) s += cuda_text::section(kFile, "tile_skip_partial");
  s += cuda_text::section(kFile, "tile_accumulators");
  s += cuda_text::section(kFile, op.row_taps ? "tile_stage_rows" : "tile_stage_region");
  s += cuda_text::fill(kFile, "tile_store",
                       {{"STORE", store_expr(hint, "y + ((plane * OD + od) * OH + oh) * OW + ow",
                                             "acc_finish(acc[k], pool_divisor(od, oh, ow, ID, IH, IW))")}});
  return s;
}

std::string source_of(const TaskSpec& task, const PoolOp& op, const Config& config) {
  const bool tile = config.at("variant") == "smem_tile";
  const int64_t items = config.integer("items_per_thread");
  const std::string hint = config.at("cache_hint");
  const bool half = config.at("precision") == "fp16_compute";
  const bool fast = config.at("fast_math") == "on";
  const bool safe_tail = config.at("tail") == "safe";
  std::string s = cuda_text::fill(
      kFile, "header",
      {{"TASK", std::to_string(task.id)}, {"NAME", task.name},
       {"KIND", op.is_max ? "max" : "average"}, {"ND", std::to_string(op.nd)},
       {"KERNEL", std::to_string(op.kernel)}, {"STRIDE", std::to_string(op.stride)},
       {"PADDING", std::to_string(op.padding)},
       {"DILATION", std::to_string(op.is_max ? op.dilation : 1)},
       {"VARIANT", config.at("variant")}, {"ITEMS", std::to_string(items)}, {"HINT", hint},
       {"PRECISION", config.at("precision")}, {"FAST_MATH", config.at("fast_math")},
       {"TAIL", config.at("tail")}});
  s += prelude(op, half, fast);
  s += tile ? tile_kernel(op, items, hint, safe_tail) : direct_kernel(op, items, hint, safe_tail);
  return s;
}

class PoolingGenerator final : public Generator {
 public:
  std::string_view name() const override { return "pooling"; }
  bool covers(int task_id) const override { return find_op(task_id) != nullptr; }

  KnobSpace space(const TaskSpec& task) const override {
    const PoolOp& op = op_of(task);
    KnobSpace space;
    space
        .add_knob({"variant", {"direct", "smem_tile"},
                   "direct: a flat grid-stride over the outputs, the window read from global memory "
                   "(reuse through L1); smem_tile: a block stages its tile's input region in shared "
                   "memory for each depth tap and reduces from there"})
        .add_knob({"block", {"128", "256", "512"}, "threads per block"})
        .add_knob({"items_per_thread", {"1", "2", "4"},
                   "outputs per thread, block-strided along the innermost dimension"})
        .add_knob({"grid", {"exact", "waves"},
                   "exact: one tile per block; waves: at most two waves of resident threads of an "
                   "H100 (132 SMs), grid-stride over the tiles"})
        .add_knob({"cache_hint", {"none", "streaming"},
                   "streaming: outputs stored with __stcs (evict first)"})
        .add_knob({"precision", {"fp32", "fp16_compute"},
                   "fp16_compute (unsafe): the max / the sum is taken on __half values"})
        .add_knob({"fast_math", {"off", "on"},
                   "on (unsafe): __fdividef for the division by the window size and "
                   "--use_fast_math"})
        .add_knob({"tail", {"safe", "dropped"},
                   "dropped (unsafe): a tile partly outside the output is never written"});
    const PoolOp* opp = &op;
    space.add_constraint({"smem_tile's staged region (one depth tap of the tile's input) is at most "
                          "128 KiB",
                          {"variant", "block", "items_per_thread"},
                          [opp](const Config& c) {
                            if (c.at("variant") != "smem_tile") return true;
                            return tile_of(*opp, c.integer("block"), c.integer("items_per_thread"))
                                       .bytes() <= kMaxRegionBytes;
                          }});
    if (op.is_max) {
      space.add_constraint({"fast_math=off: max pooling has no arithmetic for fast-math to "
                            "approximate",
                            {"fast_math"},
                            [](const Config& c) { return c.at("fast_math") == "off"; }});
    } else {
      space.add_constraint(fast_math_needs_fp32());
    }
    return space;
  }

  Candidate generate(const TaskSpec& task, const Config& given) const override {
    const PoolOp& op = op_of(task);
    const Config config = checked_config(space(task), given);

    const int64_t block = config.integer("block");
    const int64_t items = config.integer("items_per_thread");
    const bool tile = config.at("variant") == "smem_tile";
    const auto in = dhw(task.inputs[0].shape);
    const auto out = dhw(task.outputs[0].shape);
    const int64_t planes = task.inputs[0].shape[0] * task.inputs[0].shape[1];

    Launch launch;
    launch.block = {static_cast<uint32_t>(block), 1, 1};
    launch.args = {KernelArg{ArgKind::input, 0}, KernelArg{ArgKind::output, 0}, i64_arg(planes),
                   i64_arg(in[0]),  i64_arg(in[1]),  i64_arg(in[2]),
                   i64_arg(out[0]), i64_arg(out[1]), i64_arg(out[2])};
    int64_t grid = 0;
    if (tile) {
      const Tile t = tile_of(op, block, items);
      const int64_t tiles_w = (out[2] + t.tw - 1) / t.tw;
      const int64_t tiles_h = (out[1] + t.th - 1) / t.th;
      grid = planes * out[0] * tiles_h * tiles_w;
      launch.kernel = "kbrl_pool_tile";
      launch.shared_bytes = static_cast<uint32_t>(t.bytes());
      launch.args.push_back(i64_arg(t.tw_log2));
    } else {
      const int64_t total = task.outputs[0].numel();
      const int64_t per_block = block * items;
      grid = (total + per_block - 1) / per_block;
      launch.kernel = "kbrl_pool";
    }
    grid = std::max<int64_t>(1, grid);
    if (config.at("grid") == "waves") grid = std::min(grid, kTwoWaveThreads / block);
    grid = std::min<int64_t>(grid, 2147483647);  // the kernels grid-stride over what is left

    Candidate candidate;
    candidate.task_id = task.id;
    candidate.source = source_of(task, op, config);
    launch.grid = {static_cast<uint32_t>(grid), 1, 1};
    candidate.launches.push_back(std::move(launch));
    add_fast_math_option(candidate, config);
    return candidate;
  }

  Config expert(const TaskSpec& task) const override {
    // Stage each tile's input region in shared memory (coalesced loads, every input read from
    // DRAM about once; the overlapping windows of 41, 42, 44 and 46 and the strided ones of 43
    // and 45 are read from shared memory, without the strided or misaligned global loads of the
    // direct variant), 256 threads with two outputs each (a 512-output tile), one tile per block,
    // evict-first stores, nothing unsafe.
    op_of(task);
    return Config{{"variant", "smem_tile"},
                  {"block", "256"},
                  {"items_per_thread", "2"},
                  {"grid", "exact"},
                  {"cache_hint", "streaming"},
                  {"precision", "fp32"},
                  {"fast_math", "off"},
                  {"tail", "safe"}};
  }
};

}  // namespace

const Generator& pooling_generator() {
  static const PoolingGenerator generator;
  return generator;
}

}  // namespace kbrl
