#pragma once
// JSON form of a Candidate (nlohmann_json), used by the rollout log and replay. Field names follow
// the C++ members; an argument is {"kind": "input", "index": 0} or {"kind": "f32", "value": 0.5};
// a Dim3 is [x, y, z]. A NaN or infinite f32 constant has no JSON form (it is written as null).
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "candidate.h"

namespace kbrl {

std::string_view to_string(ArgKind kind);
ArgKind parse_arg_kind(std::string_view text);  // throws InputError naming the legal kinds

void to_json(nlohmann::json& j, const KernelArg& arg);
void from_json(const nlohmann::json& j, KernelArg& arg);
void to_json(nlohmann::json& j, const Dim3& dim);
void from_json(const nlohmann::json& j, Dim3& dim);
void to_json(nlohmann::json& j, const Launch& launch);
void from_json(const nlohmann::json& j, Launch& launch);
void to_json(nlohmann::json& j, const ScratchBuffer& scratch);
void from_json(const nlohmann::json& j, ScratchBuffer& scratch);
void to_json(nlohmann::json& j, const Candidate& candidate);
void from_json(const nlohmann::json& j, Candidate& candidate);

/// from_json with every malformed document (missing field, wrong type, unknown kind) reported as
/// InputError instead of nlohmann's exceptions.
Candidate candidate_from_json(const nlohmann::json& j);

}  // namespace kbrl
