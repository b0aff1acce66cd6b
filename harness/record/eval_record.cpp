#include "eval_record.h"

#include <ctime>

#include <nlohmann/json.hpp>

#include <kbrl/error.h>
#include <kernels/candidate.h>

#include <harness/stage_values_json.h>  // a trial's JSON; non-finite numbers as strings

#include "json_text.h"

#ifndef KBRL_VERSION
#define KBRL_VERSION "unknown"
#endif

namespace kbrl {
namespace {

using Json = nlohmann::json;
namespace f = record_field;

template <typename T>
Json optional_json(const std::optional<T>& value) {
  return value ? Json(*value) : Json(nullptr);
}

template <typename T>
std::optional<T> get_optional(const Json& j, const char* field) {
  const auto it = j.find(field);
  if (it == j.end() || it->is_null()) return std::nullopt;
  return it->template get<T>();
}

}  // namespace

void to_json(Json& j, const RuntimeStats& s) {
  j = {{f::n, s.n},
       {f::median_ms, json_number(s.median_ms)},
       {f::mean_ms, json_number(s.mean_ms)},
       {f::std_ms, json_number(s.std_ms)},
       {f::min_ms, json_number(s.min_ms)},
       {f::max_ms, json_number(s.max_ms)},
       {f::q1_ms, json_number(s.q1_ms)},
       {f::q3_ms, json_number(s.q3_ms)},
       {f::iqr_ms, json_number(s.iqr_ms)}};
}

void from_json(const Json& j, RuntimeStats& s) {
  s.n = j.at(f::n).get<int64_t>();
  s.median_ms = json_get_number(j, f::median_ms);
  s.mean_ms = json_get_number(j, f::mean_ms);
  s.std_ms = json_get_number(j, f::std_ms);
  s.min_ms = json_get_number(j, f::min_ms);
  s.max_ms = json_get_number(j, f::max_ms);
  s.q1_ms = json_get_number(j, f::q1_ms);
  s.q3_ms = json_get_number(j, f::q3_ms);
  s.iqr_ms = json_get_number(j, f::iqr_ms);
}

void to_json(Json& j, const ActionInfo& a) {
  j = {{f::kind, to_string(a.kind)},
       {f::code, a.code},
       {f::token_count, a.token_count},
       {f::prompt_version, a.prompt_version}};
}

void from_json(const Json& j, ActionInfo& a) {
  a.kind = parse_action_kind(j.at(f::kind).get<std::string>());
  a.code = j.at(f::code).get<std::string>();
  a.token_count = j.at(f::token_count).get<int64_t>();
  a.prompt_version = j.at(f::prompt_version).get<std::string>();
}

void to_json(Json& j, const CompileInfo& c) {
  j = {{f::ok, c.ok},
       {f::log, c.log},
       {f::seconds, json_number(c.seconds)},
       {f::cache_hit, c.cache_hit},
       {f::precision_findings, c.precision_findings}};
}

void from_json(const Json& j, CompileInfo& c) {
  c.ok = j.at(f::ok).get<bool>();
  c.log = j.at(f::log).get<std::string>();
  c.seconds = json_get_number(j, f::seconds);
  c.cache_hit = j.at(f::cache_hit).get<bool>();
  c.precision_findings = j.at(f::precision_findings).get<std::vector<std::string>>();
}

size_t approximate_bytes(const EvalRecord& r) {
  size_t bytes = sizeof(EvalRecord) + r.key.size() + r.task_name.size() + r.raw_action.size() +
                 r.action.code.size() + r.action.prompt_version.size() + r.candidate.source.size() +
                 r.compile.log.size() + r.outcome_detail.size() + r.inputs.size() + r.device.size() +
                 r.kbrl_version.size() + r.timestamp.size() + (r.policy ? r.policy->size() : 0);
  for (const auto& launch : r.candidate.launches) bytes += sizeof(launch) + launch.kernel.size() + sizeof(KernelArg) * launch.args.size();
  for (const auto& option : r.candidate.options) bytes += sizeof(option) + option.size();
  for (const auto& finding : r.compile.precision_findings) bytes += sizeof(finding) + finding.size();
  for (const auto& trial : r.trials) bytes += sizeof(trial) + trial.seed_id.size() + trial.failure.size();
  for (const auto& flag : r.flags) bytes += sizeof(flag) + flag.size();
  return bytes;
}

bool is_fast(const EvalRecord& r, double p) { return fast_event(r.outcome == Outcome::ok, r.speedup, p); }

bool is_significantly_fast(const EvalRecord& r, double p) {
  return significantly_fast_event(r.outcome == Outcome::ok, r.speedup, r.speedup_ci, p);
}

void to_json(Json& j, const SpeedupInterval& ci) { j = {{f::low, json_number(ci.low)}, {f::high, json_number(ci.high)}}; }

void from_json(const Json& j, SpeedupInterval& ci) {
  ci.low = json_get_number(j, f::low);
  ci.high = json_get_number(j, f::high);
}

void to_json(Json& j, const EvalRecord& r) {
  j = {{f::schema_version, kEvalRecordSchemaVersion},
       {f::key, r.key},
       {f::task_id, r.task_id},
       {f::task_name, r.task_name},
       {f::scale, to_string(r.scale)},
       {f::policy, optional_json(r.policy)},
       {f::raw_action, r.raw_action},
       {f::action, r.action},
       {f::candidate, r.candidate},
       {f::compile, r.compile},
       {f::trials, r.trials},
       {f::runtime, optional_json(r.runtime)},
       {f::reference, optional_json(r.reference)},
       {f::speedup, json_number(r.speedup)},
       {f::speedup_ci, optional_json(r.speedup_ci)},
       {f::reward, json_number(r.reward)},
       {f::outcome, to_string(r.outcome)},
       {f::outcome_detail, r.outcome_detail},
       {f::flags, r.flags},
       {f::inputs, r.inputs},
       {f::device, r.device},
       {f::kbrl_version, r.kbrl_version},
       {f::timestamp, r.timestamp}};
  if (!r.gpu_stage_ms.empty()) j[f::gpu_stage_ms] = r.gpu_stage_ms;
  keep_exact_bytes(j);  // any bytes: a candidate's source, its compile log (json_text.h)
}

void from_json(const Json& document, EvalRecord& r) {
  Json j = document;
  restore_exact_bytes(j);  // the exact bytes of strings that are not UTF-8 (json_text.h)
  const int version = j.at(f::schema_version).get<int>();
  KBRL_CHECK_INPUT(version >= 1 && version <= kEvalRecordSchemaVersion,
                   "record schema version {} is not one this kbrl reads (1 to {})", version,
                   kEvalRecordSchemaVersion);
  r.key = j.at(f::key).get<std::string>();
  r.task_id = j.at(f::task_id).get<int>();
  r.task_name = j.at(f::task_name).get<std::string>();
  r.scale = parse_scale(j.at(f::scale).get<std::string>());
  r.policy = get_optional<std::string>(j, f::policy);
  r.raw_action = j.at(f::raw_action).get<std::string>();
  r.action = version >= 2 ? j.at(f::action).get<ActionInfo>() : ActionInfo{};
  r.candidate = candidate_from_json(j.at(f::candidate));
  r.compile = j.at(f::compile).get<CompileInfo>();
  r.trials = j.at(f::trials).get<std::vector<TrialCheck>>();
  r.runtime = get_optional<RuntimeStats>(j, f::runtime);
  r.reference = get_optional<RuntimeStats>(j, f::reference);
  r.speedup = json_get_number(j, f::speedup);
  if (version >= 3) r.speedup_ci = get_optional<SpeedupInterval>(j, f::speedup_ci);
  r.reward = json_get_number(j, f::reward);
  r.outcome = parse_outcome(j.at(f::outcome).get<std::string>());
  r.outcome_detail = j.at(f::outcome_detail).get<std::string>();
  r.flags = j.at(f::flags).get<std::vector<std::string>>();
  r.inputs = version >= 3 ? j.at(f::inputs).get<std::string>() : "kernelbench";
  KBRL_CHECK_INPUT(r.inputs == "robust" || r.inputs == "kernelbench",
                   "record inputs '{}' is neither 'robust' nor 'kernelbench'", r.inputs);
  r.device = j.at(f::device).get<std::string>();
  r.kbrl_version = j.at(f::kbrl_version).get<std::string>();
  r.timestamp = j.at(f::timestamp).get<std::string>();
  if (j.contains(f::gpu_stage_ms)) j.at(f::gpu_stage_ms).get_to(r.gpu_stage_ms);
}

EvalRecord record_from_json(const Json& j) {
  try {
    return j.get<EvalRecord>();
  } catch (const Json::exception& e) {
    throw InputError(fmt::format("malformed evaluation record: {}", e.what()));
  }
}

// Calendar arithmetic instead of gmtime_r: glibc's gmtime_r takes the time-zone lock, and a compile
// child forked while another thread holds it deadlocks when NVRTC calls ctime (harness/compile):
// seen as every first compile of a run "timing out" after 60 s.
std::string utc_timestamp(std::chrono::system_clock::time_point when) {
  using namespace std::chrono;
  const auto millis = floor<milliseconds>(when.time_since_epoch());
  const auto days_since_epoch = floor<days>(millis);
  const year_month_day date{sys_days{days_since_epoch}};
  const hh_mm_ss<milliseconds> time{millis - days_since_epoch};
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", static_cast<int>(date.year()),
                     static_cast<unsigned>(date.month()), static_cast<unsigned>(date.day()), time.hours().count(),
                     time.minutes().count(), time.seconds().count(), time.subseconds().count());
}

std::string_view kbrl_version() { return KBRL_VERSION; }

}  // namespace kbrl
