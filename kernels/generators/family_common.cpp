#include "family_common.h"

#include <kbrl/error.h>

namespace kbrl {

void check_covered(bool covered, std::string_view family, const TaskSpec& task) {
  KBRL_CHECK_INPUT(covered, "the {} generator does not cover task {} ({})", family, task.id,
                   task.name);
}

Config checked_config(const KnobSpace& space, const Config& given) {
  space.check(given);
  return space.with_overrides(given, {});
}

Constraint fast_math_needs_fp32() {
  return {"fast_math=on requires precision=fp32 (one unsafe precision knob at a time)",
          {"precision", "fast_math"},
          [](const Config& c) {
            return c.at("fast_math") == "off" || c.at("precision") == "fp32";
          }};
}

void add_fast_math_option(Candidate& candidate, const Config& config) {
  if (config.has("fast_math") && config.at("fast_math") == "on")
    candidate.options.push_back("--use_fast_math");
}

KernelArg i64_arg(int64_t v) { return KernelArg{ArgKind::i64, 0, 0.0, v}; }
KernelArg i32_arg(int64_t v) { return KernelArg{ArgKind::i32, 0, 0.0, v}; }
KernelArg f32_arg(double v) { return KernelArg{ArgKind::f32, 0, v, 0}; }

uint32_t grid_dim(int64_t blocks, int task_id) {
  KBRL_CHECK_INPUT(blocks >= 1 && blocks <= 2147483647,
                   "task {}: {} blocks exceed CUDA's grid limit", task_id, blocks);
  return static_cast<uint32_t>(blocks);
}

void replace_all(std::string& text, std::string_view what, std::string_view with) {
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + with.size()))
    text.replace(p, what.size(), with);
}

}  // namespace kbrl
