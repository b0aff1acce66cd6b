// Wilcoxon signed-rank and sign tests against a textbook example, a published integer sequence,
// brute-force enumeration of all sign assignments and hand-worked normal approximations.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <kbrl/error.h>

#include <experiments/statistics.h>

namespace kbrl::stats {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Hollander, Wolfe & Chicken, "Nonparametric Statistical Methods", Example 3.1 (Hamilton
// depression scale factor IV of nine patients at the first (x) and second (y) visit after a
// tranquilizer; also the example of R's ?wilcox.test).
const std::vector<double> kFirstVisit{1.83, 0.50, 1.62, 2.48, 1.68, 1.88, 1.55, 3.06, 1.30};
const std::vector<double> kSecondVisit{0.878, 0.647, 0.598, 2.05, 1.06, 1.29, 1.06, 3.14, 1.29};

TEST(Wilcoxon, TextbookExampleExact) {
  // d = x - y: .952 -.147 1.022 .43 .62 .59 .49 -.08 .01; the ranks of |d| put the negatives at
  // 3 (.147) and 2 (.08): W- = 5, W+ = 45 - 5 = 40 (R's V = 40). Subsets of {1..9} with sum <= 5:
  // {}, {1}, {2}, {3}, {1,2}, {4}, {1,3}, {5}, {1,4}, {2,3}: 10, so the one-sided
  // P(W+ >= 40) = 10/512 = 0.0195 (the published one-sided p of the example) and the two-sided
  // p is 20/512.
  const WilcoxonResult result = wilcoxon_signed_rank_paired(kFirstVisit, kSecondVisit);
  EXPECT_EQ(result.w_plus, 40.0);
  EXPECT_EQ(result.w_minus, 5.0);
  EXPECT_EQ(result.n_used, 9);
  EXPECT_EQ(result.n_zero, 0);
  EXPECT_FALSE(result.ties);
  EXPECT_EQ(result.method, PValueMethod::exact);
  EXPECT_EQ(result.z, 0.0);
  EXPECT_DOUBLE_EQ(result.p_value, 20.0 / 512.0);
  // The test is symmetric: y - x swaps W+ and W- and keeps p.
  const WilcoxonResult swapped = wilcoxon_signed_rank_paired(kSecondVisit, kFirstVisit);
  EXPECT_EQ(swapped.w_plus, 5.0);
  EXPECT_EQ(swapped.w_minus, 40.0);
  EXPECT_DOUBLE_EQ(swapped.p_value, result.p_value);
  // The two-sided statistic is min(W+, W-) either way (scipy's wilcoxon: statistic=5.0).
  EXPECT_EQ(result.statistic(), 5.0);
  EXPECT_EQ(swapped.statistic(), 5.0);
}

TEST(Wilcoxon, ZerosAreDroppedBeforeRanking) {
  std::vector<double> x = kFirstVisit;
  std::vector<double> y = kSecondVisit;
  x.insert(x.begin(), 4.0);
  y.insert(y.begin(), 4.0);
  x.push_back(0.25);
  y.push_back(0.25);
  const WilcoxonResult result = wilcoxon_signed_rank_paired(x, y);
  EXPECT_EQ(result.n_zero, 2);
  EXPECT_EQ(result.n_used, 9);
  // Pratt's method, which ranks the zeros too, would give W+ = 40 + 7 * 2 = 54.
  EXPECT_EQ(result.w_plus, 40.0);
  EXPECT_DOUBLE_EQ(result.p_value, 20.0 / 512.0);
}

TEST(Wilcoxon, ExactLowerTailCountsPartitionsIntoDistinctParts) {
  // For s <= n, the subsets of {1..n} with sum s are the partitions of s into distinct parts,
  // OEIS A000009: 1, 1, 1, 2, 2, 3, 4, 5, 6, 8, 10, 12, 15, 18, 22, 27, 32, 38, 46, 54, 64.
  // So with n = 20 and W+ = s, the two-sided p is 2 * sum_{j <= s} A000009(j) / 2^20.
  const int a000009[] = {1, 1, 1, 2, 2, 3, 4, 5, 6, 8, 10, 12, 15, 18, 22, 27, 32, 38, 46, 54, 64};
  double cumulative = 0.0;
  for (int s = 0; s <= 20; ++s) {
    cumulative += a000009[s];
    std::vector<double> d;  // the ranks summing to s are positive (greedy from the top), others not
    int left = s;
    for (int rank = 20; rank >= 1; --rank) {
      const bool positive = rank <= left;
      if (positive) left -= rank;
      d.push_back(positive ? rank : -rank);
    }
    const WilcoxonResult result = wilcoxon_signed_rank(d);
    ASSERT_EQ(result.w_plus, s);
    EXPECT_EQ(result.method, PValueMethod::exact);
    EXPECT_DOUBLE_EQ(result.p_value, 2.0 * cumulative / 1048576.0) << "W+ = " << s;
  }
}

// Two-sided p by enumerating all 2^n sign assignments of the ranks 1..n: the fraction whose W+ is
// at least as far from n(n+1)/4 as the observed one.
double brute_force_p(int n, double w_plus) {
  const double mean = n * (n + 1) / 4.0;
  int64_t extreme = 0;
  for (uint32_t mask = 0; mask < (1u << n); ++mask) {
    double w = 0.0;
    for (int rank = 1; rank <= n; ++rank) {
      if ((mask >> (rank - 1)) & 1u) w += rank;
    }
    if (std::abs(w - mean) >= std::abs(w_plus - mean)) ++extreme;
  }
  return static_cast<double>(extreme) / static_cast<double>(1u << n);
}

TEST(Wilcoxon, ExactMatchesBruteForceEnumeration) {
  // Untied magnitudes, a mix of signs: every n from 1 to 14.
  for (int n = 1; n <= 14; ++n) {
    for (int pattern = 0; pattern < 5; ++pattern) {
      std::vector<double> d;
      for (int i = 0; i < n; ++i) {
        const double magnitude = 0.37 * (i + 1) + 0.001 * ((i * 5) % 7);
        const bool negative = ((i * 3 + pattern * 7 + n) % 5) < pattern;
        d.push_back(negative ? -magnitude : magnitude);
      }
      const WilcoxonResult result = wilcoxon_signed_rank(d);
      ASSERT_EQ(result.method, PValueMethod::exact);
      EXPECT_NEAR(result.p_value, brute_force_p(n, result.w_plus), 1e-14)
          << "n = " << n << ", W+ = " << result.w_plus;
    }
  }
  // The smallest case: one positive difference, W+ = 1 of the two equally likely 0 and 1: p = 1.
  EXPECT_EQ(wilcoxon_signed_rank({2.5}).p_value, 1.0);
}

TEST(Wilcoxon, NormalApproximationWithTies) {
  // d: 15 -7 5 20 0 -9 17 -12 5 -10. The zero is dropped (n = 9); |d| sorted 5 5 7 9 10 12 15 17
  // 20 ranks 1.5 1.5 3 4 5 6 7 8 9. W+ = 7 + 1.5 + 9 + 8 + 1.5 = 27, W- = 3 + 4 + 6 + 5 = 18.
  // Mean 9 * 10 / 4 = 22.5; variance 9 * 10 * 19 / 24 - (2^3 - 2) / 48 = 71.25 - .125 = 71.125.
  // Continuity corrected z = (4.5 - .5) / sqrt(71.125) = 0.474295, p = erfc(z / sqrt 2) = 0.635289.
  const std::vector<double> d{15, -7, 5, 20, 0, -9, 17, -12, 5, -10};
  const WilcoxonResult result = wilcoxon_signed_rank(d);
  EXPECT_EQ(result.w_plus, 27.0);
  EXPECT_EQ(result.w_minus, 18.0);
  EXPECT_EQ(result.n_used, 9);
  EXPECT_EQ(result.n_zero, 1);
  EXPECT_TRUE(result.ties);
  EXPECT_EQ(result.method, PValueMethod::normal_approximation);
  EXPECT_NEAR(result.z, 4.0 / std::sqrt(71.125), 1e-14);
  EXPECT_NEAR(result.p_value, 0.6352893188352069, 1e-12);
  // Without the continuity correction: z = 4.5 / sqrt(71.125) = 0.533582, p = 0.593631.
  const WilcoxonResult uncorrected = wilcoxon_signed_rank(d, {.continuity_correction = false});
  EXPECT_NEAR(uncorrected.z, 4.5 / std::sqrt(71.125), 1e-14);
  EXPECT_NEAR(uncorrected.p_value, 0.5936305914425295, 1e-12);
}

TEST(Wilcoxon, NormalApproximationAboveExactMaxN) {
  // The textbook example with exact_max_n = 5: no ties, so variance 9 * 10 * 19 / 24 = 71.25;
  // z = (40 - 22.5 - .5) / sqrt(71.25) = 2.013986, p = 0.044011 (near the exact 0.0391).
  const WilcoxonResult result =
      wilcoxon_signed_rank_paired(kFirstVisit, kSecondVisit, {.exact_max_n = 5});
  EXPECT_EQ(result.method, PValueMethod::normal_approximation);
  EXPECT_FALSE(result.ties);
  EXPECT_NEAR(result.z, 17.0 / std::sqrt(71.25), 1e-14);
  EXPECT_NEAR(result.p_value, 0.04401098401295146, 1e-12);
  // W+ at its mean: z = 0, p = 1 (the correction does not push it past 0).
  const WilcoxonResult centred = wilcoxon_signed_rank({1, -2, -3, 4}, {.exact_max_n = 0});
  EXPECT_EQ(centred.w_plus, 5.0);
  EXPECT_EQ(centred.z, 0.0);
  EXPECT_EQ(centred.p_value, 1.0);
}

TEST(Wilcoxon, ExactAndNormalAgreeForTwentyFivePairs) {
  std::vector<double> d;
  for (int i = 1; i <= 25; ++i) d.push_back(i % 3 == 0 ? -i : i);  // W- = 3 + 6 + ... + 24 = 108
  const WilcoxonResult exact = wilcoxon_signed_rank(d);
  const WilcoxonResult normal = wilcoxon_signed_rank(d, {.exact_max_n = 24});
  EXPECT_EQ(exact.method, PValueMethod::exact);
  EXPECT_EQ(normal.method, PValueMethod::normal_approximation);
  EXPECT_EQ(exact.w_minus, 108.0);
  EXPECT_GT(exact.p_value, 0.0);
  EXPECT_NEAR(normal.p_value, exact.p_value, 0.005);
}

TEST(Wilcoxon, MethodNames) {
  EXPECT_EQ(to_string(PValueMethod::exact), "exact");
  EXPECT_EQ(to_string(PValueMethod::normal_approximation), "normal_approximation");
}

TEST(Wilcoxon, RejectsBadInput) {
  EXPECT_THROW(wilcoxon_signed_rank({}), InputError);
  EXPECT_THROW(wilcoxon_signed_rank({0.0, 0.0, -0.0}), InputError);  // nothing left to rank
  EXPECT_THROW(wilcoxon_signed_rank({1.0, kNaN}), InputError);
  EXPECT_THROW(wilcoxon_signed_rank({1.0, 2.0}, {.exact_max_n = -1}), InputError);
  EXPECT_THROW(wilcoxon_signed_rank_paired({1, 2, 3}, {1, 2}), InputError);
  EXPECT_THROW(wilcoxon_signed_rank_paired({1, 2}, {1, kNaN}), InputError);
}

// --- sign test (exact binomial, p = 1/2) ---

TEST(SignTest, HandWorkedValues) {
  // 9 of 10: p = 2 * (C(10,0) + C(10,1)) / 2^10 = 2 * (C(10,10) + C(10,9)) / 2^10 = 22/1024.
  EXPECT_DOUBLE_EQ(sign_test(9, 1).p_value, 22.0 / 1024.0);
  EXPECT_DOUBLE_EQ(sign_test(1, 9).p_value, 22.0 / 1024.0);
  EXPECT_DOUBLE_EQ(sign_test(6, 0).p_value, 2.0 / 64.0);
  EXPECT_DOUBLE_EQ(sign_test(8, 2).p_value, 2.0 * (1 + 10 + 45) / 1024.0);
  EXPECT_EQ(sign_test(5, 5).p_value, 1.0);  // 2 * P(X <= 5) > 1 is capped
  EXPECT_EQ(sign_test(1, 0).p_value, 1.0);
  const SignTestResult result = sign_test(9, 1);
  EXPECT_EQ(result.positives, 9);
  EXPECT_EQ(result.negatives, 1);
  EXPECT_EQ(result.n_zero, 0);
  // One-sided: P(X >= 9) = 11/1024 for "more positives", P(X <= 9) = 1023/1024 for "more negatives".
  EXPECT_DOUBLE_EQ(result.p_greater, 11.0 / 1024.0);
  EXPECT_DOUBLE_EQ(result.p_less, 1023.0 / 1024.0);
  EXPECT_DOUBLE_EQ(sign_test(1, 9).p_less, 11.0 / 1024.0);
  EXPECT_DOUBLE_EQ(sign_test(6, 0).p_greater, 1.0 / 64.0);
  EXPECT_EQ(sign_test(0, 6).p_greater, 1.0);
}

// P(X <= m), X ~ Binomial(n, 1/2), by rows of Pascal's triangle halved at every step.
double pascal_lower_tail(int n, int m) {
  std::vector<double> row{1.0};
  for (int r = 1; r <= n; ++r) {
    std::vector<double> next(static_cast<size_t>(r) + 1, 0.0);
    for (int i = 0; i <= r; ++i) {
      const double left = i >= 1 ? row[static_cast<size_t>(i) - 1] : 0.0;
      const double right = i < r ? row[static_cast<size_t>(i)] : 0.0;
      next[static_cast<size_t>(i)] = 0.5 * (left + right);
    }
    row = std::move(next);
  }
  double tail = 0.0;
  for (int i = 0; i <= m; ++i) tail += row[static_cast<size_t>(i)];
  return tail;
}

TEST(SignTest, LargeNMatchesPascalsTriangle) {
  // Both sides of the switch from exact coefficients (n <= 60) to log-gamma terms.
  for (const auto& [n, m] : {std::pair{60, 21}, std::pair{61, 21}, std::pair{100, 30},
                             std::pair{1000, 450}, std::pair{1000, 500}}) {
    const double expected = std::min(1.0, 2.0 * pascal_lower_tail(n, m));
    EXPECT_NEAR(sign_test(m, n - m).p_value / expected, 1.0, 1e-10) << n << " " << m;
  }
  // Exact integers in Python: sum(comb(100, i) for i in range(31)) / 2**100
  // = 3.925069822796835e-05.
  EXPECT_NEAR(sign_test(30, 70).p_value, 2.0 * 3.925069822796835e-05, 1e-15);
  // One-sided tails above n = 60 on either side of n / 2: P(X >= 70) = P(X <= 30), P(X <= 70) = 1 - P(X <= 29).
  EXPECT_NEAR(sign_test(70, 30).p_greater, 3.925069822796835e-05, 1e-15);
  EXPECT_NEAR(sign_test(70, 30).p_less, 1.0 - pascal_lower_tail(100, 29), 1e-12);
  EXPECT_NEAR(sign_test(500, 500).p_greater, pascal_lower_tail(1000, 500), 1e-10);
}

TEST(SignTest, FromDifferences) {
  const SignTestResult result =
      sign_test({0.5, -1.0, 0.0, 2.0, 3.0, 0.0, 1.5, 0.25, 4.0, 0.1, 7.0, 9.0});
  EXPECT_EQ(result.positives, 9);
  EXPECT_EQ(result.negatives, 1);
  EXPECT_EQ(result.n_zero, 2);
  EXPECT_DOUBLE_EQ(result.p_value, 22.0 / 1024.0);
  const SignTestResult paired = sign_test_paired(kFirstVisit, kSecondVisit);  // 7 up, 2 down
  EXPECT_EQ(paired.positives, 7);
  EXPECT_EQ(paired.negatives, 2);
  EXPECT_DOUBLE_EQ(paired.p_value, 2.0 * (1 + 9 + 36) / 512.0);
}

TEST(SignTest, RejectsBadInput) {
  EXPECT_THROW(sign_test(0, 0), InputError);
  EXPECT_THROW(sign_test(-1, 3), InputError);
  EXPECT_THROW(sign_test(std::vector<double>{}), InputError);
  EXPECT_THROW(sign_test({0.0, 0.0}), InputError);
  EXPECT_THROW(sign_test({1.0, kNaN}), InputError);
  EXPECT_THROW(sign_test_paired({1, 2}, {1}), InputError);
}

}  // namespace
}  // namespace kbrl::stats
