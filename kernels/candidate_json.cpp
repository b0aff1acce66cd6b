#include "candidate_json.h"

#include <nlohmann/json.hpp>

#include <kbrl/error.h>

namespace kbrl {
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
