#include "reward.h"

#include <algorithm>
#include <cmath>
#include <set>

#include <kbrl/error.h>

namespace kbrl {
namespace {

void check_config(const RewardConfig& config) {
  KBRL_CHECK_INPUT(config.r_max > 0.0, "reward r_max {} must be positive", config.r_max);
  KBRL_CHECK_INPUT(config.log2_clip > 0.0, "reward log2_clip {} must be positive",
                   config.log2_clip);
  KBRL_CHECK_INPUT(config.sol_margin >= 0.0 && config.sol_margin < 1.0,
                   "speed-of-light margin {} must be in [0, 1)", config.sol_margin);
  for (const auto& [task, baseline] : config.task_baselines)
    KBRL_CHECK_INPUT(baseline > 0.0 && std::isfinite(baseline),
                     "baseline speedup {} of task {} must be positive", baseline, task);
}

double normalized_reward(double speedup, double baseline, double clip) {
  if (speedup <= 0.0) return 0.0;
  const double log_ratio = std::clamp(std::log2(speedup / baseline), -clip, clip);
  return 1.0 + log_ratio / clip;
}

}  // namespace

std::string_view to_string(RewardKind kind) { return enum_name(kind); }
RewardKind parse_reward_kind(std::string_view text) { return parse_enum<RewardKind>(text); }

double floor_ms(double flops, double min_bytes, const DevicePeaks& peaks, bool uses_tf32) {
  double seconds = 0.0;
  if (peaks.copy_bytes_per_s > 0.0 && min_bytes > 0.0)
    seconds = std::max(seconds, min_bytes / peaks.copy_bytes_per_s);
  const double rate = (uses_tf32 && peaks.tf32_flops_per_s > 0.0) ? peaks.tf32_flops_per_s
                                                                   : peaks.fp32_flops_per_s;
  if (rate > 0.0 && flops > 0.0) seconds = std::max(seconds, flops / rate);
  return seconds * 1e3;
}

bool is_impossible(double median_ms, double floor, double margin) {
  return floor > 0.0 && median_ms < floor * (1.0 - margin);
}

double measured_speedup(double reference_ms, double candidate_ms) {
  if (!(reference_ms > 0.0) || !(candidate_ms > 0.0)) return 0.0;
  return reference_ms / candidate_ms;
}

RewardResult compute_reward(const RewardInput& input, const RewardConfig& config) {
  check_config(config);
  RewardResult result;
  const bool correct = input.compiled && input.correct;
  const bool flag_precision =
      input.reduced_precision && config.precision != PrecisionPolicy::allow;
  const bool rejected = input.reduced_precision && config.precision == PrecisionPolicy::reject;
  if (flag_precision) result.flags.emplace_back(kFlagReducedPrecision);

  result.impossible = correct && input.candidate_ms > 0.0 &&
                      is_impossible(input.candidate_ms, input.floor_ms, config.sol_margin);
  if (result.impossible) result.flags.emplace_back(kFlagImpossible);

  result.accepted = correct && !result.impossible && !rejected;
  if (result.accepted) result.speedup = measured_speedup(input.reference_ms, input.candidate_ms);
  if (result.speedup > config.excessive_speedup)
    result.flags.emplace_back(kFlagExcessiveSpeedup);

  if (result.impossible || rejected) return result;  // reward 0 under every kind
  const double accepted = result.accepted ? 1.0 : 0.0;
  switch (config.kind) {
    case RewardKind::speedup:
      result.reward = result.speedup;
      break;
    case RewardKind::composite:
      result.reward = config.alpha * (input.compiled ? 1.0 : 0.0) + config.beta * accepted +
                      config.gamma * std::min(result.speedup, config.r_max) * accepted;
      break;
    case RewardKind::normalized: {
      const auto it = config.task_baselines.find(input.task_id);
      const double baseline = it == config.task_baselines.end() ? 1.0 : it->second;
      result.reward = result.accepted
                          ? normalized_reward(result.speedup, baseline, config.log2_clip)
                          : 0.0;
      break;
    }
  }
  return result;
}

double fast_p(std::span<const TaskScore> scores, double p, std::optional<size_t> total_tasks) {
  const size_t total = total_tasks.value_or(scores.size());
  KBRL_CHECK_INPUT(total > 0, "fast_p over zero tasks is undefined");
  KBRL_CHECK_INPUT(total >= scores.size(), "fast_p: {} task scores but only {} tasks in all",
                   scores.size(), total);
  std::set<int> seen;
  size_t fast = 0;
  for (const TaskScore& score : scores) {
    KBRL_CHECK_INPUT(seen.insert(score.task_id).second,
                     "fast_p: task {} is scored more than once", score.task_id);
    if (score.correct && score.speedup > p) ++fast;
  }
  return static_cast<double>(fast) / static_cast<double>(total);
}

}  // namespace kbrl
