#include "attention.h"

#include <algorithm>
#include <cmath>
#include <string>

#include <kbrl/error.h>

#include "cuda_text.h"
#include "device_snippets.h"
#include "family_common.h"

namespace kbrl {
namespace {

constexpr int kTaskId = 97;
constexpr int kThreadTile = 8;        // rows and columns of a thread's register tile
constexpr int kSoftmaxBlock = 256;    // threads of a softmax block

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
  std::string s = cuda_text::fill("attention.cuh", "header",
                                  {{"TILE_M", c.at("tile_m")},
                                   {"TILE_N", c.at("tile_n")},
                                   {"TILE_K", c.at("tile_k")},
                                   {"STAGES", c.at("stages")},
                                   {"PRECISION", c.at("precision")},
                                   {"FAST_MATH", c.at("fast_math")}});
  if (half) s += cuda_text::section("attention.cuh", "fp16_compute_note");
  if (fast) s += cuda_text::section("attention.cuh", "fast_math_note");
  s += fmt::format(
      "#define KBRL_HALF {}\n#define KBRL_FAST {}\n#define KBRL_STAGES {}\n"
      "constexpr int kBM = {};\nconstexpr int kBN = {};\nconstexpr int kBK = {};\n"
      "constexpr int kStages = {};\nconstexpr int kTM = {};\nconstexpr int kTN = {};\n",
      half ? 1 : 0, fast ? 1 : 0, c.at("stages"), c.at("tile_m"), c.at("tile_n"), c.at("tile_k"),
      c.at("stages"), kThreadTile, kThreadTile);
  // The softmax's math (intrinsics only in fast_math units: the audit reads the source's text).
  const FloatMath math = fast ? FloatMath::fast : FloatMath::exact;
  s += k_exp_helper(math, "d") + k_div_helper(math);
  for (const char* part : {"prelude", "gemm", "softmax"})
    s += cuda_text::section("attention.cuh", part);
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
