// Average ranks, Pearson, Spearman with ties and partial Spearman against hand-worked values, a
// published example and an independent route (regression residuals).
#include <cmath>
#include <limits>
#include <vector>

#include <gtest/gtest.h>
#include <kbrl/error.h>

#include <experiments/statistics.h>

namespace kbrl::stats {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

TEST(AverageRanks, TiesGetTheAverageOfTheirRanks) {
  EXPECT_EQ(average_ranks({10, 20, 20, 30}), (std::vector<double>{1, 2.5, 2.5, 4}));
  EXPECT_EQ(average_ranks({5, 5, 5, 1}), (std::vector<double>{3, 3, 3, 1}));  // ranks 2, 3, 4
  EXPECT_EQ(average_ranks({3, 1, 2}), (std::vector<double>{3, 1, 2}));
  EXPECT_EQ(average_ranks({7, 7}), (std::vector<double>{1.5, 1.5}));
  EXPECT_EQ(average_ranks({-1.0, 0.0, -0.0}), (std::vector<double>{1, 2.5, 2.5}));  // 0 == -0
  EXPECT_TRUE(average_ranks({}).empty());
  EXPECT_THROW(average_ranks({1, kNaN}), InputError);
}

TEST(Pearson, HandWorkedValue) {
  // x - 3 = -2 -1 0 1 2, y - 4 = -2 0 1 0 1: Sxy = 6, Sxx = 10, Syy = 6, r = 6 / sqrt(60).
  EXPECT_NEAR(pearson({1, 2, 3, 4, 5}, {2, 4, 5, 4, 5}), 6.0 / std::sqrt(60.0), 1e-15);
  EXPECT_NEAR(pearson({1, 2, 3}, {-2, -4, -6}), -1.0, 1e-15);
}

TEST(Spearman, PublishedExampleWithoutTies) {
  // Wikipedia, "Spearman's rank correlation coefficient", Example: IQ against hours of TV per
  // week, sum d^2 = 194, rho = 1 - 6 * 194 / (10 * 99) = -29/165 = -0.175757...
  const std::vector<double> iq{106, 86, 100, 101, 99, 103, 97, 113, 112, 110};
  const std::vector<double> tv_hours{7, 0, 27, 50, 28, 29, 20, 12, 6, 17};
  EXPECT_NEAR(spearman(iq, tv_hours), -29.0 / 165.0, 1e-15);
  EXPECT_NEAR(spearman(tv_hours, iq), -29.0 / 165.0, 1e-15);
}

TEST(Spearman, TiesUsePearsonOnAverageRanks) {
  // Ranks x: 1 2.5 2.5 4, y: 1 3 2 4; centred: -1.5 0 0 1.5 and -1.5 .5 -.5 1.5.
  // Sxy = 2.25 + 2.25 = 4.5, Sxx = 4.5, Syy = 5: rho = 4.5 / sqrt(22.5) = sqrt(0.9) = 0.9487.
  // The no-ties shortcut would give 1 - 6 * 0.5 / 60 = 0.95: this must not.
  EXPECT_NEAR(spearman({1, 2, 2, 3}, {1, 3, 2, 4}), std::sqrt(0.9), 1e-15);
  // Ties on both sides. Ranks x: 1.5 1.5 3 4, y: 1 2.5 2.5 4; centred: -1 -1 .5 1.5 and
  // -1.5 0 0 1.5. Sxy = 1.5 + 2.25 = 3.75, Sxx = 4.5, Syy = 4.5: rho = 3.75 / 4.5 = 5/6.
  EXPECT_NEAR(spearman({2, 2, 5, 9}, {0.1, 0.3, 0.3, 0.4}), 5.0 / 6.0, 1e-15);
}

TEST(Spearman, InvariantUnderMonotoneTransforms) {
  const std::vector<double> x{0.3, 1.7, 0.9, 2.4, 1.7, 0.1, 3.3};
  const std::vector<double> y{5.0, 2.0, 4.0, 1.0, 3.0, 6.0, 0.5};
  std::vector<double> exp_x;
  std::vector<double> cube_y;
  for (double v : x) exp_x.push_back(std::exp(v));
  for (double v : y) cube_y.push_back(v * v * v - 10.0);
  EXPECT_DOUBLE_EQ(spearman(exp_x, cube_y), spearman(x, y));
  EXPECT_NE(pearson(exp_x, cube_y), pearson(x, y));  // Pearson on raw values is not
  EXPECT_DOUBLE_EQ(spearman(x, exp_x), 1.0);
}

TEST(Spearman, RejectsBadInput) {
  EXPECT_THROW(spearman({1, 2, 3}, {1, 2}), InputError);
  EXPECT_THROW(spearman({1}, {1}), InputError);
  EXPECT_THROW(spearman({}, {}), InputError);
  EXPECT_THROW(spearman({1, kNaN, 3}, {1, 2, 3}), InputError);
  EXPECT_THROW(spearman({1, 2, 3}, {4, 4, 4}), InputError);       // constant: undefined
  EXPECT_THROW(pearson({0.1, 0.1, 0.1}, {1, 2, 3}), InputError);  // mean not exactly 0.1
}

TEST(PartialSpearman, HandWorkedValue) {
  // Raw values with ranks x: 1 2 3 4 5, y: 2 1 4 3 5, z: 1 3 2 5 4 (no ties, so
  // rho = 1 - sum d^2 / 20): xy sum d^2 = 4 -> .8; xz 4 -> .8; yz 1+4+4+4+1 = 14 -> .3.
  // r_xy.z = (.8 - .8 * .3) / sqrt((1 - .64)(1 - .09)) = .56 / sqrt(.36 * .91) = 0.97840.
  const std::vector<double> x{1, 4, 9, 16, 25};
  const std::vector<double> y{0.2, 0.1, 0.4, 0.3, 0.5};
  const std::vector<double> z{-5, 7, 3, 100, 50};
  EXPECT_NEAR(spearman(x, y), 0.8, 1e-15);
  EXPECT_NEAR(spearman(x, z), 0.8, 1e-15);
  EXPECT_NEAR(spearman(y, z), 0.3, 1e-15);
  EXPECT_NEAR(partial_spearman(x, y, z), 0.56 / std::sqrt(0.36 * 0.91), 1e-14);
  EXPECT_NEAR(partial_spearman(x, y, z), 0.9784, 1e-4);
  EXPECT_NEAR(partial_spearman(y, x, z), partial_spearman(x, y, z), 1e-15);  // symmetric in x, y
}

// Pearson correlation of the residuals of a least-squares regression of a on c and of b on c.
double residual_correlation(const std::vector<double>& a, const std::vector<double>& b,
                            const std::vector<double>& c) {
  const auto residuals = [&c](const std::vector<double>& v) {
    double mean_v = 0.0;
    double mean_c = 0.0;
    for (size_t i = 0; i < v.size(); ++i) {
      mean_v += v[i] / static_cast<double>(v.size());
      mean_c += c[i] / static_cast<double>(c.size());
    }
    double scv = 0.0;
    double scc = 0.0;
    for (size_t i = 0; i < v.size(); ++i) {
      scv += (c[i] - mean_c) * (v[i] - mean_v);
      scc += (c[i] - mean_c) * (c[i] - mean_c);
    }
    std::vector<double> e(v.size());
    for (size_t i = 0; i < v.size(); ++i) e[i] = v[i] - mean_v - scv / scc * (c[i] - mean_c);
    return e;
  };
  return pearson(residuals(a), residuals(b));
}

TEST(PartialSpearman, EqualsTheCorrelationOfRankResiduals) {
  // An independent route to the same number, on data with ties in all three variables.
  std::vector<double> x;
  std::vector<double> y;
  std::vector<double> z;
  for (int i = 0; i < 30; ++i) {
    const double length = static_cast<double>((i * 7) % 11);
    x.push_back(length + static_cast<double>(i % 4));
    y.push_back(std::floor(2.0 * std::sin(i)) + 0.3 * length);
    z.push_back(length);
  }
  const double expected =
      residual_correlation(average_ranks(x), average_ranks(y), average_ranks(z));
  EXPECT_NEAR(partial_spearman(x, y, z), expected, 1e-12);
  EXPECT_GT(std::abs(spearman(x, y) - expected), 0.01);  // controlling for z changes the value
}

TEST(PartialSpearman, RejectsBadInput) {
  const std::vector<double> x{1, 2, 3, 4};
  const std::vector<double> y{2, 1, 4, 3};
  EXPECT_THROW(partial_spearman(x, y, {1, 2, 3}), InputError);
  EXPECT_THROW(partial_spearman({1, 2}, {2, 1}, {1, 2}), InputError);  // n < 3
  EXPECT_THROW(partial_spearman(x, y, {kNaN, 1, 2, 3}), InputError);
  EXPECT_THROW(partial_spearman(x, y, {5, 5, 5, 5}), InputError);      // constant covariate
  EXPECT_THROW(partial_spearman(x, y, {10, 20, 30, 40}), InputError);  // z ranks like x
  EXPECT_THROW(partial_spearman(x, y, {9, 8, 7, 6}), InputError);      // z ranks like -x
  EXPECT_THROW(partial_spearman(x, y, {3, 1, 9, 4}), InputError);      // z ranks like y
}

}  // namespace
}  // namespace kbrl::stats
