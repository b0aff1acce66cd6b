#pragma once
// Shared by the norm generator's two halves (norm.cpp: the planar tasks and the Generator;
// rms_norm.cpp: task 36): constants and the knobs and #defines both kinds of unit use.
#include <cstdint>
#include <string>

#include <kernels/generator.h>

namespace kbrl::norm_detail {

constexpr double kEps = 1e-5;          // every module's default eps, and task 36's
constexpr int64_t kChannels = 64;      // dim 1 of tasks 33-37 and 40 at both scales
constexpr int64_t kMaxGrid = 2147483647;

/// The cache_hint, precision and fast_math knobs (the last three of every norm space).
void add_precision_knobs(KnobSpace& space);

/// `#define KBRL_STREAM`, `KBRL_HALF` and `KBRL_FAST` with the knob values in comments, and the
/// cuda_fp16.h include under precision=fp16_compute.
std::string common_defines(const Config& c);

}  // namespace kbrl::norm_detail
