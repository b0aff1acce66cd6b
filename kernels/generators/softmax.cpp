#include "softmax.h"

#include <algorithm>
#include <string>
#include <string_view>

#include <kbrl/error.h>

#include "cuda_text.h"
#include "device_snippets.h"
#include "family_common.h"

namespace kbrl {
namespace {

/// The most floats the cached variant keeps per row (32 KiB of static shared memory).
constexpr int64_t kMaxCacheFloats = 8192;

bool is_log(int task_id) { return task_id == 24; }

void check_task(const TaskSpec& task) {
  check_covered(task.id == 23 || task.id == 24, "softmax", task);
  KBRL_CHECK_INPUT(task.inputs.size() == 1 && task.inputs[0].shape.size() == 2 &&
                       task.outputs.size() == 1 && task.outputs[0].shape == task.inputs[0].shape,
                   "task {}: the softmax generator expects y = f(x) over a 2-d x", task.id);
}

/// Text of softmax.cuh's section `name`.
const std::string& part(std::string_view name) { return cuda_text::section("softmax.cuh", name); }

std::string prelude(bool half, bool fast) {
  std::string s;
  FloatMath math = FloatMath::exact;
  if (half) {
    s += part("fp16_compute_note");
    math = FloatMath::half_exp;
  } else if (fast) {
    s += fast_math_note();
    math = FloatMath::fast;
  }
  s += k_exp_helper(math, "d") + k_log_helper(math) + k_div_helper(math);
  s += part("neg_inf");
  s += max_sum_state();
  s += part("merge_ops");
  s += block_reduce_helper(WarpStep::shuffle_loop);
  return s;
}

/// Where a loop's scalar part starts: after the float4 part (vec=4), or at 0.
std::string scalar_start(bool vec4) { return vec4 ? "4 * nv" : "0"; }

/// A read-only pass over the row running softmax.cuh's `body` (body_max, body_sum or
/// body_online) for each element, named `v`. With `fill`, the cached prefix of the row is stored
/// in shared memory.
std::string read_pass(bool vec4, bool fill, std::string_view body) {
  std::string s;
  if (vec4) {
    s += part("read_vec4_begin");
    if (fill) s += part("read_vec4_fill");
    s += cuda_text::fill("softmax.cuh", "read_vec4_body", {{"BODY", part(body)}});
  }
  s += cuda_text::fill("softmax.cuh", "read_scalar_begin", {{"FIRST", scalar_start(vec4)}});
  if (fill) s += part("read_scalar_fill");
  s += cuda_text::fill("softmax.cuh", "read_scalar_body", {{"BODY", part(body)}});
  return s;
}

/// The normalizing pass: y = f(x), f being softmax.cuh's `fn` (fn_softmax or fn_log_softmax),
/// with loads and stores under the cache hint.
std::string write_pass(bool vec4, bool cached, const std::string& hint, std::string_view fn) {
  auto f = [&](const std::string& v) { return cuda_text::fill("softmax.cuh", fn, {{"V", v}}); };
  std::string s;
  if (vec4) {
    s += part("write_vec4_begin");
    const std::string gl = load_expr(hint, "reinterpret_cast<const float4*>(in) + j");
    s += cuda_text::fill("softmax.cuh", cached ? "write_vec4_load_cached" : "write_vec4_load",
                         {{"LOAD", gl}});
    s += cuda_text::fill(
        "softmax.cuh", "write_vec4_end",
        {{"FX", f("q.x")}, {"FY", f("q.y")}, {"FZ", f("q.z")}, {"FW", f("q.w")},
         {"STORE", store_expr(hint, "reinterpret_cast<float4*>(out) + j", "q")}});
  }
  s += cuda_text::fill("softmax.cuh", "write_scalar_begin", {{"FIRST", scalar_start(vec4)}});
  s += cuda_text::fill("softmax.cuh", cached ? "write_scalar_load_cached" : "write_scalar_load",
                       {{"LOAD", load_expr(hint, "in + i")}});
  s += cuda_text::fill("softmax.cuh", "write_scalar_end",
                       {{"STORE", store_expr(hint, "out + i", f("v"))}});
  return s;
}

std::string source_of(const TaskSpec& task, const Config& config) {
  const std::string variant = config.at("variant");
  const bool vec4 = config.integer("vec") == 4;
  const std::string hint = config.at("cache_hint");
  const bool half = config.at("precision") == "fp16_compute";
  const bool fast = config.at("fast_math") == "on";
  const bool cached = variant == "block_per_row_cached";
  const bool three_pass = variant == "three_pass";
  const bool log = is_log(task.id);
  const int64_t cols = task.inputs[0].shape[1];

  std::string s = cuda_text::fill(
      "softmax.cuh", "header",
      {{"TASK", std::to_string(task.id)},
       {"NAME", task.name},
       {"FORMULA", part(log ? "formula_log_softmax" : "formula_softmax")},
       {"VARIANT", variant},
       {"VEC", config.at("vec")},
       {"CACHE_HINT", hint},
       {"PRECISION", config.at("precision")},
       {"FAST_MATH", config.at("fast_math")}});
  s += prelude(half, fast);
  if (cached)
    s += cuda_text::fill("softmax.cuh", "cache_size",
                         {{"CACHE_FLOATS", std::to_string(std::min(cols, kMaxCacheFloats))}});
  s += part("kernel_begin");
  s += part(three_pass ? "smem_float" : "smem_max_sum");
  if (cached) s += part("smem_cache");
  s += part("row_begin");
  if (vec4) s += part("row_aligned");
  if (three_pass) {
    s += part("three_pass_max") + read_pass(vec4, false, "body_max");
    s += part("three_pass_sum") + read_pass(vec4, false, "body_sum");
    s += part("three_pass_end");
  } else {
    s += part("online_begin") + read_pass(vec4, cached, "body_online");
    s += part("online_end");
  }
  s += part(log ? "normalize_log_softmax" : "normalize_softmax");
  s += write_pass(vec4, cached, hint, log ? "fn_log_softmax" : "fn_softmax");
  if (cached) s += part("cache_refill");
  s += part("kernel_end");
  return s;
}

class SoftmaxGenerator final : public Generator {
 public:
  std::string_view name() const override { return "softmax"; }
  bool covers(int task_id) const override { return task_id == 23 || task_id == 24; }

