#pragma once
// From an evaluation's facts (compiled, correct, timings, precision, speed-of-light floor) to a
// reward, and KernelBench's fast_p over tasks.
//
// A correct candidate is `accepted` unless it is impossible (timed below the speed-of-light floor
// by more than the margin) or computes in reduced precision under PrecisionPolicy::reject.
// Impossible and rejected candidates earn 0 under every reward kind.
// speedup = reference median / candidate median, gated: 0 unless accepted. The reward kinds:
//   speedup    : the gated speedup (the reports' default).
//   composite  : alpha*compiled + beta*correct + gamma*min(speedup, r_max)*correct (GRPO report,
//                Eq. 1), with correct = accepted.
//   threshold  : 1 when accepted and speedup > T, else 0: the speedup signal made sparse (the
//                surprisal report's 6.7 reward sparsification).
//   normalized : per-task normalized speedup for training,
//                  0                                                    if not accepted,
//                  1 + clamp(log2(speedup / baseline), -L, L) / L        otherwise,
//                where baseline is the task's baseline speedup (RewardConfig::task_baselines,
//                1.0 = parity with the reference when the task has none) and L = log2_clip.
//                It lies in [0, 2]: 1 at the baseline, 2 at 2^L times the baseline or faster,
//                0 at 2^-L times the baseline or slower (as little as a failure).
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <harness/compile/precision_audit.h>  // PrecisionPolicy
#include <harness/stage_values.h>            // DevicePeaks
#include <kbrl/enum_names.h>

namespace kbrl {

enum class RewardKind { speedup, composite, normalized, threshold };
template <>
struct EnumNames<RewardKind> {
  static constexpr std::string_view what = "reward kind";
  static constexpr EnumEntry<RewardKind> entries[] = {{RewardKind::speedup, "speedup"},
                                                      {RewardKind::composite, "composite"},
                                                      {RewardKind::normalized, "normalized"},
                                                      {RewardKind::threshold, "threshold"}};
};
std::string_view to_string(RewardKind);
RewardKind parse_reward_kind(std::string_view);  // throws InputError

/// Record flags set by the reward stage (EvalRecord::flags).
inline constexpr std::string_view kFlagReducedPrecision = "reduced_precision";
inline constexpr std::string_view kFlagImpossible = "impossible";
inline constexpr std::string_view kFlagExcessiveSpeedup = "excessive_speedup";

struct RewardConfig {
  RewardKind kind = RewardKind::speedup;
  // composite: our reading of the GRPO report (r_max = 3 is its Table 2; alpha, beta, gamma
  // follow its "0.5 for compilation, 1.0 for correctness, 1.5 for optimal").
  double alpha = 0.5;  // weight of compiled
  double beta = 1.0;   // weight of correct
  double gamma = 0.5;  // weight of min(speedup, r_max)
  double r_max = 3.0;
  // threshold
  double threshold = 1.0;  // T: the reward is 1 above T times the reference's speed
  // normalized
  double log2_clip = 3.0;                    // L: clip of log2(speedup / baseline)
  std::map<int, double> task_baselines;      // task id -> baseline speedup (default 1.0)
  // gates and flags
  /// Reduced precision (the compile stage's precision audit found some): allow = no consequence;
  /// flag = reward kept, flagged "reduced_precision"; reject = reward and speedup 0, flagged.
  PrecisionPolicy precision = PrecisionPolicy::flag;
  // impossible when median < floor * (1 - margin). 0.2 leaves room for a kernel that beats the
  // measured bandwidth (the peaks are the best of libtorch's copy, read and write, not the datasheet).
  double sol_margin = 0.20;
  double excessive_speedup = 10.0;       // flagged (never failed) above this, as KernelBench does
  bool operator==(const RewardConfig&) const = default;
};

/// A reward spec, as --reward and the serve API take it: `speedup`, `normalized`,
/// `composite[:alpha,beta,gamma,r_max]` (bare: 0.5, 1, 0.5, 3) or `threshold:T` (T > 0). The kind
/// and its parameters are set on a copy of `base` (its gates and flags kept). InputError names the
/// forms for anything else.
RewardConfig parse_reward(std::string_view spec, RewardConfig base = {});
/// The spec of a config's kind and parameters (parse_reward's inverse): the bare kind name when
/// the parameters are the defaults, so that the record keys of a default reward never change.
std::string reward_spec(const RewardConfig& config);

/// Speed-of-light floor in milliseconds: max(min_bytes / bandwidth, flops / rate), where the rate
/// is the tf32 one when `uses_tf32` (and known), else the fp32 one. 0 when nothing is known.
double floor_ms(double flops, double min_bytes, const DevicePeaks& peaks, bool uses_tf32);

/// True when a median time is below the floor by more than the margin: median < floor*(1-margin).
/// Never true for an unknown (0) floor.
bool is_impossible(double median_ms, double floor_ms, double margin = 0.20);

/// reference / candidate; 0 when either time is missing (not positive).
double measured_speedup(double reference_ms, double candidate_ms);

/// The facts of one evaluation that the reward depends on.
struct RewardInput {
  int task_id = 0;
  bool compiled = false;
  bool correct = false;              // every correctness trial passed
  double reference_ms = 0.0;         // reference median (0 when not timed)
  double candidate_ms = 0.0;         // candidate median (0 when not timed)
  double floor_ms = 0.0;             // speed-of-light floor (0 = unknown, no gate)
  bool reduced_precision = false;    // the precision audit found reduced precision
};

struct RewardResult {
  double reward = 0.0;
  double speedup = 0.0;      // gated: 0 unless accepted
  bool accepted = false;     // correct, not impossible, not rejected for precision
  bool impossible = false;   // correct but timed below the speed-of-light floor
  std::vector<std::string> flags;
  bool operator==(const RewardResult&) const = default;
};

/// Computes the reward of one evaluation. Throws InputError for a config out of range.
RewardResult compute_reward(const RewardInput& input, const RewardConfig& config);

/// The reward of an evaluation whose gates are settled: `accepted` (correct, possible, not rejected
/// for precision) and its gated `speedup`, under `config`'s kind (compute_reward's last step;
/// rewarding evaluated rollouts again under another kind, as reward sparsification does).
double reward_of(const RewardConfig& config, int task_id, bool compiled, bool accepted, double speedup);

/// One task's result for fast_p (typically its selected or only candidate).
struct TaskScore {
  int task_id = 0;
  bool correct = false;  // accepted (see RewardResult::accepted)
  double speedup = 0.0;
};

/// KernelBench's fast_p: the fraction of ALL tasks that are correct with speedup > p (strict).
/// `total_tasks` is the denominator; tasks without a score count as failures. When absent, it is
/// scores.size(). Throws InputError for a repeated task id, total_tasks < scores.size() or
/// total_tasks == 0.
double fast_p(std::span<const TaskScore> scores, double p,
              std::optional<size_t> total_tasks = std::nullopt);

}  // namespace kbrl
