#pragma once
// The scaffolded action space (docs/design.md): an action that is only the BODY of the forward kernel.
// The scaffold wraps it in a prelude holding the task's shapes as constexpr constants and a fixed
// kernel signature, and gives it a one-launch plan.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <reference/task.h>

#include "candidate.h"

namespace kbrl {

/// The name of the scaffold's kernel.
inline constexpr std::string_view kScaffoldKernel = "kbrl_forward";
/// The default grid is capped at the hardware's grid.x limit (2^31 - 1) and nothing lower, so a
/// one-element-per-thread body (`if (i < n)`) stays correct at every KernelBench shape. Bodies
/// written with KBRL_GRID_STRIDE_LOOP are correct under any grid, including an explicit small one.
inline constexpr uint32_t kScaffoldMaxGrid = 2147483647u;

struct ScaffoldOptions {
  uint32_t block = 256;
  /// Default: min(cdiv(numel(first output), block), kScaffoldMaxGrid).
  std::optional<uint32_t> grid;
  uint32_t shared_bytes = 0;
  /// Device code placed between the prelude and the kernel (helper __device__ functions).
  std::string helpers;
  std::vector<std::string> options;  // compile options (allowed list: harness/compile/compile.h)
  /// When set, `#line` directives map the helpers and the body back to the lines of this file, so
  /// NVRTC's messages name the user's file and line. 0 means no directives.
  std::string file_name;
  int helpers_first_line = 0;
  int body_first_line = 0;
};

/// The C identifier of a tensor's name: every character outside [A-Za-z0-9_] becomes '_'
/// ("conv.weight" -> "conv_weight").
std::string scaffold_identifier(std::string_view name);

/// The prelude alone: for every input, parameter and output `t`,
///   constexpr long long t_numel = ...; constexpr int t_dim = ...; constexpr long long t_size0 = ...;
/// and the KBRL_GRID_STRIDE_LOOP(i, n) macro.
std::string scaffold_prelude(const TaskSpec& task);

/// The kernel's signature: `extern "C" __global__ void kbrl_forward(...)` with the inputs, the
/// parameters (`const float* __restrict__`; int64 tensors `const long long*`, bool `const bool*`),
/// the outputs (the same types without const), then the task's scalars as `float`.
std::string scaffold_signature(const TaskSpec& task);

/// A complete candidate: prelude, helpers, signature, `{ body }`, and one launch of kbrl_forward
/// whose arguments follow the signature. Throws InputError for a zero block or grid, or a block of
/// more than 1024 threads.
Candidate scaffold(const TaskSpec& task, std::string_view body, const ScaffoldOptions& options = {});

}  // namespace kbrl
