// Gemm and attention references (libtorch matmul, bmm, einsum, softmax) against plain-loop
// implementations in float64.
#include <cmath>

#include "reference_testing.h"

namespace kbrl::testing {
namespace {

/// C[M,N] = op(A) op(B) by triple loops in float64, where op transposes a 2-D operand when asked:
/// A is read as [M,K] (or [K,M] if trans_a), B as [K,N] (or [N,K] if trans_b).
torch::Tensor loop_matmul(const torch::Tensor& a, const torch::Tensor& b, bool trans_a = false,
                          bool trans_b = false) {
  auto a64 = a.to(torch::kFloat64).contiguous(), b64 = b.to(torch::kFloat64).contiguous();
  const int64_t m = trans_a ? a.size(1) : a.size(0), k = trans_a ? a.size(0) : a.size(1);
  const int64_t n = trans_b ? b.size(0) : b.size(1);
  EXPECT_EQ(trans_b ? b.size(1) : b.size(0), k);
  const double* pa = a64.data_ptr<double>();
  const double* pb = b64.data_ptr<double>();
  auto c = torch::zeros({m, n}, torch::kFloat64);
  double* pc = c.data_ptr<double>();
  for (int64_t i = 0; i < m; ++i)
    for (int64_t p = 0; p < k; ++p) {
      const double aip = trans_a ? pa[p * m + i] : pa[i * k + p];
      for (int64_t j = 0; j < n; ++j)
        pc[i * n + j] += aip * (trans_b ? pb[j * k + p] : pb[p * n + j]);
    }
  return c;
}

struct PlainMatmul {
  int id;
  const char* what;  // the libtorch op under test, and the independent implementation
  bool trans_a, trans_b;
};

const PlainMatmul kPlainMatmuls[] = {
    {1, "torch::matmul(A,B) square vs triple loop", false, false},
    {2, "torch::matmul(A,B) vs triple loop", false, false},
    {4, "torch::matmul(A,B) matrix-vector vs triple loop", false, false},
    {6, "torch::matmul(A,B) large K vs triple loop", false, false},
    {7, "torch::matmul(A,B) small K vs triple loop", false, false},
    {8, "torch::matmul(A,B) irregular shapes vs triple loop", false, false},
    {9, "torch::matmul(A,B) tall-skinny vs triple loop", false, false},
    {13, "torch::matmul(A,B) symmetric vs triple loop", false, false},
    {16, "torch::matmul(A.t(),B) vs triple loop reading A transposed", true, false},
    {17, "torch::matmul(A,B.t()) vs triple loop reading B transposed", false, true},
    {18, "torch::matmul(A.t(),B.t()) vs triple loop reading both transposed", true, true},
};

class PlainMatmulTest : public ::testing::TestWithParam<PlainMatmul> {};

TEST_P(PlainMatmulTest, MatchesTripleLoop) {
  const auto& t = GetParam();
  SCOPED_TRACE(t.what);
  auto run = run_small(t.id);
  EXPECT_EQ(run.spec.family, Family::gemm);
  expect_close(run.outputs[0], loop_matmul(run.inputs[0], run.inputs[1], t.trans_a, t.trans_b));
}

INSTANTIATE_TEST_SUITE_P(Level1, PlainMatmulTest, ::testing::ValuesIn(kPlainMatmuls),
                         [](const auto& info) { return "task" + std::to_string(info.param.id); });

TEST(ReferenceGemm, Task3BmmMatchesLoopPerBatch) {
  // reference: torch::bmm(A,B); independent: triple loop on each batch entry.
  auto run = run_small(3);
  const auto& a = run.inputs[0];
  const auto& b = run.inputs[1];
  Tensors per_batch;
  for (int64_t i = 0; i < a.size(0); ++i) per_batch.push_back(loop_matmul(a[i], b[i]));
  expect_close(run.outputs[0], torch::stack(per_batch));
}

TEST(ReferenceGemm, Task10BroadcastMatmulMatchesLoop) {
  // reference: torch::matmul(A:[N,M,K], B:[K,L]); independent: triple loop on each A[n].
  auto run = run_small(10);
  Tensors per_batch;
  for (int64_t i = 0; i < run.inputs[0].size(0); ++i)
    per_batch.push_back(loop_matmul(run.inputs[0][i], run.inputs[1]));
  expect_close(run.outputs[0], torch::stack(per_batch));
}

TEST(ReferenceGemm, Task11EinsumMatchesLoop) {
  // reference: torch::einsum("bijl,lk->bijk"); independent: triple loop on A viewed as [b*i*j, l].
  auto run = run_small(11);
  const auto& a = run.inputs[0];
  auto flat = loop_matmul(a.reshape({-1, a.size(3)}), run.inputs[1]);
  expect_close(run.outputs[0], flat.reshape({a.size(0), a.size(1), a.size(2), -1}));
}

TEST(ReferenceGemm, Task13InputsAreSymmetric) {
  auto run = run_small(13);
  for (const auto& x : run.inputs) EXPECT_TRUE(torch::equal(x, x.t()));
}

/// Expects x (square) zero strictly below the diagonal (upper) or strictly above it (lower), by
/// loop, and nonzero somewhere on the kept side.
void expect_triangular(const torch::Tensor& x, bool upper) {
  auto acc = x.accessor<float, 2>();
  int64_t nonzero_dropped = 0, nonzero_kept = 0;
  for (int64_t i = 0; i < x.size(0); ++i)
    for (int64_t j = 0; j < x.size(1); ++j) {
      const bool kept = upper ? j >= i : j <= i;
      (kept ? nonzero_kept : nonzero_dropped) += acc[i][j] != 0.0f;
    }
  EXPECT_EQ(nonzero_dropped, 0);
  EXPECT_GT(nonzero_kept, 0);
}

TEST(ReferenceGemm, Tasks14And15TriangularMatchLoop) {
  for (bool upper : {true, false}) {
    // reference: torch::triu / torch::tril of torch::matmul; independent: triple loop, then a loop
    // zeroing the other triangle.
    const int id = upper ? 14 : 15;
    SCOPED_TRACE("task " + std::to_string(id));
    auto run = run_small(id);
    for (const auto& x : run.inputs) expect_triangular(x, upper);
    auto expected = loop_matmul(run.inputs[0], run.inputs[1]);
    auto acc = expected.accessor<double, 2>();
    for (int64_t i = 0; i < expected.size(0); ++i)
      for (int64_t j = 0; j < expected.size(1); ++j)
        if (upper ? j < i : j > i) acc[i][j] = 0.0;
    expect_close(run.outputs[0], expected);
    expect_triangular(run.outputs[0], upper);
  }
}

TEST(ReferenceAttention, Task97MatchesLoop) {
  // reference: at::scaled_dot_product_attention (libtorch >= 2) or softmax(QK^T/sqrt(D))V by torch
  // ops (1.x); independent: per-query loop, scores then exp(s - max) weighted sum of V rows / sum.
  auto run = run_small(97);
  EXPECT_EQ(run.spec.family, Family::attention);
  auto q = run.inputs[0].to(torch::kFloat64).contiguous();
  auto k = run.inputs[1].to(torch::kFloat64).contiguous();
  auto v = run.inputs[2].to(torch::kFloat64).contiguous();
  const int64_t bh = q.size(0) * q.size(1), s = q.size(2), d = q.size(3);
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  auto expected = torch::zeros_like(q);
  const double* pq = q.data_ptr<double>();
  const double* pk = k.data_ptr<double>();
  const double* pv = v.data_ptr<double>();
  double* po = expected.data_ptr<double>();
  std::vector<double> scores(s);
  for (int64_t h = 0; h < bh; ++h) {
    const int64_t base = h * s * d;
    for (int64_t i = 0; i < s; ++i) {
      double m = -INFINITY, sum = 0;
      for (int64_t j = 0; j < s; ++j) {
        double dot = 0;
        for (int64_t c = 0; c < d; ++c) dot += pq[base + i * d + c] * pk[base + j * d + c];
        scores[j] = dot * scale;
        m = std::max(m, scores[j]);
      }
      double* out = po + base + i * d;
      for (int64_t j = 0; j < s; ++j) {
        const double w = std::exp(scores[j] - m);
        sum += w;
        for (int64_t c = 0; c < d; ++c) out[c] += w * pv[base + j * d + c];
      }
      for (int64_t c = 0; c < d; ++c) out[c] /= sum;
    }
  }
  expect_close(run.outputs[0], expected);
}

// FLOPs at both scales follow reference/README.md, recomputed from the specs' own shapes.
TEST(ReferenceGemm, FlopsFollowTheConventions) {
  for (Scale scale : {Scale::kernelbench, Scale::small}) {
    auto shape = [scale](int id, int input) { return task_spec(id, scale).inputs.at(input).shape; };
    auto flops = [scale](int id) { return task_spec(id, scale).flops; };
    for (int id : {14, 15}) {  // triangular inputs: sum over i <= j of (j - i + 1) products, x2
      const double n = static_cast<double>(shape(id, 0)[0]);
      double macs = 0;
      for (double i = 0; i < n; ++i) macs += (n - i) * (n - i + 1) / 2;  // j from i to n-1
      EXPECT_DOUBLE_EQ(flops(id), 2.0 * macs) << id;
    }
    for (int id : {1, 2, 4, 6, 7, 8, 9, 13}) {
      SCOPED_TRACE("task " + std::to_string(id));
      const auto a = shape(id, 0), b = shape(id, 1);
      EXPECT_DOUBLE_EQ(flops(id), 2.0 * a[0] * a[1] * b[1]);
    }
    EXPECT_DOUBLE_EQ(flops(16), 2.0 * shape(16, 0)[1] * shape(16, 0)[0] * shape(16, 1)[1]);
    EXPECT_DOUBLE_EQ(flops(17), 2.0 * shape(17, 0)[0] * shape(17, 0)[1] * shape(17, 1)[0]);
    EXPECT_DOUBLE_EQ(flops(18), 2.0 * shape(18, 0)[1] * shape(18, 0)[0] * shape(18, 1)[0]);
    const auto a3 = shape(3, 0), b3 = shape(3, 1);
    EXPECT_DOUBLE_EQ(flops(3), 2.0 * a3[0] * a3[1] * a3[2] * b3[2]);
    const auto a10 = shape(10, 0), b10 = shape(10, 1);
    EXPECT_DOUBLE_EQ(flops(10), 2.0 * a10[0] * a10[1] * a10[2] * b10[1]);
    const auto a11 = shape(11, 0), b11 = shape(11, 1);
    EXPECT_DOUBLE_EQ(flops(11), 2.0 * a11[0] * a11[1] * a11[2] * a11[3] * b11[1]);
    const auto q = shape(97, 0);
    const double scores = 1.0 * q[0] * q[1] * q[2] * q[2];
    EXPECT_DOUBLE_EQ(flops(97), 4.0 * scores * q[3] + 5.0 * scores);
  }
}

}  // namespace
}  // namespace kbrl::testing
