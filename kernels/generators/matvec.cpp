#include "matvec.h"

#include <string>

#include <kbrl/error.h>

#include "cuda_text.h"
#include "family_common.h"

namespace kbrl {
namespace {

/// y[M] = A[M,K] x[K]: every element of A read once (memory-bound).
std::string matvec_source(const Config& config) {
  const int64_t unroll = config.integer("unroll"), rows = config.integer("tile_m");
  const bool streaming = config.at("cache_hint") == "streaming";
  std::string s = cuda_text::fill("matvec.cuh", "header",
                                  {{"TILE_M", std::to_string(rows)},
                                   {"UNROLL", std::to_string(unroll)},
                                   {"CACHE_HINT", config.at("cache_hint")}});
  s += fmt::format("constexpr int ROWS = {}, UNROLL = {};\n", rows, unroll);
  s += cuda_text::section("matvec.cuh", streaming ? "load_a_streaming" : "load_a_plain");
  s += cuda_text::section("matvec.cuh", "kernel");
  return s;
}

}  // namespace

KnobSpace matvec_space() {
  KnobSpace space;
  space
      .add_knob({"variant", {"block_per_row", "warp_per_row"},
                 "block_per_row: a block reduces tile_m rows (warp sums, then across warps); "
                 "warp_per_row: each warp reduces its own tile_m rows"})
      .add_knob({"block", {"128", "256", "512"}, "threads per block"})
      .add_knob({"tile_m", {"1", "2", "4"},
                 "rows per block (block_per_row) or per warp (warp_per_row); each load of x "
                 "serves that many rows"})
      .add_knob({"vec", {"1", "4"},
                 "floats per access of A and x: 4 = float4 when 16-byte aligned (scalar "
                 "otherwise)"})
      .add_knob({"unroll", {"1", "2", "4"}, "independent loads in flight per row per thread"})
      .add_knob({"cache_hint", {"none", "streaming"},
                 "streaming: A (read once) with __ldcs; x is read through the read-only path"})
      .add_knob({"fast_math", {"off", "on"}, "on (unsafe): --use_fast_math"});
  return space;
}

Candidate matvec_generate(const TaskSpec& task, const Config& config) {
  check_covered(task.id == kMatvecTask, "gemm", task);
  KBRL_CHECK_INPUT(task.inputs.size() == 2 && task.inputs[0].shape.size() == 2 &&
                       task.inputs[1].shape.size() == 2 && task.inputs[1].shape[1] == 1 &&
                       task.inputs[1].shape[0] == task.inputs[0].shape[1],
                   "task 4: expects A[M,K] x B[K,1]");
  const int64_t m = task.inputs[0].shape[0], k = task.inputs[0].shape[1];
  const int64_t block = config.integer("block"), rows = config.integer("tile_m");
  const bool warp_mode = config.at("variant") == "warp_per_row";
  const int64_t per_block = warp_mode ? rows * (block / 32) : rows;
  const int64_t grid = (m + per_block - 1) / per_block;
  Candidate candidate;
  candidate.task_id = task.id;
  candidate.source = matvec_source(config);
  Launch launch;
  launch.kernel = "kbrl_gemv";
  launch.grid = {grid_dim(grid, task.id), 1, 1};
  launch.block = {static_cast<uint32_t>(block), 1, 1};
  launch.args = {KernelArg{ArgKind::input, 0},
                 KernelArg{ArgKind::input, 1},
                 KernelArg{ArgKind::output, 0},
                 i64_arg(m),
                 i64_arg(k),
                 i32_arg(warp_mode ? 1 : 0),
                 i32_arg(config.integer("vec") == 4 ? 1 : 0)};
  candidate.launches.push_back(std::move(launch));
  add_fast_math_option(candidate, config);
  return candidate;
}

Config matvec_expert() {
  // One block of 256 threads per 2 rows (each float4 of x serves both rows, halving x's L2
  // traffic), float4 loads, 4 independent loads in flight per row, A streamed (read once).
  return Config{{"variant", "block_per_row"}, {"block", "256"},  {"tile_m", "2"},
                {"vec", "4"},                 {"unroll", "4"},   {"cache_hint", "streaming"},
                {"fast_math", "off"}};
}

}  // namespace kbrl
