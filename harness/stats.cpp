#include "stats.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>
#include <utility>

#include <kbrl/error.h>

namespace kbrl {
namespace {

void check_sample(double sample_ms) {
  KBRL_CHECK_INPUT(std::isfinite(sample_ms) && sample_ms >= 0.0,
                   "timing sample {} ms is not a finite, non-negative time", sample_ms);
}

// Sample mean and standard deviation of [first, last), by two passes for accuracy.
template <typename It>
std::pair<double, double> mean_and_std(It first, It last) {
  const auto n = static_cast<double>(std::distance(first, last));
  if (n == 0) return {0.0, 0.0};
  const double mean = std::accumulate(first, last, 0.0) / n;
  if (n < 2) return {mean, 0.0};
  double squares = 0.0;
  for (It it = first; it != last; ++it) squares += (*it - mean) * (*it - mean);
  return {mean, std::sqrt(squares / (n - 1))};
}

}  // namespace

double sorted_quantile(const std::vector<double>& sorted, double p) {
  KBRL_ASSERT(!sorted.empty() && p >= 0.0 && p <= 1.0, "quantile {} of {} samples", p,
              sorted.size());
  const double h = static_cast<double>(sorted.size() - 1) * p;
  const auto lo = static_cast<size_t>(std::floor(h));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (h - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

double student_t_975(int64_t df) {
  KBRL_CHECK_INPUT(df >= 1, "Student's t needs at least one degree of freedom, not {}", df);
  static constexpr std::array<double, 30> kTable{
      12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060, 2.2622, 2.2281,
      2.2010,  2.1788, 2.1604, 2.1448, 2.1314, 2.1199, 2.1098, 2.1009, 2.0930, 2.0860,
      2.0796,  2.0739, 2.0687, 2.0639, 2.0595, 2.0555, 2.0518, 2.0484, 2.0452, 2.0423};
  if (df <= 30) return kTable[static_cast<size_t>(df - 1)];
  const double z = 1.959963984540054, n = static_cast<double>(df);
  const double z3 = z * z * z, z5 = z3 * z * z;
  return z + (z3 + z) / (4 * n) + (5 * z5 + 16 * z3 + 3 * z) / (96 * n * n);
}

SpeedupInterval paired_speedup_interval(const std::vector<double>& reference_ms,
                                        const std::vector<double>& candidate_ms, double resolution) {
  KBRL_CHECK_INPUT(resolution >= 0 && std::isfinite(resolution), "the timing resolution must be >= 0, not {}",
                   resolution);
  KBRL_CHECK_INPUT(reference_ms.size() == candidate_ms.size(),
                   "paired timing needs as many reference samples as candidate samples ({} and {})",
                   reference_ms.size(), candidate_ms.size());
  KBRL_CHECK_INPUT(reference_ms.size() >= 2, "a speedup interval needs at least two paired samples, not {}",
                   reference_ms.size());
  std::vector<double> log_ratio;
  for (size_t i = 0; i < reference_ms.size(); ++i) {
    KBRL_CHECK_INPUT(std::isfinite(reference_ms[i]) && std::isfinite(candidate_ms[i]) && reference_ms[i] > 0 &&
                         candidate_ms[i] > 0,
                     "paired sample {} ({} ms, {} ms) is not a pair of positive times", i, reference_ms[i],
                     candidate_ms[i]);
    log_ratio.push_back(std::log(reference_ms[i] / candidate_ms[i]));
  }
  const auto [mean, sd] = mean_and_std(log_ratio.begin(), log_ratio.end());
  const auto n = static_cast<int64_t>(log_ratio.size());
  const double half =
      std::max(student_t_975(n - 1) * sd / std::sqrt(static_cast<double>(n)), std::log1p(resolution));
  return {std::exp(mean - half), std::exp(mean + half)};
}

RuntimeStats summarize(std::vector<double> samples_ms) {
  KBRL_CHECK_INPUT(!samples_ms.empty(), "cannot summarize an empty list of timing samples");
  for (double s : samples_ms) check_sample(s);
  std::sort(samples_ms.begin(), samples_ms.end());
  RuntimeStats stats;
  stats.n = static_cast<int64_t>(samples_ms.size());
  std::tie(stats.mean_ms, stats.std_ms) = mean_and_std(samples_ms.begin(), samples_ms.end());
  stats.median_ms = sorted_quantile(samples_ms, 0.5);
  stats.min_ms = samples_ms.front();
  stats.max_ms = samples_ms.back();
  stats.q1_ms = sorted_quantile(samples_ms, 0.25);
  stats.q3_ms = sorted_quantile(samples_ms, 0.75);
  stats.iqr_ms = stats.q3_ms - stats.q1_ms;
  return stats;
}

double relative_std(const RuntimeStats& stats) {
  if (stats.n < 2 || stats.mean_ms <= 0.0) return 0.0;
  return stats.std_ms / stats.mean_ms;
}

std::string_view to_string(TimingMode mode) { return enum_name(mode); }
TimingMode parse_timing_mode(std::string_view text) { return parse_enum<TimingMode>(text); }

AdaptiveStopConfig stop_config(TimingMode mode) {
  const auto fixed = [](int64_t count) {
    AdaptiveStopConfig config;
    config.target_rel_std = 0.0;  // never converges early: exactly `count` samples
    config.min_samples = count;
    config.max_samples = count;
    config.time_budget = std::chrono::duration<double>::max();
    return config;
  };
  switch (mode) {
    case TimingMode::fast: return fixed(5);
    case TimingMode::full: return fixed(50);
    case TimingMode::adaptive: return AdaptiveStopConfig{};
  }
  KBRL_ASSERT(false, "unhandled timing mode {}", static_cast<int>(mode));
}

std::string_view to_string(StopReason reason) { return enum_name(reason); }

AdaptiveStop::AdaptiveStop(AdaptiveStopConfig config, Clock clock)
    : config_(config), clock_(std::move(clock)) {
  KBRL_CHECK_INPUT(config_.max_samples >= 1 && config_.min_samples >= 1 &&
                       config_.min_samples <= config_.max_samples,
                   "adaptive stop needs 1 <= min_samples ({}) <= max_samples ({})",
                   config_.min_samples, config_.max_samples);
  KBRL_CHECK_INPUT(config_.window == 0 || config_.window >= 2,
                   "adaptive stop window {} must be 0 (all samples) or at least 2", config_.window);
  KBRL_CHECK_INPUT(config_.target_rel_std >= 0.0, "negative noise target {}",
                   config_.target_rel_std);
  if (!clock_) clock_ = [] { return std::chrono::steady_clock::now(); };
  start_ = clock_();
  samples_.reserve(static_cast<size_t>(std::min<int64_t>(config_.max_samples, 1024)));
}

double AdaptiveStop::current_rel_std() const {
  if (samples_.size() < 2) return 0.0;
  auto first = samples_.begin();
  if (config_.window > 0 && samples_.size() > static_cast<size_t>(config_.window))
    first = samples_.end() - config_.window;
  const auto [mean, std] = mean_and_std(first, samples_.end());
  return mean > 0.0 ? std / mean : 0.0;
}

bool AdaptiveStop::add(double sample_ms) {
  KBRL_CHECK_INPUT(!done(), "adaptive stop received a sample after stopping ({})",
                   to_string(reason_));
  check_sample(sample_ms);
  const auto now = clock_();
  samples_.push_back(sample_ms);
  const auto n = static_cast<int64_t>(samples_.size());
  if (n >= config_.max_samples) {
    reason_ = StopReason::max_samples;
  } else if (n >= config_.min_samples && n >= 2 && current_rel_std() < config_.target_rel_std) {
    reason_ = StopReason::converged;
  } else if (std::chrono::duration<double>(now - start_) >= config_.time_budget) {
    reason_ = StopReason::time_budget;
  }
  return done();
}

}  // namespace kbrl
