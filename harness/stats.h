#pragma once
// Runtime statistics of timing samples and the rule that decides when to stop sampling.
//
// Quartiles (and the median) use linear interpolation between closest ranks, the definition of
// R's type 7 and NumPy's default `linear`: for sorted samples x[0..n-1] and probability p,
// h = (n - 1) * p and Q(p) = x[floor(h)] + (h - floor(h)) * (x[floor(h) + 1] - x[floor(h)]).
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>
#include <vector>

#include <kbrl/enum_names.h>
#include <kbrl/fast_p.h>  // SpeedupInterval, fast_event

namespace kbrl {

/// Summary of timing samples, all in milliseconds. The median is the primary statistic.
struct RuntimeStats {
  int64_t n = 0;
  double median_ms = 0.0;
  double mean_ms = 0.0;
  double std_ms = 0.0;  // sample standard deviation (divides by n - 1); 0 when n == 1
  double min_ms = 0.0;
  double max_ms = 0.0;
  double q1_ms = 0.0;   // Q(0.25), linear interpolation (see the header comment)
  double q3_ms = 0.0;   // Q(0.75)
  double iqr_ms = 0.0;  // q3_ms - q1_ms
  bool operator==(const RuntimeStats&) const = default;
};

/// Summarizes samples (milliseconds). Throws InputError when `samples_ms` is empty or holds a
/// negative or non-finite value (a harness fault: timing never produces one).
RuntimeStats summarize(std::vector<double> samples_ms);

/// std / mean, the noise measure of the stopping rule; 0 for fewer than two samples or a zero mean.
double relative_std(const RuntimeStats& stats);

/// Linear-interpolation quantile of already sorted, non-empty samples; p in [0, 1].
double sorted_quantile(const std::vector<double>& sorted, double p);

/// The smallest speed difference kbrl resolves: a speedup interval is never narrower than this on
/// either side (x/1.01 to x*1.01). Measured on an H100 (results/h100-80gb-hbm3/noise.txt): the same
/// candidates evaluated in two processes differ by 0.16% (sd of the log-speedup) although each
/// process's paired interval can be as narrow as 0.2%, so intervals that narrow put candidates at
/// 1.002x on either side of 1 from one process to the next; at 1% none of 128 samples changed class.
inline constexpr double kSpeedupResolution = 0.01;

/// The two-sided 95% confidence interval of the speedup from paired, interleaved samples: sample i
/// of the reference and sample i of the candidate were taken back to back on the same inputs, so
/// drift common to both (clocks, temperature, a neighbour on the GPU) cancels in their ratio. The
/// interval is exp(m -+ h) for the mean m and standard deviation s of the n log-ratios
/// log(reference_i / candidate_i), with h = max(t * s / sqrt(n), log(1 + resolution)) and t Student's
/// 0.975 quantile at n - 1 degrees of freedom. Needs n >= 2 pairs of positive times; throws
/// InputError otherwise, for unequal lengths or a negative resolution.
SpeedupInterval paired_speedup_interval(const std::vector<double>& reference_ms,
                                        const std::vector<double>& candidate_ms,
                                        double resolution = kSpeedupResolution);

/// Student's t distribution's 0.975 quantile at `df` >= 1 degrees of freedom (a table to 30, then a
/// Cornish-Fisher expansion; 1.96 in the limit).
double student_t_975(int64_t df);

/// How many samples to take: the reports' fixed counts or nvbench-like adaptive stopping.
enum class TimingMode {
  fast,      // 5 samples
  full,      // 50 samples
  adaptive,  // AdaptiveStopConfig's defaults
};
template <>
struct EnumNames<TimingMode> {
  static constexpr std::string_view what = "timing mode";
  static constexpr EnumEntry<TimingMode> entries[] = {
      {TimingMode::fast, "fast"}, {TimingMode::full, "full"}, {TimingMode::adaptive, "adaptive"}};
};

std::string_view to_string(TimingMode);
TimingMode parse_timing_mode(std::string_view);  // throws InputError naming the legal values

/// Settings of AdaptiveStop. The defaults are those of TimingMode::adaptive.
struct AdaptiveStopConfig {
  double target_rel_std = 0.005;  // stop once the relative standard deviation is below this
  int64_t min_samples = 10;       // never stop on noise before this many samples
  int64_t max_samples = 200;      // always stop at this many samples
  /// Noise is measured over the most recent `window` samples; 0 means over all samples so far
  /// (the default, as nvbench's stdrel criterion does).
  int64_t window = 0;
  /// Wall-clock budget from the stopper's construction (create it just before timing starts);
  /// sampling stops once it is spent, even before min_samples.
  std::chrono::duration<double> time_budget = std::chrono::seconds(15);
  bool operator==(const AdaptiveStopConfig&) const = default;
};

/// The stopping settings of a mode: fast and full take exactly 5 and 50 samples (no noise target,
/// no time budget); adaptive takes AdaptiveStopConfig{}.
AdaptiveStopConfig stop_config(TimingMode mode);

/// Why sampling stopped.
enum class StopReason { not_stopped, converged, max_samples, time_budget };
template <>
struct EnumNames<StopReason> {
  static constexpr std::string_view what = "stop reason";
  static constexpr EnumEntry<StopReason> entries[] = {{StopReason::not_stopped, "not_stopped"},
                                                      {StopReason::converged, "converged"},
                                                      {StopReason::max_samples, "max_samples"},
                                                      {StopReason::time_budget, "time_budget"}};
};
std::string_view to_string(StopReason);

/// Fed one sample at a time; says when to stop. The rule, checked after each sample:
///   n >= max_samples                                   -> max_samples
///   n >= min_samples and rel_std(window) < target      -> converged
///   wall time since construction >= time_budget       -> time_budget
/// where rel_std(window) is the sample std over the mean of the last `window` samples (all when
/// window is 0) and needs at least two samples. Once stopped, further samples are rejected.
class AdaptiveStop {
 public:
  using Clock = std::function<std::chrono::steady_clock::time_point()>;

  /// `clock` is the wall clock for the time budget (tests pass a fake one); it is read now.
  explicit AdaptiveStop(AdaptiveStopConfig config = {}, Clock clock = {});

  /// Records one sample (milliseconds) and returns true when sampling should stop.
  /// Throws InputError for a negative or non-finite sample or a sample after stopping.
  bool add(double sample_ms);

  bool done() const { return reason_ != StopReason::not_stopped; }
  StopReason reason() const { return reason_; }
  const std::vector<double>& samples() const { return samples_; }
  /// The noise measure the rule compares with the target (0 before two samples).
  double current_rel_std() const;
  const AdaptiveStopConfig& config() const { return config_; }

 private:
  AdaptiveStopConfig config_;
  Clock clock_;
  std::chrono::steady_clock::time_point start_{};
  std::vector<double> samples_;
  StopReason reason_ = StopReason::not_stopped;
};

}  // namespace kbrl
