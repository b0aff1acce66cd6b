#pragma once
// The statistics of the experiments (docs/design.md, "Statistics"): estimators of pass@k and best-of-k
// from n samples per task, a paired bootstrap over tasks, and Cohen's h. The rank correlations are
// in rank_statistics.h and the paired tests in hypothesis_tests.h; this header includes both, so
// one include gives the whole library. (Timing statistics are another thing: harness/stats.h.)
//
// Everything is double precision, in namespace kbrl::stats. Bad input (an empty or mismatched
// vector, a NaN or infinite value, k > n, a probability outside [0, 1]) throws kbrl::InputError
// with a message that names the function and the offending value.
#include <cstdint>
#include <functional>
#include <vector>

#include "hypothesis_tests.h"
#include "rank_statistics.h"

namespace kbrl::stats {

/// Unbiased estimator of pass@k from n samples of which c are correct: the probability that a
/// uniformly random k-subset of the n samples holds at least one correct sample,
///   pass@k = 1 - C(n - c, k) / C(n, k),
/// computed in the stable product form 1 - prod_{i = n-c+1}^{n} (1 - k / i), and 1 when n - c < k.
/// Source: Chen et al. 2021, "Evaluating Large Language Models Trained on Code" (Codex/HumanEval),
/// eq. 1 and its numerically stable form in Figure 3. Requires 0 <= c <= n and 1 <= k <= n.
double pass_at_k(int64_t n, int64_t c, int64_t k);

/// Expected best-of-k from n >= k samples of a score (e.g. speedup, failures scored 0): the mean,
/// over all C(n, k) k-subsets of the samples, of the subset's maximum. With the scores sorted
/// ascending, x_(1) <= ... <= x_(n), x_(i) is the maximum of C(i-1, k-1) of the subsets, so
///   E[best of k] = sum_{i = k}^{n} C(i-1, k-1) / C(n, k) * x_(i).
/// The weights are computed by a running ratio from w_n = k / n down, w_{i-1} = w_i (i-k) / (i-1),
/// so no binomial coefficient is formed. It is the U-statistic with kernel max(x_1..x_k), the
/// unbiased estimator of E[max of k i.i.d. draws] (Hoeffding 1948, "A class of statistics with
/// asymptotically normal distribution"); with 0/1 scores it equals pass_at_k. k = 1 gives the mean
/// and k = n the maximum. Requires finite scores and 1 <= k <= n.
double expected_best_of_k(const std::vector<double>& scores, int64_t k);

/// Cohen's h, the effect size of the difference of two proportions:
///   h = 2 asin(sqrt(p1)) - 2 asin(sqrt(p2)),
/// signed (positive when p1 > p2); |h| = 0.2, 0.5, 0.8 are Cohen's "small", "medium", "large".
/// Source: Cohen 1988, "Statistical Power Analysis for the Behavioral Sciences", 2nd ed., ch. 6
/// (the arcsine transformation phi = 2 arcsin sqrt(P)). Requires p1, p2 in [0, 1].
double cohens_h(double p1, double p2);

/// SplitMix64, the bootstrap's generator: a fixed algorithm with the same output on every
/// platform and standard library (unlike std::default_random_engine and std's distributions).
/// Source: Steele, Lea & Flood 2014, "Fast Splittable Pseudorandom Number Generators" (OOPSLA),
/// in the 64-bit form of Vigna's reference splitmix64.c.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  /// The next 64 random bits.
  uint64_t next();
  /// A uniform integer in [0, bound) without modulo bias (rejection of the low 2^64 mod bound
  /// values); bound >= 1.
  uint64_t uniform_below(uint64_t bound);
  /// A uniform double in [0, 1) from the top 53 bits of next().
  double uniform01();

 private:
  uint64_t state_;
};

/// The mean of `values`; 0 for none.
double mean(const std::vector<double>& values);
/// The sample standard deviation (n - 1) of `values`; 0 for fewer than two.
double sample_stdev(const std::vector<double>& values);

/// A statistic of paired per-task values (a[i] and b[i] belong to task i).
using PairedStatistic =
    std::function<double(const std::vector<double>& a, const std::vector<double>& b)>;

/// mean(a[i] - b[i]), the default statistic of paired_bootstrap.
double mean_difference(const std::vector<double>& a, const std::vector<double>& b);

/// Settings of paired_bootstrap. The seed is an argument of its own, never defaulted.
struct BootstrapOptions {
  int64_t resamples = 10000;  // B, the number of bootstrap resamples (>= 1)
  double alpha = 0.05;  // the interval is the (1 - alpha) percentile interval, alpha in (0, 1)
};

/// A point estimate and its percentile interval.
struct BootstrapInterval {
  double estimate = 0.0;  // the statistic of the original data
  double lower = 0.0;     // the alpha/2 quantile of the bootstrap distribution
  double upper = 0.0;     // the 1 - alpha/2 quantile
  bool operator==(const BootstrapInterval&) const = default;
};

/// Paired bootstrap over tasks: each of B resamples draws n task indices uniformly with
/// replacement (SplitMix64 seeded with `seed`) and keeps each task's pair together, so the
/// correlation between a[i] and b[i] is preserved; the statistic of every resample forms the
/// bootstrap distribution. The interval is the percentile interval: its alpha/2 and 1 - alpha/2
/// quantiles, by linear interpolation between order statistics (R's type 7, as harness/stats.h).
/// Source: Efron & Tibshirani 1993, "An Introduction to the Bootstrap", ch. 13 (percentile
/// intervals). The same seed, data and options give the same interval on every platform.
/// Requires a.size() == b.size() >= 1, finite values, and a statistic that is finite on the data
/// and on every resample (otherwise InputError).
BootstrapInterval paired_bootstrap(const std::vector<double>& a, const std::vector<double>& b,
                                   const PairedStatistic& statistic, uint64_t seed,
                                   const BootstrapOptions& options = {});

/// paired_bootstrap of mean_difference: the interval of mean(a - b).
BootstrapInterval paired_bootstrap(const std::vector<double>& a, const std::vector<double>& b,
                                   uint64_t seed, const BootstrapOptions& options = {});

/// The mean of per-task values and its percentile interval, resampling the tasks (paired_bootstrap
/// of the values against zeros): the interval the headline numbers carry.
BootstrapInterval bootstrap_mean(const std::vector<double>& values, uint64_t seed,
                                 const BootstrapOptions& options = {});

}  // namespace kbrl::stats
