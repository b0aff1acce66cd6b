#include "reward.h"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include <kbrl/error.h>

namespace kbrl {
namespace {

void check_config(const RewardConfig& config) {
  KBRL_CHECK_INPUT(config.r_max > 0.0, "reward r_max {} must be positive", config.r_max);
  KBRL_CHECK_INPUT(config.threshold > 0.0 && std::isfinite(config.threshold), "reward threshold {} must be positive",
                   config.threshold);
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

namespace {

constexpr std::string_view kRewardForms =
    "speedup, normalized, composite[:alpha,beta,gamma,r_max] (e.g. composite:0.5,1,0.5,3) or threshold:T "
    "(e.g. threshold:1.5)";

std::vector<double> reward_numbers(std::string_view spec, std::string_view list, size_t count) {
  std::vector<double> out;
  size_t start = 0;
  while (start <= list.size()) {
    const size_t end = std::min(list.find(',', start), list.size());
    const std::string item(list.substr(start, end - start));
    size_t used = 0;
    double value = 0;
    try {
      value = std::stod(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    KBRL_CHECK_INPUT(!item.empty() && used == item.size() && std::isfinite(value),
                     "--reward '{}': '{}' is not a number (the forms: {})", spec, item, kRewardForms);
    out.push_back(value);
    start = end + 1;
  }
  KBRL_CHECK_INPUT(out.size() == count, "--reward '{}': {} numbers where {} are needed (the forms: {})", spec,
                   out.size(), count, kRewardForms);
  return out;
}

}  // namespace

RewardConfig parse_reward(std::string_view spec, RewardConfig config) {
  const size_t colon = spec.find(':');
  const std::string_view name = spec.substr(0, colon);
  RewardKind kind{};
  try {
    kind = parse_reward_kind(name);
  } catch (const InputError&) {
    throw InputError(fmt::format("unknown reward '{}' (the forms: {})", spec, kRewardForms));
  }
  config.kind = kind;
  const RewardConfig defaults;
  config.alpha = defaults.alpha;
  config.beta = defaults.beta;
  config.gamma = defaults.gamma;
  config.r_max = defaults.r_max;
  config.threshold = defaults.threshold;
  const bool has_parameters = colon != std::string_view::npos;
  const std::string_view parameters = has_parameters ? spec.substr(colon + 1) : std::string_view{};
  switch (kind) {
    case RewardKind::composite:
      if (has_parameters) {
        const auto v = reward_numbers(spec, parameters, 4);
        config.alpha = v[0];
        config.beta = v[1];
        config.gamma = v[2];
        config.r_max = v[3];
      }
      break;
    case RewardKind::threshold:
      KBRL_CHECK_INPUT(has_parameters, "--reward threshold needs its T: threshold:1.5 rewards 1 above 1.5x the "
                       "reference's speed");
      config.threshold = reward_numbers(spec, parameters, 1)[0];
      break;
    case RewardKind::speedup:
    case RewardKind::normalized:
      KBRL_CHECK_INPUT(!has_parameters, "--reward {} takes no parameters (the forms: {})", name, kRewardForms);
      break;
  }
  check_config(config);
  return config;
}

std::string reward_spec(const RewardConfig& config) {
  const RewardConfig defaults;
  const std::string name(to_string(config.kind));
  if (config.kind == RewardKind::threshold) return fmt::format("{}:{}", name, config.threshold);
  if (config.kind == RewardKind::composite &&
      (config.alpha != defaults.alpha || config.beta != defaults.beta || config.gamma != defaults.gamma ||
       config.r_max != defaults.r_max))
    return fmt::format("{}:{},{},{},{}", name, config.alpha, config.beta, config.gamma, config.r_max);
  return name;
}

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
  result.reward = reward_of(config, input.task_id, input.compiled, result.accepted, result.speedup);
  return result;
}

double reward_of(const RewardConfig& config, int task_id, bool compiled, bool accepted, double speedup) {
  const double gate = accepted ? 1.0 : 0.0;
  switch (config.kind) {
    case RewardKind::speedup:
      return accepted ? speedup : 0.0;
    case RewardKind::composite:
      return config.alpha * (compiled ? 1.0 : 0.0) + config.beta * gate +
             config.gamma * std::min(accepted ? speedup : 0.0, config.r_max) * gate;
    case RewardKind::threshold:
      return accepted && speedup > config.threshold ? 1.0 : 0.0;
    case RewardKind::normalized: {
      const auto it = config.task_baselines.find(task_id);
      const double baseline = it == config.task_baselines.end() ? 1.0 : it->second;
      return accepted ? normalized_reward(speedup, baseline, config.log2_clip) : 0.0;
    }
  }
  return 0.0;
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
