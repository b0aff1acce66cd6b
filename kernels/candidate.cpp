#include "candidate.h"

#include <fmt/format.h>

#include "expression.h"  // quote_input

namespace kbrl {

int arg_bytes(ArgKind kind) {
  switch (kind) {
    case ArgKind::input:
    case ArgKind::parameter:
    case ArgKind::output:
    case ArgKind::scratch:
    case ArgKind::i64: return 8;
    case ArgKind::task_scalar:
    case ArgKind::f32:
    case ArgKind::i32: return 4;
  }
  return 0;
}

std::optional<std::string> plan_limit_violation(const Candidate& candidate) {
  using namespace plan_limits;
  if (candidate.launches.size() > kMaxLaunches)
    return fmt::format("{} launches: a plan may have at most {}", candidate.launches.size(), kMaxLaunches);
  if (candidate.scratch.size() > kMaxScratchBuffers)
    return fmt::format("{} scratch buffers: a plan may have at most {}", candidate.scratch.size(),
                       kMaxScratchBuffers);
  int64_t scratch_total = 0;
  for (const ScratchBuffer& s : candidate.scratch) {
    if (s.bytes <= 0)
      return fmt::format("scratch '{}' has {} bytes: must be at least 1", quote_input(s.name, 40), s.bytes);
    if (s.bytes > kMaxScratchBytes - scratch_total)
      return fmt::format("scratch '{}' of {} bytes brings the scratch to more than {} bytes (8 GiB), the "
                         "most a plan may have", quote_input(s.name, 40), s.bytes, kMaxScratchBytes);
    scratch_total += s.bytes;
  }
  for (size_t i = 0; i < candidate.launches.size(); ++i) {
    const Launch& l = candidate.launches[i];
    const std::string which = fmt::format("launch {} ('{}')", i, quote_input(l.kernel, 40));
    if (l.args.size() > kMaxArgsPerLaunch)
      return fmt::format("{} has {} arguments: at most {}", which, l.args.size(), kMaxArgsPerLaunch);
    const uint32_t grid[3] = {l.grid.x, l.grid.y, l.grid.z};
    const uint32_t block[3] = {l.block.x, l.block.y, l.block.z};
    for (int axis = 0; axis < 3; ++axis) {
      const char name = "xyz"[axis];
      if (grid[axis] < 1 || grid[axis] > kMaxGrid[axis])
        return fmt::format("{}: grid.{} is {}: CUDA allows 1 to {}", which, name, grid[axis], kMaxGrid[axis]);
      if (block[axis] < 1 || block[axis] > kMaxBlock[axis])
        return fmt::format("{}: block.{} is {}: CUDA allows 1 to {}", which, name, block[axis],
                           kMaxBlock[axis]);
    }
    const int64_t threads = int64_t{l.block.x} * l.block.y * l.block.z;
    if (threads > kMaxBlockThreads)
      return fmt::format("{}: block has {} threads: CUDA allows at most {}", which, threads, kMaxBlockThreads);
    if (l.shared_bytes > kMaxSharedBytes)
      return fmt::format("{}: {} bytes of dynamic shared memory: at most {} (227 KiB)", which,
                         l.shared_bytes, kMaxSharedBytes);
  }
  return std::nullopt;
}

}  // namespace kbrl
