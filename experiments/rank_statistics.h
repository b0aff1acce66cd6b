#pragma once
// Rank correlations of the experiments: Spearman's rho with ties and partial Spearman controlling
// for one covariate (e.g. rho(NLL, speedup) controlling for length). Part of kbrl::experiments;
// include experiments/statistics.h for the whole library. Bad input throws kbrl::InputError.
#include <cstdint>
#include <vector>

namespace kbrl::stats {

/// Ranks 1..n of `values`, tied values getting the average of the ranks they span ("fractional"
/// or "mid" ranks: {10, 20, 20, 30} -> {1, 2.5, 2.5, 4}). Ties are exact equality. Requires
/// finite values.
std::vector<double> average_ranks(const std::vector<double>& values);

/// Pearson's product-moment correlation, sum((x - mean x)(y - mean y)) / sqrt(Sxx Syy), clamped to
/// [-1, 1]. Requires x.size() == y.size() >= 2, finite values, and neither x nor y constant (the
/// correlation is then undefined).
double pearson(const std::vector<double>& x, const std::vector<double>& y);

/// Spearman's rank correlation with ties: Pearson's correlation of the average ranks of x and of
/// y. Without ties it equals 1 - 6 sum(d_i^2) / (n (n^2 - 1)); with ties that shortcut is wrong and
/// this form is the standard one (Spearman 1904, "The proof and measurement of association between
/// two things"; Kendall & Gibbons 1990, "Rank Correlation Methods", 5th ed.;
/// scipy.stats.spearmanr). Requirements as pearson's, on the ranks.
double spearman(const std::vector<double>& x, const std::vector<double>& y);

/// Partial Spearman correlation of x and y controlling for z: x, y and z are each replaced by
/// their average ranks, r_xy, r_xz and r_yz are the Spearman correlations, and
///   r_xy.z = (r_xy - r_xz r_yz) / sqrt((1 - r_xz^2) (1 - r_yz^2)),
/// the first-order partial correlation formula (Yule 1907, "On the theory of correlation for any
/// number of variables"; Fisher 1924) applied to ranks. It equals the Pearson correlation of the
/// residuals of rank(x) and rank(y) after a least-squares regression of each on rank(z).
/// Requires three vectors of one size >= 3, finite values, none constant, and z not perfectly rank
/// correlated with x or y (|r_xz| < 1 and |r_yz| < 1; the partial correlation is then undefined).
double partial_spearman(const std::vector<double>& x, const std::vector<double>& y,
                        const std::vector<double>& z);

/// The two-sided p-value of a correlation r of n pairs under the null of no association, by the
/// t approximation t = r sqrt((n - 2) / (1 - r^2)) with n - 2 degrees of freedom (what
/// scipy.stats.spearmanr and pearsonr report): p = I_{(n-2)/(n-2+t^2)}((n-2)/2, 1/2), the
/// regularized incomplete beta function (Abramowitz & Stegun 26.7.1 with 26.5.8's continued
/// fraction, evaluated by the modified Lentz method). For a partial correlation pass n - 1 (one
/// covariate removes one degree of freedom). |r| = 1 gives 0. Requires n >= 3 and r in [-1, 1].
double correlation_p_value(double r, int64_t n);

/// I_x(a, b), the regularized incomplete beta function, for a, b > 0 and x in [0, 1].
double regularized_incomplete_beta(double x, double a, double b);

}  // namespace kbrl::stats
