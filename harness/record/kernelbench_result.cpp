#include "kernelbench_result.h"

namespace kbrl {
namespace {

nlohmann::json stats_json(const std::optional<RuntimeStats>& s) {
  if (!s) return nlohmann::json::object();
  return {{"mean", s->mean_ms}, {"std", s->std_ms},       {"min", s->min_ms},
          {"max", s->max_ms},   {"num_trials", s->n},     {"median", s->median_ms}};
}

}  // namespace

nlohmann::json kernelbench_result(const EvalRecord& r) {
  nlohmann::json metadata = {{"kbrl_outcome", to_string(r.outcome)}, {"kbrl_key", r.key}, {"hardware", r.device},
                             {"speedup", r.speedup}};
  if (!r.outcome_detail.empty()) metadata["kbrl_detail"] = r.outcome_detail;
  if (r.speedup_ci) metadata["speedup_ci95"] = {r.speedup_ci->low, r.speedup_ci->high};
  if (!r.compile.ok && !r.compile.log.empty()) metadata["compilation_error"] = r.compile.log;
  const bool correct = r.outcome == Outcome::ok;
  return {{"compiled", r.compile.ok},
          {"correctness", correct},
          {"runtime", correct && r.runtime ? r.runtime->mean_ms : -1.0},
          {"runtime_stats", stats_json(correct ? r.runtime : std::nullopt)},
          {"ref_runtime", r.reference ? r.reference->mean_ms : -1.0},
          {"ref_runtime_stats", stats_json(r.reference)},
          {"metadata", std::move(metadata)}};
}

}  // namespace kbrl
