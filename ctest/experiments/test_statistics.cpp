// pass@k, expected best-of-k, Cohen's h, SplitMix64 and the paired bootstrap against hand-worked
// values, brute-force enumeration and published references (named at each test).
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>
#include <vector>

#include <gtest/gtest.h>
#include <kbrl/error.h>

#include <experiments/statistics.h>

namespace kbrl::stats {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// --- pass@k (Chen et al. 2021, eq. 1: 1 - C(n-c, k) / C(n, k)) ---

TEST(PassAtK, HandWorkedValues) {
  EXPECT_NEAR(pass_at_k(10, 3, 1), 0.3, 1e-15);                // k = 1 is c / n
  EXPECT_NEAR(pass_at_k(10, 3, 2), 1.0 - 21.0 / 45.0, 1e-15);  // C(7,2) = 21, C(10,2) = 45
  EXPECT_NEAR(pass_at_k(10, 3, 7), 1.0 - 1.0 / 120.0, 1e-15);  // C(7,7) = 1, C(10,7) = 120
  EXPECT_EQ(pass_at_k(10, 3, 8), 1.0);  // n - c = 7 < 8: every 8-subset holds a correct sample
  EXPECT_EQ(pass_at_k(10, 0, 5), 0.0);
  EXPECT_EQ(pass_at_k(10, 10, 1), 1.0);
  EXPECT_EQ(pass_at_k(1, 1, 1), 1.0);
  EXPECT_EQ(pass_at_k(1, 0, 1), 0.0);
}

TEST(PassAtK, MatchesBruteForceOverAllSubsets) {
  // The fraction of k-subsets of n samples (the first c correct) holding a correct one.
  const int n = 8;
  for (int c = 0; c <= n; ++c) {
    for (int k = 1; k <= n; ++k) {
      int subsets = 0;
      int hits = 0;
      for (uint32_t mask = 0; mask < (1u << n); ++mask) {
        if (std::popcount(mask) != k) continue;
        ++subsets;
        if ((mask & ((1u << c) - 1u)) != 0) ++hits;
      }
      EXPECT_NEAR(pass_at_k(n, c, k), static_cast<double>(hits) / subsets, 1e-14)
          << "c = " << c << ", k = " << k;
    }
  }
}

TEST(PassAtK, LargeNIsStable) {
  // C(199,100) / C(200,100) = 100 / 200, so pass@100 with one correct of 200 is 1/2.
  EXPECT_NEAR(pass_at_k(200, 1, 100), 0.5, 1e-14);
  // Binomials near 10^299 would overflow; the log-gamma form is an independent route.
  const auto log_choose = [](double n, double k) {
    return std::lgamma(n + 1) - std::lgamma(k + 1) - std::lgamma(n - k + 1);
  };
  const double expected = 1.0 - std::exp(log_choose(990, 500) - log_choose(1000, 500));
  EXPECT_NEAR(pass_at_k(1000, 10, 500), expected, 1e-10);
  EXPECT_NEAR(pass_at_k(1000, 10, 500), 0.9990668121978155, 1e-12);  // exact integers in Python
}

TEST(PassAtK, RejectsBadInput) {
  EXPECT_THROW(pass_at_k(0, 0, 1), InputError);
  EXPECT_THROW(pass_at_k(10, -1, 1), InputError);
  EXPECT_THROW(pass_at_k(10, 11, 1), InputError);
  EXPECT_THROW(pass_at_k(10, 3, 0), InputError);
  EXPECT_THROW(pass_at_k(10, 3, 11), InputError);  // k > n
}

// --- expected best-of-k (sum over i of C(i-1, k-1) / C(n, k) x_(i)) ---

TEST(ExpectedBestOfK, HandWorkedValue) {
  // Sorted 0, 1, 2, 3; the six 2-subsets have maxima 1, 2, 3, 2, 3, 3: the mean is 14/6.
  EXPECT_NEAR(expected_best_of_k({0, 1, 3, 2}, 2), 14.0 / 6.0, 1e-15);
}

TEST(ExpectedBestOfK, MeanAtOneAndMaxAtN) {
  const std::vector<double> speedups{1.5, 0.0, 2.25, 0.0, 0.75, 3.0, 1.0};
  EXPECT_NEAR(expected_best_of_k(speedups, 1), 8.5 / 7.0, 1e-15);
  EXPECT_DOUBLE_EQ(expected_best_of_k(speedups, 7), 3.0);
}

TEST(ExpectedBestOfK, MatchesBruteForceOverAllSubsets) {
  // Ties and zeros (failures) included; the order of the input does not matter.
  const std::vector<double> scores{0.0, 1.2, 0.0, 3.5, 1.2, 0.8, 2.0, 0.0, 5.1, 1.2};
  const int n = static_cast<int>(scores.size());
  for (int k = 1; k <= n; ++k) {
    double sum = 0.0;
    int subsets = 0;
    for (uint32_t mask = 0; mask < (1u << n); ++mask) {
      if (std::popcount(mask) != k) continue;
      double best = -kInf;
      for (int i = 0; i < n; ++i) {
        if ((mask >> i) & 1u) best = std::max(best, scores[static_cast<size_t>(i)]);
      }
      sum += best;
      ++subsets;
    }
    EXPECT_NEAR(expected_best_of_k(scores, k), sum / subsets, 1e-12) << "k = " << k;
  }
}

TEST(ExpectedBestOfK, EqualsPassAtKForZeroOneScores) {
  // E[max] of 0/1 scores is P(a 1 in the subset), i.e. pass@k: two estimators, two formulas.
  std::vector<double> small(10, 0.0);
  small[2] = small[5] = small[9] = 1.0;
  EXPECT_NEAR(expected_best_of_k(small, 2), pass_at_k(10, 3, 2), 1e-14);
  std::vector<double> large(2000, 0.0);
  for (size_t i : {7u, 100u, 999u, 1500u, 1999u}) large[i] = 1.0;
  EXPECT_NEAR(expected_best_of_k(large, 1000), pass_at_k(2000, 5, 1000), 1e-12);
  EXPECT_NEAR(expected_best_of_k(large, 3), pass_at_k(2000, 5, 3), 1e-12);
}

TEST(ExpectedBestOfK, RejectsBadInput) {
  EXPECT_THROW(expected_best_of_k({}, 1), InputError);
  EXPECT_THROW(expected_best_of_k({1, 2}, 0), InputError);
  EXPECT_THROW(expected_best_of_k({1, 2}, 3), InputError);  // k > n
  EXPECT_THROW(expected_best_of_k({1, kNaN}, 1), InputError);
  EXPECT_THROW(expected_best_of_k({1, kInf}, 1), InputError);
}

// --- Cohen's h (Cohen 1988, ch. 6: phi = 2 arcsin sqrt(P)) ---

TEST(CohensH, TableValues) {
  // Cohen's table of phi: phi(.50) = 1.5708 and phi(.30) = 1.1593, so h = .4115 (a small-to-medium
  // effect); four decimals as printed.
  EXPECT_NEAR(cohens_h(0.5, 0.3), 1.5708 - 1.1593, 1e-4);
  EXPECT_NEAR(cohens_h(0.3, 0.5), -(1.5708 - 1.1593), 1e-4);     // signed
  EXPECT_NEAR(cohens_h(0.5, 0.0), std::numbers::pi / 2, 1e-15);  // asin(sqrt(1/2)) = pi/4
  EXPECT_NEAR(cohens_h(1.0, 0.0), std::numbers::pi, 1e-15);      // the largest possible h
  EXPECT_EQ(cohens_h(0.42, 0.42), 0.0);
}

TEST(CohensH, RejectsBadInput) {
  EXPECT_THROW(cohens_h(-0.1, 0.5), InputError);
  EXPECT_THROW(cohens_h(0.5, 1.1), InputError);
  EXPECT_THROW(cohens_h(kNaN, 0.5), InputError);
}

// --- SplitMix64 ---

TEST(SplitMix64, ReferenceSequence) {
  // Rosetta Code, "Pseudo-random numbers/Splitmix64": seed 1234567 gives these five outputs.
  SplitMix64 rng(1234567);
  for (uint64_t expected : {6457827717110365317ULL, 3203168211198807973ULL, 9817491932198370423ULL,
                            4593380528125082431ULL, 16408922859458223821ULL}) {
    EXPECT_EQ(rng.next(), expected);
  }
}

TEST(SplitMix64, UniformDraws) {
  SplitMix64 rng(42);
  EXPECT_EQ(rng.uniform_below(1), 0u);
  EXPECT_THROW(rng.uniform_below(0), InputError);
  // Chi-square over 10 bins, 100000 draws: 9 degrees of freedom, 99.9% quantile 27.9.
  std::vector<double> counts(10, 0.0);
  double sum01 = 0.0;
  for (int i = 0; i < 100000; ++i) {
    const uint64_t bin = rng.uniform_below(10);
    ASSERT_LT(bin, 10u);
    counts[bin] += 1.0;
    const double u = rng.uniform01();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum01 += u;
  }
  double chi_square = 0.0;
  for (double count : counts) chi_square += (count - 10000.0) * (count - 10000.0) / 10000.0;
  EXPECT_LT(chi_square, 27.9);
  EXPECT_NEAR(sum01 / 100000.0, 0.5, 0.005);  // sd of the mean: sqrt(1/12 / 1e5) = 0.0009
}

// --- paired bootstrap ---

std::vector<double> normal_draws(SplitMix64& rng, size_t n, double mean, double sd) {
  std::vector<double> draws(n);
  for (double& draw : draws) {  // Box-Muller; 1 - u keeps the log's argument in (0, 1]
    const double radius = std::sqrt(-2.0 * std::log(1.0 - rng.uniform01()));
    draw = mean + sd * radius * std::cos(2.0 * std::numbers::pi * rng.uniform01());
  }
  return draws;
}

TEST(PairedBootstrap, DeterministicForASeed) {
  const std::vector<double> a{1.2, 0.0, 2.5, 1.1, 3.0, 0.7, 1.9, 2.2};
  const std::vector<double> b{1.0, 0.4, 1.5, 1.3, 2.1, 0.2, 1.0, 2.0};
  const BootstrapInterval first = paired_bootstrap(a, b, 2024, {.resamples = 2000});
  EXPECT_EQ(paired_bootstrap(a, b, 2024, {.resamples = 2000}), first);
  const BootstrapInterval other = paired_bootstrap(a, b, 2025, {.resamples = 2000});
  EXPECT_TRUE(other.lower != first.lower || other.upper != first.upper);
  EXPECT_EQ(other.estimate, first.estimate);
}

TEST(PairedBootstrap, EstimateIsTheMeanDifferenceAndLiesInTheInterval) {
  const std::vector<double> a{1.2, 0.0, 2.5, 1.1, 3.0, 0.7, 1.9, 2.2};
  const std::vector<double> b{1.0, 0.4, 1.5, 1.3, 2.1, 0.2, 1.0, 2.0};
  const BootstrapInterval interval = paired_bootstrap(a, b, 7);
  // Differences .2 -.4 1 -.2 .9 .5 .9 .2 sum to 3.1.
  EXPECT_NEAR(interval.estimate, 3.1 / 8.0, 1e-15);
  EXPECT_LT(interval.lower, interval.estimate);
  EXPECT_GT(interval.upper, interval.estimate);
  // No resample mean leaves [min, max] of the differences.
  EXPECT_GE(interval.lower, -0.4);
  EXPECT_LE(interval.upper, 1.0);
}

TEST(MeanAndSampleStdev, AreTheUsualOnesWithZerosForTooFewValues) {
  EXPECT_DOUBLE_EQ(mean({1.0, 2.0, 6.0}), 3.0);
  EXPECT_DOUBLE_EQ(sample_stdev({1.0, 2.0, 6.0}), std::sqrt(7.0));  // (4 + 1 + 9) / 2
  EXPECT_EQ(mean({}), 0.0);
  EXPECT_EQ(sample_stdev({5.0}), 0.0);
}

TEST(BootstrapMean, IsTheMeanWithAnIntervalOverTheValues) {
  const std::vector<double> v = {0.0, 1.0, 1.0, 0.0, 1.0, 0.5};
  const BootstrapInterval r = bootstrap_mean(v, 5);
  EXPECT_DOUBLE_EQ(r.estimate, 3.5 / 6.0);
  EXPECT_LT(r.lower, r.estimate);
  EXPECT_GT(r.upper, r.estimate);
  EXPECT_GE(r.lower, 0.0);
  EXPECT_LE(r.upper, 1.0);
  EXPECT_EQ(bootstrap_mean(v, 5), r);
  const BootstrapInterval c = bootstrap_mean({0.25, 0.25, 0.25}, 1);
  EXPECT_DOUBLE_EQ(c.lower, 0.25);
  EXPECT_DOUBLE_EQ(c.upper, 0.25);
}

TEST(PairedBootstrap, ZeroVarianceGivesAZeroWidthInterval) {
  const BootstrapInterval shifted = paired_bootstrap({1.5, 2.5, 3.5, 9.5}, {1, 2, 3, 9}, 1);
  EXPECT_EQ(shifted.estimate, 0.5);
  EXPECT_EQ(shifted.lower, 0.5);
  EXPECT_EQ(shifted.upper, 0.5);
  // Pairs are kept together: a == b differs a lot across tasks, yet every difference is 0. A
  // bootstrap that resampled a and b separately would give a wide interval here.
  const std::vector<double> tasks{0.1, 5.0, 2.0, 9.0, 3.3};
  const BootstrapInterval paired = paired_bootstrap(tasks, tasks, 1);
  EXPECT_EQ(paired.lower, 0.0);
  EXPECT_EQ(paired.upper, 0.0);
  const BootstrapInterval one_task = paired_bootstrap({4.0}, {1.0}, 1);
  EXPECT_EQ(one_task, (BootstrapInterval{3.0, 3.0, 3.0}));
}

TEST(PairedBootstrap, PercentileQuantilesOfAKnownDistribution) {
  // Two tasks with differences 0 and 1: a resample's mean is 0, 1/2 or 1 with probabilities
  // 1/4, 1/2, 1/4. The 60% interval takes the 20% and 80% quantiles: 0 and 1 (the 40% and 60%
  // quantiles would both be 1/2). The 40% interval takes the 30% and 70% quantiles: both 1/2.
  const BootstrapInterval wide =
      paired_bootstrap({0, 1}, {0, 0}, 3, {.resamples = 20000, .alpha = 0.4});
  EXPECT_EQ(wide.estimate, 0.5);
  EXPECT_EQ(wide.lower, 0.0);
  EXPECT_EQ(wide.upper, 1.0);
  const BootstrapInterval narrow =
      paired_bootstrap({0, 1}, {0, 0}, 3, {.resamples = 20000, .alpha = 0.6});
  EXPECT_EQ(narrow.lower, 0.5);
  EXPECT_EQ(narrow.upper, 0.5);
}

TEST(PairedBootstrap, CustomStatistic) {
  // Ratio of sums: a = 2 b exactly, so every resample's ratio is exactly 2.
  const PairedStatistic ratio = [](const std::vector<double>& a, const std::vector<double>& b) {
    double sum_a = 0.0;
    double sum_b = 0.0;
    for (size_t i = 0; i < a.size(); ++i) {
      sum_a += a[i];
      sum_b += b[i];
    }
    return sum_a / sum_b;
  };
  const BootstrapInterval interval = paired_bootstrap({2, 6, 10, 4}, {1, 3, 5, 2}, ratio, 11);
  EXPECT_EQ(interval, (BootstrapInterval{2.0, 2.0, 2.0}));
  // Pearson's r as the statistic: its interval lies within [-1, 1] and around the estimate.
  const std::vector<double> x{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  const std::vector<double> y{2, 1, 4, 3, 6, 5, 8, 7, 10, 9, 12, 11};
  const BootstrapInterval rho = paired_bootstrap(
      x, y, [](const auto& a, const auto& b) { return pearson(a, b); }, 5, {.resamples = 500});
  EXPECT_EQ(rho.estimate, pearson(x, y));
  EXPECT_LE(rho.lower, rho.estimate);
  EXPECT_GE(rho.upper, rho.estimate);
  EXPECT_LE(rho.upper, 1.0);
}

// Fraction of `datasets` synthetic paired datasets whose interval covers the true difference 1.
double coverage(double alpha, int datasets) {
  SplitMix64 data_rng(99);
  int covered = 0;
  for (int d = 0; d < datasets; ++d) {
    const std::vector<double> difficulty = normal_draws(data_rng, 40, 5.0, 3.0);
    const std::vector<double> noise = normal_draws(data_rng, 40, 1.0, 2.0);
    std::vector<double> a(difficulty);
    for (size_t i = 0; i < a.size(); ++i) a[i] += noise[i];
    const BootstrapInterval interval = paired_bootstrap(
        a, difficulty, 1000 + static_cast<uint64_t>(d), {.resamples = 1000, .alpha = alpha});
    if (interval.lower <= 1.0 && 1.0 <= interval.upper) ++covered;
  }
  return static_cast<double>(covered) / datasets;
}

TEST(PairedBootstrap, CoverageIsRoughlyTheNominalLevel) {
  // 400 datasets of 40 tasks: the binomial sd of a coverage near .95 is .011, near .5 it is .025.
  // The percentile interval undercovers slightly at n = 40, so the bounds are loose but two-sided.
  const double coverage_95 = coverage(0.05, 400);
  EXPECT_GT(coverage_95, 0.90);
  EXPECT_LT(coverage_95, 0.985);
  const double coverage_50 = coverage(0.5, 400);
  EXPECT_GT(coverage_50, 0.40);
  EXPECT_LT(coverage_50, 0.60);
}

TEST(PairedBootstrap, RejectsBadInput) {
  EXPECT_THROW(paired_bootstrap({}, {}, 1), InputError);
  EXPECT_THROW(paired_bootstrap({1, 2}, {1}, 1), InputError);
  EXPECT_THROW(paired_bootstrap({1, kNaN}, {1, 2}, 1), InputError);
  EXPECT_THROW(paired_bootstrap({1, 2}, {1, kInf}, 1), InputError);
  EXPECT_THROW(paired_bootstrap({1, 2}, {1, 2}, 1, {.resamples = 0}), InputError);
  EXPECT_THROW(paired_bootstrap({1, 2}, {1, 2}, 1, {.alpha = 0.0}), InputError);
  EXPECT_THROW(paired_bootstrap({1, 2}, {1, 2}, 1, {.alpha = 1.0}), InputError);
  EXPECT_THROW(paired_bootstrap({1, 2}, {1, 2}, PairedStatistic{}, 1), InputError);
  const PairedStatistic nan_statistic = [](const auto&, const auto&) { return kNaN; };
  EXPECT_THROW(paired_bootstrap({1, 2}, {1, 2}, nan_statistic, 1), InputError);
  // Pearson of a resample that drew one task twice is undefined: reported, not returned as NaN.
  EXPECT_THROW(paired_bootstrap(
                   {1, 2}, {3, 4}, [](const auto& a, const auto& b) { return pearson(a, b); }, 1),
               InputError);
}

}  // namespace
}  // namespace kbrl::stats
