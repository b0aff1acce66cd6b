#include "statistics.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

#include <kbrl/error.h>
#include <kbrl/splitmix64.h>

namespace kbrl::stats {
namespace {

void check_finite(const std::vector<double>& values, const char* function, const char* name) {
  for (size_t i = 0; i < values.size(); ++i) {
    KBRL_CHECK_INPUT(std::isfinite(values[i]), "{}: {}[{}] = {} is not a finite number", function,
                     name, i, values[i]);
  }
}

// Linear interpolation between order statistics of sorted, non-empty values (R's type 7).
double sorted_quantile(const std::vector<double>& sorted, double p) {
  const double h = static_cast<double>(sorted.size() - 1) * p;
  const auto lo = static_cast<size_t>(std::floor(h));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (h - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

}  // namespace

double pass_at_k(int64_t n, int64_t c, int64_t k) {
  KBRL_CHECK_INPUT(n >= 1, "pass_at_k: n = {} samples, need at least one", n);
  KBRL_CHECK_INPUT(c >= 0 && c <= n, "pass_at_k: c = {} correct of n = {} samples is not in [0, n]",
                   c, n);
  KBRL_CHECK_INPUT(k >= 1 && k <= n, "pass_at_k: k = {} is not in [1, n = {}]", k, n);
  if (n - c < k) return 1.0;  // every k-subset holds a correct sample
  // C(n-c, k) / C(n, k) = prod_{i = n-c+1}^{n} (1 - k / i)
  double all_wrong = 1.0;
  for (int64_t i = n - c + 1; i <= n; ++i) {
    all_wrong *= 1.0 - static_cast<double>(k) / static_cast<double>(i);
  }
  return 1.0 - all_wrong;
}

double expected_best_of_k(const std::vector<double>& scores, int64_t k) {
  const auto n = static_cast<int64_t>(scores.size());
  KBRL_CHECK_INPUT(n >= 1, "expected_best_of_k: no scores");
  KBRL_CHECK_INPUT(k >= 1 && k <= n, "expected_best_of_k: k = {} is not in [1, n = {}]", k, n);
  check_finite(scores, "expected_best_of_k", "scores");
  std::vector<double> sorted = scores;
  std::sort(sorted.begin(), sorted.end());
  // w_i = C(i-1, k-1) / C(n, k) for the i-th smallest (1-based): w_n = k / n and
  // w_{i-1} / w_i = (i - k) / (i - 1).
  double weight = static_cast<double>(k) / static_cast<double>(n);
  double expected = 0.0;
  for (int64_t i = n; i >= k; --i) {
    expected += weight * sorted[static_cast<size_t>(i - 1)];
    if (i > 1) weight *= static_cast<double>(i - k) / static_cast<double>(i - 1);
  }
  return expected;
}

double cohens_h(double p1, double p2) {
  KBRL_CHECK_INPUT(p1 >= 0.0 && p1 <= 1.0, "cohens_h: p1 = {} is not a proportion in [0, 1]", p1);
  KBRL_CHECK_INPUT(p2 >= 0.0 && p2 <= 1.0, "cohens_h: p2 = {} is not a proportion in [0, 1]", p2);
  return 2.0 * std::asin(std::sqrt(p1)) - 2.0 * std::asin(std::sqrt(p2));
}

uint64_t SplitMix64::next() { return splitmix64(state_); }

uint64_t SplitMix64::uniform_below(uint64_t bound) {
  KBRL_CHECK_INPUT(bound >= 1, "SplitMix64::uniform_below: bound must be at least 1");
  // 2^64 mod bound values at the bottom are rejected; the rest is a whole number of bound-cycles.
  const uint64_t threshold = (0 - bound) % bound;
  for (;;) {
    const uint64_t x = next();
    if (x >= threshold) return x % bound;
  }
}

double SplitMix64::uniform01() { return splitmix64_uniform01(state_); }

double mean_difference(const std::vector<double>& a, const std::vector<double>& b) {
  KBRL_CHECK_INPUT(a.size() == b.size() && !a.empty(),
                   "mean_difference: needs two non-empty vectors of one size, got {} and {}",
                   a.size(), b.size());
  double sum = 0.0;
  for (size_t i = 0; i < a.size(); ++i) sum += a[i] - b[i];
  return sum / static_cast<double>(a.size());
}

BootstrapInterval paired_bootstrap(const std::vector<double>& a, const std::vector<double>& b,
                                   const PairedStatistic& statistic, uint64_t seed,
                                   const BootstrapOptions& options) {
  KBRL_CHECK_INPUT(!a.empty(), "paired_bootstrap: no tasks (empty input)");
  KBRL_CHECK_INPUT(a.size() == b.size(),
                   "paired_bootstrap: paired inputs differ in size ({} and {} tasks)", a.size(),
                   b.size());
  check_finite(a, "paired_bootstrap", "a");
  check_finite(b, "paired_bootstrap", "b");
  KBRL_CHECK_INPUT(options.resamples >= 1, "paired_bootstrap: resamples = {}, need at least 1",
                   options.resamples);
  KBRL_CHECK_INPUT(options.alpha > 0.0 && options.alpha < 1.0,
                   "paired_bootstrap: alpha = {} is not in (0, 1)", options.alpha);
  KBRL_CHECK_INPUT(static_cast<bool>(statistic), "paired_bootstrap: empty statistic");

  BootstrapInterval interval;
  interval.estimate = statistic(a, b);
  KBRL_CHECK_INPUT(std::isfinite(interval.estimate),
                   "paired_bootstrap: the statistic of the data is {}, not a finite number",
                   interval.estimate);

  const size_t n = a.size();
  SplitMix64 rng(seed);
  std::vector<double> resampled_a(n);
  std::vector<double> resampled_b(n);
  std::vector<double> distribution(static_cast<size_t>(options.resamples));
  for (size_t r = 0; r < distribution.size(); ++r) {
    for (size_t i = 0; i < n; ++i) {
      const auto task = static_cast<size_t>(rng.uniform_below(n));
      resampled_a[i] = a[task];
      resampled_b[i] = b[task];
    }
    distribution[r] = statistic(resampled_a, resampled_b);
    KBRL_CHECK_INPUT(std::isfinite(distribution[r]),
                     "paired_bootstrap: the statistic of resample {} (seed {}) is {}, not a finite "
                     "number",
                     r, seed, distribution[r]);
  }
  std::sort(distribution.begin(), distribution.end());
  interval.lower = sorted_quantile(distribution, options.alpha / 2.0);
  interval.upper = sorted_quantile(distribution, 1.0 - options.alpha / 2.0);
  return interval;
}

BootstrapInterval paired_bootstrap(const std::vector<double>& a, const std::vector<double>& b,
                                   uint64_t seed, const BootstrapOptions& options) {
  return paired_bootstrap(a, b, mean_difference, seed, options);
}

double mean(const std::vector<double>& values) {
  double sum = 0;
  for (double x : values) sum += x;
  return values.empty() ? 0.0 : sum / static_cast<double>(values.size());
}

double sample_stdev(const std::vector<double>& values) {
  if (values.size() < 2) return 0.0;
  const double m = mean(values);
  double s = 0;
  for (double x : values) s += (x - m) * (x - m);
  return std::sqrt(s / static_cast<double>(values.size() - 1));
}

BootstrapInterval bootstrap_mean(const std::vector<double>& values, uint64_t seed, const BootstrapOptions& options) {
  return paired_bootstrap(values, std::vector<double>(values.size(), 0.0), mean_difference, seed, options);
}

}  // namespace kbrl::stats
