#include "rank_statistics.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <numeric>

#include <kbrl/error.h>

namespace kbrl::stats {
namespace {

void check_finite(const std::vector<double>& values, const char* function, const char* name) {
  for (size_t i = 0; i < values.size(); ++i) {
    KBRL_CHECK_INPUT(std::isfinite(values[i]), "{}: {}[{}] = {} is not a finite number", function,
                     name, i, values[i]);
  }
}

bool is_constant(const std::vector<double>& values) {
  const auto [min, max] = std::minmax_element(values.begin(), values.end());
  return *min == *max;
}

// Pearson's r of checked input; `function` names the caller in messages.
double correlation(const std::vector<double>& x, const std::vector<double>& y, const char* function,
                   const char* x_name, const char* y_name) {
  // Tested on the values: a constant vector's computed mean can be off by an ulp, and Sxx with it.
  KBRL_CHECK_INPUT(!is_constant(x), "{}: {} is constant, so the correlation is undefined", function,
                   x_name);
  KBRL_CHECK_INPUT(!is_constant(y), "{}: {} is constant, so the correlation is undefined", function,
                   y_name);
  const auto n = static_cast<double>(x.size());
  const double mean_x = std::accumulate(x.begin(), x.end(), 0.0) / n;
  const double mean_y = std::accumulate(y.begin(), y.end(), 0.0) / n;
  double sxx = 0.0;
  double syy = 0.0;
  double sxy = 0.0;
  for (size_t i = 0; i < x.size(); ++i) {
    sxx += (x[i] - mean_x) * (x[i] - mean_x);
    syy += (y[i] - mean_y) * (y[i] - mean_y);
    sxy += (x[i] - mean_x) * (y[i] - mean_y);
  }
  return std::clamp(sxy / std::sqrt(sxx * syy), -1.0, 1.0);
}

void check_pair(const std::vector<double>& x, const std::vector<double>& y, size_t min_size,
                const char* function) {
  KBRL_CHECK_INPUT(x.size() == y.size(), "{}: x has {} values but y has {}", function, x.size(),
                   y.size());
  KBRL_CHECK_INPUT(x.size() >= min_size, "{}: {} values, need at least {}", function, x.size(),
                   min_size);
  check_finite(x, function, "x");
  check_finite(y, function, "y");
}

// Whether two rank vectors of n values are equal or reversed, i.e. perfectly (anti)correlated.
// (Ranks are half-integers, so the comparison is exact where a computed |r| = 1 might not be.)
bool same_or_reversed(const std::vector<double>& rank_a, const std::vector<double>& rank_b) {
  const auto top = static_cast<double>(rank_a.size()) + 1.0;
  bool same = true;
  bool reversed = true;
  for (size_t i = 0; i < rank_a.size(); ++i) {
    same = same && rank_a[i] == rank_b[i];
    reversed = reversed && rank_a[i] == top - rank_b[i];
  }
  return same || reversed;
}

}  // namespace

std::vector<double> average_ranks(const std::vector<double>& values) {
  check_finite(values, "average_ranks", "values");
  std::vector<size_t> order(values.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t i, size_t j) { return values[i] < values[j]; });
  std::vector<double> ranks(values.size());
  for (size_t first = 0; first < order.size();) {
    size_t last = first;  // [first, last] is one group of equal values
    while (last + 1 < order.size() && values[order[last + 1]] == values[order[first]]) ++last;
    // Positions first..last hold ranks first+1..last+1; each gets their average.
    const double rank = (static_cast<double>(first) + static_cast<double>(last)) / 2.0 + 1.0;
    for (size_t p = first; p <= last; ++p) ranks[order[p]] = rank;
    first = last + 1;
  }
  return ranks;
}

double pearson(const std::vector<double>& x, const std::vector<double>& y) {
  check_pair(x, y, 2, "pearson");
  return correlation(x, y, "pearson", "x", "y");
}

double spearman(const std::vector<double>& x, const std::vector<double>& y) {
  check_pair(x, y, 2, "spearman");
  return correlation(average_ranks(x), average_ranks(y), "spearman", "x", "y");
}

