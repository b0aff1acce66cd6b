#include "candidate.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <kbrl/error.h>

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

// ---- the JSON form ----

namespace {

bool has_index(ArgKind kind) {
  return kind != ArgKind::f32 && kind != ArgKind::i32 && kind != ArgKind::i64;
}

}  // namespace

std::string_view to_string(ArgKind kind) { return enum_name(kind); }
ArgKind parse_arg_kind(std::string_view text) { return parse_enum<ArgKind>(text); }

void to_json(nlohmann::json& j, const KernelArg& arg) {
  j = {{"kind", to_string(arg.kind)}};
  if (has_index(arg.kind)) {
    j["index"] = arg.index;
  } else if (arg.kind == ArgKind::f32) {
    j["value"] = arg.value;
  } else {
    j["value"] = arg.ivalue;
  }
}

void from_json(const nlohmann::json& j, KernelArg& arg) {
  arg = KernelArg{};
  arg.kind = parse_arg_kind(j.at("kind").get<std::string>());
  if (has_index(arg.kind)) {
    arg.index = j.at("index").get<int>();
  } else if (arg.kind == ArgKind::f32) {
    arg.value = j.at("value").get<double>();
  } else {
    arg.ivalue = j.at("value").get<int64_t>();
  }
}

void to_json(nlohmann::json& j, const Dim3& dim) { j = {dim.x, dim.y, dim.z}; }

void from_json(const nlohmann::json& j, Dim3& dim) {
  KBRL_CHECK_INPUT(j.is_array() && j.size() == 3, "a Dim3 is [x, y, z], got {}", j.dump());
  dim = {j[0].get<uint32_t>(), j[1].get<uint32_t>(), j[2].get<uint32_t>()};
}

void to_json(nlohmann::json& j, const Launch& launch) {
  j = {{"kernel", launch.kernel},
       {"grid", launch.grid},
       {"block", launch.block},
       {"shared_bytes", launch.shared_bytes},
       {"args", launch.args}};
}

void from_json(const nlohmann::json& j, Launch& launch) {
  launch.kernel = j.at("kernel").get<std::string>();
  launch.grid = j.at("grid").get<Dim3>();
  launch.block = j.at("block").get<Dim3>();
  launch.shared_bytes = j.value("shared_bytes", uint32_t{0});
  launch.args = j.at("args").get<std::vector<KernelArg>>();
}

void to_json(nlohmann::json& j, const ScratchBuffer& scratch) {
  j = {{"name", scratch.name}, {"bytes", scratch.bytes}};
}

void from_json(const nlohmann::json& j, ScratchBuffer& scratch) {
  scratch.name = j.at("name").get<std::string>();
  scratch.bytes = j.at("bytes").get<int64_t>();
}

void to_json(nlohmann::json& j, const Candidate& candidate) {
  j = {{"task_id", candidate.task_id},
       {"source", candidate.source},
       {"launches", candidate.launches},
       {"scratch", candidate.scratch},
       {"options", candidate.options}};
}

void from_json(const nlohmann::json& j, Candidate& candidate) {
  candidate.task_id = j.at("task_id").get<int>();
  candidate.source = j.at("source").get<std::string>();
  candidate.launches = j.at("launches").get<std::vector<Launch>>();
  candidate.scratch = j.value("scratch", std::vector<ScratchBuffer>{});
  candidate.options = j.value("options", std::vector<std::string>{});
}

Candidate candidate_from_json(const nlohmann::json& j) {
  try {
    return j.get<Candidate>();
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("malformed candidate JSON: {}", e.what()));
  }
}

}  // namespace kbrl
