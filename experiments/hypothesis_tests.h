#pragma once
// Paired two-sided tests of the experiments: the Wilcoxon signed-rank test and the exact sign
// test (e.g. selection strategy A vs B over the same tasks). Part of kbrl::experiments; include
// experiments/statistics.h for the whole library. Bad input throws kbrl::InputError.
#include <cstdint>
#include <string_view>
#include <vector>

#include <kbrl/enum_names.h>

namespace kbrl::stats {

/// How a p-value was computed.
enum class PValueMethod {
  exact,                 // from the exact null distribution
  normal_approximation,  // from the normal approximation (see WilcoxonOptions)
};
}  // namespace kbrl::stats

template <>
struct kbrl::EnumNames<kbrl::stats::PValueMethod> {
  static constexpr std::string_view what = "p-value method";
  static constexpr EnumEntry<stats::PValueMethod> entries[] = {
      {stats::PValueMethod::exact, "exact"},
      {stats::PValueMethod::normal_approximation, "normal_approximation"}};
};

namespace kbrl::stats {

std::string_view to_string(PValueMethod);

/// Settings of wilcoxon_signed_rank.
struct WilcoxonOptions {
  /// The exact null distribution is used when at most this many differences remain after the
  /// zeros are dropped and their absolute values have no ties; otherwise the normal
  /// approximation. In [0, 200].
  int64_t exact_max_n = 25;
  /// In the normal approximation, shrink |W+ - n(n+1)/4| by 0.5 (not below 0) before dividing by
  /// the standard deviation: the continuity correction for W+'s steps of 1. (R's wilcox.test
  /// subtracts sign(W+ - mean) * 0.5, which differs only when |W+ - n(n+1)/4| < 0.5.)
  bool continuity_correction = true;
};

/// The result of a Wilcoxon signed-rank test.
struct WilcoxonResult {
  double w_plus = 0.0;   // sum of the ranks of |d| over the positive differences
  double w_minus = 0.0;  // sum over the negative ones; w_plus + w_minus = n_used (n_used + 1) / 2
  /// min(w_plus, w_minus): the statistic a two-sided test reports (Wilcoxon 1945, scipy's
  /// wilcoxon, the reports); w_plus is the one-sided statistic.
  double statistic() const { return w_plus < w_minus ? w_plus : w_minus; }
  int64_t n_used = 0;    // nonzero differences, the n of the test
  int64_t n_zero = 0;    // zero differences, dropped before ranking
  bool ties = false;     // whether the nonzero |d| hold ties (they then get average ranks)
  double z = 0.0;        // the normal approximation's statistic (0 when the method is exact)
  double p_value = 1.0;  // two-sided
  PValueMethod method = PValueMethod::exact;
  bool operator==(const WilcoxonResult&) const = default;
};

/// Wilcoxon signed-rank test of the differences d (one sample: is d's distribution symmetric
/// about 0?). Source: Wilcoxon 1945, "Individual comparisons by ranking methods"; Hollander, Wolfe
/// & Chicken 2014, "Nonparametric Statistical Methods", 3rd ed., section 3.1.
///  - Zero differences are dropped before ranking (Wilcoxon's method, scipy's zero_method
///    "wilcox"; Pratt's method would rank them), so n_used = n - n_zero.
///  - The nonzero |d| are ranked 1..n_used, ties getting average ranks (exact equality).
///  - Exact p-value when n_used <= exact_max_n and there are no ties: the null distribution of W+
///    (each rank's sign + or - with probability 1/2) is enumerated by dynamic programming over the
///    ranks, and p = min(1, 2 min(P(W+ <= w+), P(W+ >= w+))).
///  - Otherwise the normal approximation: mean n(n+1)/4, variance
///    n(n+1)(2n+1)/24 - sum_t (t^3 - t)/48 over the groups of t tied |d| (the tie correction),
///    z = sign(W+ - mean) max(0, |W+ - mean| - 0.5) / sd with the continuity correction (without
///    it, z = (W+ - mean) / sd), p = min(1, erfc(|z| / sqrt(2))).
/// Requires finite values and at least one nonzero difference.
WilcoxonResult wilcoxon_signed_rank(const std::vector<double>& differences,
                                    const WilcoxonOptions& options = {});

/// The paired test: wilcoxon_signed_rank of d[i] = x[i] - y[i]; requires x.size() == y.size().
WilcoxonResult wilcoxon_signed_rank_paired(const std::vector<double>& x,
                                           const std::vector<double>& y,
                                           const WilcoxonOptions& options = {});

/// The result of a sign test.
struct SignTestResult {
  int64_t positives = 0;
  int64_t negatives = 0;
  int64_t n_zero = 0;    // zero differences, dropped
  double p_value = 1.0;  // two-sided, exact
  double p_greater = 1.0;  // one-sided, exact: H1 "positives are more likely", P(X >= positives)
  double p_less = 1.0;     // one-sided, exact: H1 "negatives are more likely", P(X <= positives)
  bool operator==(const SignTestResult&) const = default;
};

/// Exact sign test: under the null hypothesis the number of positives among the
/// n = positives + negatives nonzero differences is Binomial(n, 1/2), and
///   p = min(1, 2 P(X <= min(positives, negatives))), X ~ Binomial(n, 1/2) (two-sided),
///   p_greater = P(X >= positives), p_less = P(X <= positives) (one-sided, as the reports quote).
/// Source: Conover 1999, "Practical Nonparametric Statistics", 3rd ed., section 3.4. Exact binomial
/// coefficients for n <= 60, log-gamma terms above. Requires positives, negatives >= 0 and n >= 1.
SignTestResult sign_test(int64_t positives, int64_t negatives);

/// The sign test of the differences: zeros dropped, then sign_test(positives, negatives).
/// Requires finite values and at least one nonzero difference.
SignTestResult sign_test(const std::vector<double>& differences);

/// The paired sign test: sign_test of d[i] = x[i] - y[i]; requires x.size() == y.size().
SignTestResult sign_test_paired(const std::vector<double>& x, const std::vector<double>& y);

}  // namespace kbrl::stats
