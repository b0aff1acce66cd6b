// Elementwise and softmax references (libtorch) against plain-loop implementations in float64.
#include <cmath>

#include "reference_testing.h"

namespace kbrl::testing {
namespace {

struct Activation {
  int id;
  const char* what;  // the libtorch op under test, and the independent formula
  double (*fn)(double);
};

const Activation kActivations[] = {
    {19, "torch::relu vs loop max(x,0)", [](double x) { return x > 0 ? x : 0.0; }},
    {20, "F::leaky_relu vs loop x<0?0.01x:x", [](double x) { return x < 0 ? 0.01 * x : x; }},
    {21, "torch::sigmoid vs loop 1/(1+exp(-x))", [](double x) { return 1 / (1 + std::exp(-x)); }},
    {22, "torch::tanh vs loop (e^2x-1)/(e^2x+1)",
     [](double x) { return (std::exp(2 * x) - 1) / (std::exp(2 * x) + 1); }},
    {25, "x*torch::sigmoid vs loop x/(1+exp(-x))", [](double x) { return x / (1 + std::exp(-x)); }},
    {26, "F::gelu vs loop x*Phi(x) via erfc",
     [](double x) { return x * 0.5 * std::erfc(-x / std::sqrt(2.0)); }},
    {27, "torch::selu vs loop with the SELU constants",
     [](double x) {
       const double alpha = 1.6732632423543772848170429916717;
       const double scale = 1.0507009873554804934193349852946;
       return scale * (x > 0 ? x : alpha * (std::exp(x) - 1));
     }},
    {28, "F::hardsigmoid vs loop clamp(x/6+1/2,0,1)",
     [](double x) { return std::min(1.0, std::max(0.0, x / 6 + 0.5)); }},
    {29, "F::softplus vs loop log1p(exp(x))", [](double x) { return std::log1p(std::exp(x)); }},
    {30, "x/(1+|x|) vs loop", [](double x) { return x / (1 + std::fabs(x)); }},
    {31, "F::elu vs loop x>0?x:exp(x)-1", [](double x) { return x > 0 ? x : std::expm1(x); }},
    {32, "F::hardtanh vs loop clamp(x,-1,1)", [](double x) { return std::min(1.0, std::max(-1.0, x)); }},
    {88, "NewGELU (torch ops) vs loop",
     [](double x) {
       return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
     }},
};

class ActivationTest : public ::testing::TestWithParam<Activation> {};

TEST_P(ActivationTest, MatchesPlainLoop) {
  const auto& act = GetParam();
  SCOPED_TRACE(act.what);
  auto run = run_small(act.id);
  // Shift inputs to [-3,3) so both branches of each activation are exercised.
  auto x = run.inputs[0] * 6 - 3;
  auto y = run.model({x}, {})[0];
  expect_close(y, map_elements(x, act.fn));
}

INSTANTIATE_TEST_SUITE_P(Level1, ActivationTest, ::testing::ValuesIn(kActivations),
                         [](const auto& info) { return "task" + std::to_string(info.param.id); });

TEST(ReferenceElementwise, Task5ScalarMultiplyMatchesLoop) {
  // reference: A * s (libtorch); independent: loop a*3.14 with the spec's scalar.
  auto run = run_small(5);
  ASSERT_EQ(run.spec.scalars.size(), 1u);
  EXPECT_DOUBLE_EQ(run.spec.scalars[0].value, 3.14);
  expect_close(run.outputs[0], map_elements(run.inputs[0], [](double a) { return a * 3.14; }));
}

TEST(ReferenceElementwise, Task12DiagonalScalingMatchesDiagMatmul) {
  // reference: A.unsqueeze(1) * B; independent: torch::diag(A).matmul(B) in float64.
  auto run = run_small(12);
  auto a = run.inputs[0].to(torch::kFloat64), b = run.inputs[1].to(torch::kFloat64);
  expect_close(run.outputs[0], torch::diag(a).matmul(b));
}

TEST(ReferenceSoftmax, Task23SoftmaxMatchesLoop) {
  // reference: torch::softmax(x, 1); independent: per-row loop exp(x - max) / sum.
  auto run = run_small(23);
  auto x = run.inputs[0].to(torch::kFloat64).contiguous();
  auto expected = torch::empty_like(x);
  auto xs = x.accessor<double, 2>();
  auto ys = expected.accessor<double, 2>();
  for (int64_t r = 0; r < x.size(0); ++r) {
    double m = -INFINITY, sum = 0;
    for (int64_t c = 0; c < x.size(1); ++c) m = std::max(m, xs[r][c]);
    for (int64_t c = 0; c < x.size(1); ++c) sum += std::exp(xs[r][c] - m);
    for (int64_t c = 0; c < x.size(1); ++c) ys[r][c] = std::exp(xs[r][c] - m) / sum;
  }
  expect_close(run.outputs[0], expected);
}

TEST(ReferenceSoftmax, Task24LogSoftmaxMatchesLoop) {
  // reference: torch::log_softmax(x, 1); independent: per-row loop x - max - log(sum exp(x - max)).
  auto run = run_small(24);
  auto x = run.inputs[0].to(torch::kFloat64).contiguous();
  auto expected = torch::empty_like(x);
  auto xs = x.accessor<double, 2>();
  auto ys = expected.accessor<double, 2>();
  for (int64_t r = 0; r < x.size(0); ++r) {
    double m = -INFINITY, sum = 0;
    for (int64_t c = 0; c < x.size(1); ++c) m = std::max(m, xs[r][c]);
    for (int64_t c = 0; c < x.size(1); ++c) sum += std::exp(xs[r][c] - m);
    for (int64_t c = 0; c < x.size(1); ++c) ys[r][c] = xs[r][c] - m - std::log(sum);
  }
  expect_close(run.outputs[0], expected);
}

}  // namespace
}  // namespace kbrl::testing
