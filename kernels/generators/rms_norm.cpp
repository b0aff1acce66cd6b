#include "rms_norm.h"

#include <algorithm>
#include <string>

#include <kbrl/error.h>

#include "cuda_text.h"
#include "family_common.h"
#include "norm_internal.h"

namespace kbrl::norm_detail {
namespace {

constexpr std::string_view kCuda = "rms_norm.cuh";

/// The unit: its header comment, the configuration's #defines, then the kernel with the unroll
/// knob in its two_pass loops.
std::string rms_norm_source(const Config& c) {
  const bool registers = c.at("variant") == "registers";
  std::string s = cuda_text::section(kCuda, "unit_header");
  // registers with vec=2 holds 128 values per thread: at most 256 threads per block.
  const int max_threads = registers && c.integer("vec") == 2 ? 256 : 512;
  s += fmt::format(
      "// variant={} unroll={}\n#define KBRL_REGISTERS {}\n#define KBRL_VEC {}\n"
      "#define KBRL_MAX_THREADS {}\n",
      c.at("variant"), c.at("unroll"), registers ? 1 : 0, c.at("vec"), max_threads);
  s += common_defines(c);
  s += fmt::format("constexpr int kC = {};\n", kChannels);
  s += cuda_text::fill(kCuda, "kernel", {{"UNROLL", c.at("unroll")}});
  return s;
}

}  // namespace

KnobSpace rms_norm_space() {
  KnobSpace space;
  space.add_knob({"variant", {"registers", "two_pass"},
                  "registers: the 64 channel values stay in registers between the sum of squares "
                  "and the normalizing pass (x read once); two_pass: x read again"})
      .add_knob({"block", {"128", "256", "512"}, "threads per block"})
      .add_knob({"vec", {"1", "2", "4"},
                 "consecutive H*W positions per thread (float2/float4 accesses when aligned)"})
      .add_knob({"unroll", {"8", "64"},
                 "channels loaded before any is used (two_pass); registers holds all 64"});
  add_precision_knobs(space);
  space.add_constraint({"variant=registers requires vec <= 2 and unroll=64 (64 * vec registers)",
                        {"variant", "vec", "unroll"},
                        [](const Config& c) {
                          return c.at("variant") == "two_pass" ||
                                 (c.integer("vec") <= 2 && c.at("unroll") == "64");
                        }});
  space.add_constraint({"variant=registers with vec=2 requires block <= 256 (128 values held per "
                        "thread)",
                        {"variant", "block", "vec"},
                        [](const Config& c) {
                          return c.at("variant") == "two_pass" || c.integer("vec") == 1 ||
                                 c.integer("block") <= 256;
                        }});
  space.add_constraint(fast_math_needs_fp32());
  return space;
}

Candidate rms_norm_candidate(const TaskSpec& task, const Config& c) {
  const auto& shape = task.inputs[0].shape;
  KBRL_CHECK_INPUT(shape.size() == 4 && shape[1] == kChannels,
                   "task 36: expected x:[N,{},H,W]", kChannels);
  const int64_t n = shape[0], hw = shape[2] * shape[3];
  const int64_t block = c.integer("block"), vec = c.integer("vec");
  const int64_t threads = n * ((hw + vec - 1) / vec);
  const int64_t grid = std::min((threads + block - 1) / block, kMaxGrid);
  Candidate cand;
  cand.task_id = task.id;
  cand.source = rms_norm_source(c);
  Launch l;
  l.kernel = "kbrl_rms_norm";
  l.grid = {static_cast<uint32_t>(grid), 1, 1};
  l.block = {static_cast<uint32_t>(block), 1, 1};
  l.args = {KernelArg{ArgKind::input, 0}, KernelArg{ArgKind::output, 0}, i64_arg(n), i64_arg(hw),
            f32_arg(kEps)};
  cand.launches.push_back(std::move(l));
  add_fast_math_option(cand, c);
  return cand;
}

Config rms_norm_expert() {
  // x read once: the 64 channel values of a position stay in registers; consecutive positions
  // per warp make every channel's access one 128-byte line.
  return Config{{"variant", "registers"}, {"block", "256"},         {"vec", "1"},
                {"unroll", "64"},         {"cache_hint", "streaming"}, {"precision", "fp32"},
                {"fast_math", "off"}};
}

}  // namespace kbrl::norm_detail
