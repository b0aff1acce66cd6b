// 8-bit weights of the CPU decoder (policies/lm/q8_weights.h): Q8_0 blocks and their products against
// float32 (relative error under 2%, any number of rows, any row range), exact where the values are
// exactly representable, zero blocks, and the shapes it refuses.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <vector>

#include <kbrl/error.h>
#include <kbrl/splitmix64.h>
#include <policies/lm/q8_weights.h>

namespace kbrl::lm {
namespace {

std::vector<float> normal(int64_t count, double std, uint64_t seed) {
  std::vector<float> v(static_cast<size_t>(count));
  for (auto& x : v) {
    const double u1 = std::max(splitmix64_uniform01(seed), 1e-300), u2 = splitmix64_uniform01(seed);
    x = static_cast<float>(std * std::sqrt(-2 * std::log(u1)) * std::cos(2 * M_PI * u2));
  }
  return v;
}

// y = x w^T in double.
std::vector<double> reference(const std::vector<float>& w, const std::vector<float>& x, int64_t rows, int64_t cols) {
  const int64_t n = static_cast<int64_t>(x.size()) / cols;
  std::vector<double> y(static_cast<size_t>(n * rows));
  for (int64_t j = 0; j < n; ++j)
    for (int64_t r = 0; r < rows; ++r) {
      double s = 0;
      for (int64_t k = 0; k < cols; ++k) s += double{w[r * cols + k]} * double{x[j * cols + k]};
      y[j * rows + r] = s;
    }
  return y;
}

std::vector<float> product(const Q8Matrix& w, const std::vector<float>& x) {
  Q8Activations q;
  quantize_q8_activations(x.data(), static_cast<int64_t>(x.size()) / w.cols, w.cols, q);
  std::vector<float> y(static_cast<size_t>(q.rows.rows * w.rows));
  q8_matmul_rows(w, q, 0, w.rows, y.data());
  return y;
}

TEST(Q8Weights, ProductsStayNearFloat32) {
  for (const int64_t n : {1, 3, 4, 5, 9}) {  // every width of the kernel's groups of up to 4 rows
    const int64_t rows = 97, cols = 576;
    const std::vector<float> w = normal(rows * cols, 0.02, 1), x = normal(n * cols, 1.0, 2 + n);
    Q8Matrix q;
    quantize_q8(w.data(), rows, cols, q);
    const std::vector<float> y = product(q, x);
    const std::vector<double> want = reference(w, x, rows, cols);
    double err = 0, norm = 0;
    for (size_t i = 0; i < y.size(); ++i) {
      err += (y[i] - want[i]) * (y[i] - want[i]);
      norm += want[i] * want[i];
    }
    const double relative = std::sqrt(err / norm);
    EXPECT_LT(relative, 0.012) << "n = " << n;  // 0.8% seen; rounding by truncation would be about 1.5%
    EXPECT_GT(relative, 1e-4) << "n = " << n << ": 8 bits cannot be this close";
  }
}

TEST(Q8Weights, RowRangesMakeTheSameMatrixAndProduct) {
  const int64_t rows = 70, cols = 64, n = 2;
  const std::vector<float> w = normal(rows * cols, 0.5, 3), x = normal(n * cols, 1.0, 4);
  Q8Matrix q;
  quantize_q8(w.data(), rows, cols, q);
  Q8Activations qx;
  quantize_q8_activations(x.data(), n, cols, qx);
  std::vector<float> whole(n * rows), parts(n * rows);
  q8_matmul_rows(q, qx, 0, rows, whole.data());
  q8_matmul_rows(q, qx, 0, 33, parts.data());
  q8_matmul_rows(q, qx, 33, rows, parts.data());
  EXPECT_EQ(whole, parts);
  Q8Matrix halves;  // quantized in two row ranges, as threads do
  resize_q8(rows, cols, halves);
  quantize_q8_rows(w.data(), 40, rows, halves);
  quantize_q8_rows(w.data(), 0, 40, halves);
  EXPECT_EQ(halves.values, q.values);
  EXPECT_EQ(halves.scales, q.scales);
}

TEST(Q8Weights, ValuesRoundToTheNearestTiesToEven) {
  std::vector<float> w(kQ8Block, 0.0f);
  w[0] = 127;  // scale 1
  w[1] = 2.5f;
  w[2] = 3.5f;
  w[3] = -2.5f;
  w[4] = 2.6f;
  w[5] = -3.4f;
  Q8Matrix q;
  quantize_q8(w.data(), 1, kQ8Block, q);
  EXPECT_EQ(q.scales[0], 1.0f);
  EXPECT_EQ(std::vector<int>(q.values.begin(), q.values.begin() + 6), (std::vector<int>{127, 2, 4, -2, 3, -3}));
}

TEST(Q8Weights, NonFiniteBlocksStayNonFiniteAndTinyOnesZero) {
  std::vector<float> w(3 * kQ8Block, 1.0f);
  w[5] = std::numeric_limits<float>::quiet_NaN();                        // row 0
  w[kQ8Block + 7] = std::numeric_limits<float>::infinity();              // row 1
  std::fill(w.begin() + 2 * kQ8Block, w.end(), 1e-35f);                  // row 2
  Q8Matrix q;
  quantize_q8(w.data(), 3, kQ8Block, q);
  EXPECT_TRUE(std::isnan(q.scales[0]));
  EXPECT_TRUE(std::isnan(q.scales[1]));
  EXPECT_EQ(q.scales[2], 0.0f);
  const std::vector<float> y = product(q, std::vector<float>(kQ8Block, 1.0f));
  EXPECT_TRUE(std::isnan(y[0]));
  EXPECT_TRUE(std::isnan(y[1]));
  EXPECT_EQ(y[2], 0.0f);
}

TEST(Q8Weights, ExactValuesAndZeroBlocksStayExact) {
  // Each block's largest magnitude is 127 (scale 1) and every value an integer: nothing rounds.
  const int64_t cols = 64;
  std::vector<float> w(2 * cols, 0.0f), x(cols);  // the second row all zeros (scale 0)
  for (int64_t k = 0; k < cols; ++k) {
    w[k] = static_cast<float>(k % 2 ? 127 : -(k % 7));
    x[k] = static_cast<float>(k % 3 ? 127 : k % 5);
  }
  Q8Matrix q;
  quantize_q8(w.data(), 2, cols, q);
  EXPECT_EQ(q.scales[2], 0.0f);
  const std::vector<float> y = product(q, x);
  EXPECT_DOUBLE_EQ(y[0], reference(w, x, 2, cols)[0]);
  EXPECT_EQ(y[1], 0.0f);
}

// ctest runs this file twice: as test_q8_weights (the AVX2 kernel where the CPU has it) and as
// test_q8_weights_plain (KBRL_Q8_PLAIN=1: the plain C++ kernel), each held to the same checks.
TEST(Q8Weights, TheKernelIsTheOneAskedFor) {
  if (std::getenv("KBRL_Q8_PLAIN")) {
    EXPECT_FALSE(q8_uses_avx2());
    return;
  }
#if defined(__x86_64__)
  EXPECT_EQ(q8_uses_avx2(), __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"));
#else
  EXPECT_FALSE(q8_uses_avx2());
#endif
}

TEST(Q8Weights, RowsOfPartBlocksAreRefused) {
  const std::vector<float> w(3 * 40, 1.0f);
  Q8Matrix q;
  EXPECT_THROW(quantize_q8(w.data(), 3, 40, q), InputError);
  EXPECT_FALSE(q8_fits(40));
  EXPECT_TRUE(q8_fits(576));
}

}  // namespace
}  // namespace kbrl::lm
