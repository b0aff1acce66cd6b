#include "hypothesis_tests.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

#include <kbrl/error.h>

#include "rank_statistics.h"

namespace kbrl::stats {
namespace {

void check_differences(const std::vector<double>& differences, const char* function) {
  KBRL_CHECK_INPUT(!differences.empty(), "{}: no differences (empty input)", function);
  for (size_t i = 0; i < differences.size(); ++i) {
    KBRL_CHECK_INPUT(std::isfinite(differences[i]),
                     "{}: difference [{}] = {} is not a finite number", function, i,
                     differences[i]);
  }
}

std::vector<double> paired_differences(const std::vector<double>& x, const std::vector<double>& y,
                                       const char* function) {
  KBRL_CHECK_INPUT(x.size() == y.size(), "{}: x has {} values but y has {}", function, x.size(),
                   y.size());
  for (size_t i = 0; i < x.size(); ++i) {
    KBRL_CHECK_INPUT(std::isfinite(x[i]) && std::isfinite(y[i]),
                     "{}: pair [{}] = ({}, {}) is not a pair of finite numbers", function, i, x[i],
                     y[i]);
  }
  std::vector<double> differences(x.size());
  for (size_t i = 0; i < x.size(); ++i) differences[i] = x[i] - y[i];
  return differences;
}

// Two-sided exact p-value of W+ = w (an integer) among n untied ranks. The null distribution
// is built one rank at a time: with ranks 1..r, P(W+ = s) = (P_{r-1}(s) + P_{r-1}(s - r)) / 2.
double exact_signed_rank_p(int64_t n, int64_t w) {
  const int64_t max_sum = n * (n + 1) / 2;
  std::vector<double> probability(static_cast<size_t>(max_sum + 1), 0.0);
  probability[0] = 1.0;
  for (int64_t rank = 1; rank <= n; ++rank) {
    for (int64_t s = rank * (rank + 1) / 2; s >= 0; --s) {
      const double without = probability[static_cast<size_t>(s)];
      const double with = s >= rank ? probability[static_cast<size_t>(s - rank)] : 0.0;
      probability[static_cast<size_t>(s)] = 0.5 * (without + with);
    }
  }
  double lower = 0.0;  // P(W+ <= w)
  double upper = 0.0;  // P(W+ >= w)
  for (int64_t s = 0; s <= max_sum; ++s) {
    if (s <= w) lower += probability[static_cast<size_t>(s)];
    if (s >= w) upper += probability[static_cast<size_t>(s)];
  }
  return std::min(1.0, 2.0 * std::min(lower, upper));
}

// P(X <= m) for X ~ Binomial(n, 1/2), m <= n / 2.
double binomial_half_lower_tail(int64_t n, int64_t m) {
  if (n <= 60) {  // exact: C(60, 30) * 31 < 2^64, the sum < 2^60
    uint64_t coefficient = 1;
    uint64_t sum = 1;
    for (int64_t i = 0; i < m; ++i) {
      coefficient = coefficient * static_cast<uint64_t>(n - i) / static_cast<uint64_t>(i + 1);
      sum += coefficient;
    }
    return std::ldexp(static_cast<double>(sum), -static_cast<int>(n));
  }
  // The terms relative to the largest one, C(n, m) / 2^n, taken from log-gamma.
  const auto nd = static_cast<double>(n);
  const auto md = static_cast<double>(m);
  const double log_top = std::lgamma(nd + 1.0) - std::lgamma(md + 1.0) -
                         std::lgamma(nd - md + 1.0) - nd * std::log(2.0);
  double term = 1.0;
  double sum = 1.0;
  for (int64_t i = m; i >= 1; --i) {  // C(n, i-1) / C(n, i) = i / (n - i + 1)
    term *= static_cast<double>(i) / static_cast<double>(n - i + 1);
    sum += term;
  }
  return sum * std::exp(log_top);
}

// P(X <= m) for X ~ Binomial(n, 1/2), any 0 <= m: the lower tail, or one minus the upper one.
double binomial_half_cdf(int64_t n, int64_t m) {
  if (m >= n) return 1.0;
  if (2 * m <= n) return binomial_half_lower_tail(n, m);
  return 1.0 - binomial_half_lower_tail(n, n - m - 1);
}

}  // namespace

std::string_view to_string(PValueMethod method) { return enum_name(method); }

WilcoxonResult wilcoxon_signed_rank(const std::vector<double>& differences,
                                    const WilcoxonOptions& options) {
  check_differences(differences, "wilcoxon_signed_rank");
  KBRL_CHECK_INPUT(options.exact_max_n >= 0 && options.exact_max_n <= 200,
                   "wilcoxon_signed_rank: exact_max_n = {} is not in [0, 200]",
                   options.exact_max_n);
  WilcoxonResult result;
  std::vector<double> magnitudes;
  std::vector<bool> positive;
  for (double d : differences) {
    if (d == 0.0) {
      ++result.n_zero;  // Wilcoxon's method: zeros are dropped before ranking
      continue;
    }
    magnitudes.push_back(std::abs(d));
    positive.push_back(d > 0.0);
  }
  const auto n = static_cast<int64_t>(magnitudes.size());
  KBRL_CHECK_INPUT(n >= 1,
                   "wilcoxon_signed_rank: all {} differences are zero, so there is nothing to rank",
                   differences.size());
  result.n_used = n;

  const std::vector<double> ranks = average_ranks(magnitudes);
  for (size_t i = 0; i < ranks.size(); ++i)
    (positive[i] ? result.w_plus : result.w_minus) += ranks[i];

  // Tie groups among |d|: sum of t^3 - t over groups of size t.
  std::vector<double> sorted = magnitudes;
  std::sort(sorted.begin(), sorted.end());
  double tie_term = 0.0;
  for (size_t first = 0; first < sorted.size();) {
    size_t last = first;
    while (last + 1 < sorted.size() && sorted[last + 1] == sorted[first]) ++last;
    const auto t = static_cast<double>(last - first + 1);
    tie_term += t * t * t - t;
    first = last + 1;
  }
  result.ties = tie_term > 0.0;

  if (!result.ties && n <= options.exact_max_n) {
    result.method = PValueMethod::exact;
    result.p_value = exact_signed_rank_p(n, std::llround(result.w_plus));
    return result;
  }
  result.method = PValueMethod::normal_approximation;
  const auto nd = static_cast<double>(n);
  const double mean = nd * (nd + 1.0) / 4.0;
  const double variance = nd * (nd + 1.0) * (2.0 * nd + 1.0) / 24.0 - tie_term / 48.0;
  const double deviation = result.w_plus - mean;
  double magnitude = std::abs(deviation);
  if (options.continuity_correction) magnitude = std::max(0.0, magnitude - 0.5);
  result.z = deviation == 0.0 ? 0.0 : std::copysign(magnitude, deviation) / std::sqrt(variance);
  result.p_value = std::min(1.0, std::erfc(std::abs(result.z) / std::sqrt(2.0)));
  return result;
}

WilcoxonResult wilcoxon_signed_rank_paired(const std::vector<double>& x,
                                           const std::vector<double>& y,
                                           const WilcoxonOptions& options) {
  return wilcoxon_signed_rank(paired_differences(x, y, "wilcoxon_signed_rank_paired"), options);
}

SignTestResult sign_test(int64_t positives, int64_t negatives) {
  KBRL_CHECK_INPUT(positives >= 0 && negatives >= 0,
                   "sign_test: counts must be non-negative, got {} positives and {} negatives",
                   positives, negatives);
  const int64_t n = positives + negatives;
  KBRL_CHECK_INPUT(n >= 1, "sign_test: no nonzero differences, so there is nothing to test");
  SignTestResult result;
  result.positives = positives;
  result.negatives = negatives;
  result.p_value = std::min(1.0, 2.0 * binomial_half_lower_tail(n, std::min(positives, negatives)));
  result.p_less = std::min(1.0, binomial_half_cdf(n, positives));
  result.p_greater = std::min(1.0, binomial_half_cdf(n, negatives));  // P(X >= k) = P(n - X <= n - k)
  return result;
}

SignTestResult sign_test(const std::vector<double>& differences) {
  check_differences(differences, "sign_test");
  int64_t positives = 0;
  int64_t negatives = 0;
  int64_t zeros = 0;
  for (double d : differences) {
    if (d > 0.0)
      ++positives;
    else if (d < 0.0)
      ++negatives;
    else
      ++zeros;
  }
  KBRL_CHECK_INPUT(positives + negatives >= 1,
                   "sign_test: all {} differences are zero, so there is nothing to test",
                   differences.size());
  SignTestResult result = sign_test(positives, negatives);
  result.n_zero = zeros;
  return result;
}

SignTestResult sign_test_paired(const std::vector<double>& x, const std::vector<double>& y) {
  return sign_test(paired_differences(x, y, "sign_test_paired"));
}

}  // namespace kbrl::stats