double partial_spearman(const std::vector<double>& x, const std::vector<double>& y,
                        const std::vector<double>& z) {
  check_pair(x, y, 3, "partial_spearman");
  KBRL_CHECK_INPUT(z.size() == x.size(), "partial_spearman: x and y have {} values but z has {}",
                   x.size(), z.size());
  check_finite(z, "partial_spearman", "z");
  const std::vector<double> rank_x = average_ranks(x);
  const std::vector<double> rank_y = average_ranks(y);
  const std::vector<double> rank_z = average_ranks(z);
  KBRL_CHECK_INPUT(!same_or_reversed(rank_x, rank_z) && !same_or_reversed(rank_y, rank_z),
                   "partial_spearman: the covariate z is perfectly rank correlated with x or y, so "
                   "the partial correlation is undefined");
  const double r_xy = correlation(rank_x, rank_y, "partial_spearman", "x", "y");
  const double r_xz = correlation(rank_x, rank_z, "partial_spearman", "x", "z");
  const double r_yz = correlation(rank_y, rank_z, "partial_spearman", "y", "z");
  const double denominator = (1.0 - r_xz * r_xz) * (1.0 - r_yz * r_yz);
  KBRL_CHECK_INPUT(denominator > 0.0,
                   "partial_spearman: the covariate z is perfectly rank correlated with x or y "
                   "(r_xz = {}, r_yz = {}), so the partial correlation is undefined",
                   r_xz, r_yz);
  return std::clamp((r_xy - r_xz * r_yz) / std::sqrt(denominator), -1.0, 1.0);
}

namespace {

/// The continued fraction of I_x(a, b) (A&S 26.5.8), by the modified Lentz method.
double beta_continued_fraction(double x, double a, double b) {
  constexpr double tiny = 1e-300, eps = 1e-15;
  double c = 1.0, d = 1.0 - (a + b) * x / (a + 1.0);
  if (std::fabs(d) < tiny) d = tiny;
  d = 1.0 / d;
  double h = d;
  for (int m = 1; m <= 10000; ++m) {
    const double md = m;
    double num = md * (b - md) * x / ((a + 2 * md - 1) * (a + 2 * md));
    d = 1.0 + num * d;
    if (std::fabs(d) < tiny) d = tiny;
    c = 1.0 + num / c;
    if (std::fabs(c) < tiny) c = tiny;
    d = 1.0 / d;
    h *= d * c;
    num = -(a + md) * (a + b + md) * x / ((a + 2 * md) * (a + 2 * md + 1));
    d = 1.0 + num * d;
    if (std::fabs(d) < tiny) d = tiny;
    c = 1.0 + num / c;
    if (std::fabs(c) < tiny) c = tiny;
    d = 1.0 / d;
    const double delta = d * c;
    h *= delta;
    if (std::fabs(delta - 1.0) < eps) return h;
  }
  throw InternalError("incomplete beta: the continued fraction did not converge");
}

}  // namespace

double regularized_incomplete_beta(double x, double a, double b) {
  KBRL_CHECK_INPUT(a > 0 && b > 0 && x >= 0 && x <= 1,
                   "regularized_incomplete_beta: need a, b > 0 and x in [0, 1] (got x={}, a={}, b={})", x,
                   a, b);
  if (x == 0 || x == 1) return x;
  const double log_front =
      std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x);
  // The fraction converges fast for x < (a + 1) / (a + b + 2); otherwise use the symmetry.
  if (x < (a + 1) / (a + b + 2)) return std::exp(log_front) * beta_continued_fraction(x, a, b) / a;
  return 1.0 - std::exp(log_front) * beta_continued_fraction(1 - x, b, a) / b;
}

double correlation_p_value(double r, int64_t n) {
  KBRL_CHECK_INPUT(n >= 3 && std::isfinite(r) && r >= -1 && r <= 1,
                   "correlation_p_value: need n >= 3 and r in [-1, 1] (got r={}, n={})", r, n);
  if (std::fabs(r) >= 1) return 0.0;
  const double df = static_cast<double>(n - 2);
  const double t2 = r * r * df / (1 - r * r);
  return regularized_incomplete_beta(df / (df + t2), df / 2, 0.5);
}

}  // namespace kbrl::stats