  KnobSpace space(const TaskSpec& task) const override {
    check_task(task);
    KnobSpace space;
    space
        .add_knob({"variant", {"two_pass", "three_pass", "block_per_row_cached"},
                   "two_pass: an online (max, sum) pass then the normalizing pass; three_pass: "
                   "max, sum, normalize; block_per_row_cached: two_pass keeping the row's first "
                   "min(row length, 8192) elements in shared memory for the second pass"})
        .add_knob({"block", {"128", "256", "512", "1024"}, "threads per block (one block per row)"})
        .add_knob({"vec", {"1", "4"},
                   "floats per access (float4 with a scalar tail when the row pointers are "
                   "16-byte aligned, else element by element)"})
        .add_knob({"grid", {"exact", "waves"},
                   "exact: one block per row; waves: at most two waves of resident blocks of an "
                   "H100 (132 SMs), grid-stride over the rows"})
        .add_knob({"cache_hint", {"none", "streaming"},
                   "streaming: the last read of x with __ldcs and y stored with __stcs"})
        .add_knob({"precision", {"fp32", "fp16_compute"},
                   "fp16_compute (unsafe): exp(x - max) evaluated in __half (sums stay fp32)"})
        .add_knob({"fast_math", {"off", "on"},
                   "on (unsafe): --use_fast_math and the __expf/__logf/__fdividef intrinsics"});
    space.add_constraint(fast_math_needs_fp32());
    return space;
  }

  Candidate generate(const TaskSpec& task, const Config& given) const override {
    check_task(task);
    const Config config = checked_config(space(task), given);

    const int64_t block = config.integer("block");
    const int64_t rows = task.inputs[0].shape[0];
    const int64_t cols = task.inputs[0].shape[1];
    int64_t grid = std::max<int64_t>(1, rows);
    if (config.at("grid") == "waves") grid = std::min(grid, kTwoWaveThreads / block);

    Candidate candidate;
    candidate.task_id = task.id;
    candidate.source = source_of(task, config);
    Launch launch;
    launch.kernel = "kbrl_softmax";
    launch.grid = {grid_dim(grid, task.id), 1, 1};
    launch.block = {static_cast<uint32_t>(block), 1, 1};
    launch.args = {KernelArg{ArgKind::input, 0}, KernelArg{ArgKind::output, 0}, i64_arg(rows),
                   i64_arg(cols)};
    candidate.launches.push_back(std::move(launch));
    add_fast_math_option(candidate, config);
    return candidate;
  }

  Config expert(const TaskSpec& task) const override {
    check_task(task);
    // One online pass then the normalizing pass (two reads of x, the fewest for a row that does
    // not fit on chip), 512 threads with float4 accesses, one block per row, evict-first hints on
    // the last read of x and on y, nothing unsafe.
    return Config{{"variant", "two_pass"}, {"block", "512"},          {"vec", "4"},
                  {"grid", "exact"},       {"cache_hint", "streaming"}, {"precision", "fp32"},
                  {"fast_math", "off"}};
  }
};

}  // namespace

const Generator& softmax_generator() {
  static const SoftmaxGenerator generator;
  return generator;
}

}  // namespace kbrl
