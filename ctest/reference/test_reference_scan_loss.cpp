// Scan and loss references (libtorch) against plain loops in float64: running sums and products per
// row for the scans, per-row loops for the losses.
#include <cfloat>
#include <cmath>

#include "reference_testing.h"

namespace kbrl::testing {
namespace {

/// A 2-d float tensor as float64, contiguous, for accessor loops.
torch::Tensor f64(const torch::Tensor& t) { return t.contiguous().to(torch::kFloat64); }

/// A 0-d float64 tensor holding `v`, to compare with a loss.
torch::Tensor scalar(double v) { return torch::tensor(v, torch::kFloat64).reshape({}); }

// ---- scans ----

TEST(ReferenceScan, Task89CumsumMatchesRunningSum) {
  // reference: torch::cumsum(x, 1); independent: running sum along each row.
  auto run = run_small(89);
  auto x = f64(run.inputs[0]);
  auto expected = torch::empty_like(x);
  auto xs = x.accessor<double, 2>();
  auto ys = expected.accessor<double, 2>();
  for (int64_t r = 0; r < x.size(0); ++r) {
    double sum = 0;
    for (int64_t c = 0; c < x.size(1); ++c) ys[r][c] = sum += xs[r][c];
  }
  expect_close(run.outputs[0], expected);
}

TEST(ReferenceScan, Task90CumprodMatchesRunningProduct) {
  // reference: torch::cumprod(x, 1); independent: running product along each row.
  auto run = run_small(90);
  auto x = f64(run.inputs[0]);
  auto expected = torch::empty_like(x);
  auto xs = x.accessor<double, 2>();
  auto ys = expected.accessor<double, 2>();
  for (int64_t r = 0; r < x.size(0); ++r) {
    double product = 1;
    for (int64_t c = 0; c < x.size(1); ++c) ys[r][c] = product *= xs[r][c];
  }
  // The products of uniform [0,1) values shrink fast: the small length keeps every one a normal
  // float, so a purely relative comparison (atol 0) is meaningful down to the last column.
  ASSERT_GT(expected.abs().min().item<double>(), FLT_MIN);
  expect_close(run.outputs[0], expected, kTol, /*atol=*/0.0);
}

TEST(ReferenceScan, Task91ReverseCumsumMatchesRunningSumFromTheRight) {
  // reference: cumsum(x.flip(1), 1).flip(1); independent: running sum from the last column.
  auto run = run_small(91);
  auto x = f64(run.inputs[0]);
  auto expected = torch::empty_like(x);
  auto xs = x.accessor<double, 2>();
  auto ys = expected.accessor<double, 2>();
  for (int64_t r = 0; r < x.size(0); ++r) {
    double sum = 0;
    for (int64_t c = x.size(1) - 1; c >= 0; --c) ys[r][c] = sum += xs[r][c];
  }
  expect_close(run.outputs[0], expected);
}

TEST(ReferenceScan, Task92ExclusiveCumsumMatchesRunningSumBeforeEachElement) {
  // reference: cat(zeros, cumsum(x.narrow(1, 0, L-1), 1)); independent: y[c] = sum of x[0..c-1].
  auto run = run_small(92);
  auto x = f64(run.inputs[0]);
  auto expected = torch::empty_like(x);
  auto xs = x.accessor<double, 2>();
  auto ys = expected.accessor<double, 2>();
  for (int64_t r = 0; r < x.size(0); ++r) {
    double sum = 0;
    for (int64_t c = 0; c < x.size(1); ++c) {
      ys[r][c] = sum;
      sum += xs[r][c];
    }
  }
  expect_close(run.outputs[0], expected);
}

TEST(ReferenceScan, Task93MaskedCumsumMatchesRunningSumOfMaskedElements) {
  // reference: torch::cumsum(x * mask, 1); independent: running sum adding x only where mask.
  auto run = run_small(93);
  const auto& mask = run.inputs[1];
  ASSERT_EQ(mask.scalar_type(), torch::kBool);
  ASSERT_EQ(run.spec.inputs[1].dtype, DType::b8);
  const double on = mask.to(torch::kFloat64).mean().item<double>();
  EXPECT_GT(on, 0.4);  // randint(0, 2): about half the mask is set
  EXPECT_LT(on, 0.6);
  auto x = f64(run.inputs[0]);
  auto m = mask.contiguous();
  auto expected = torch::empty_like(x);
  auto xs = x.accessor<double, 2>();
  auto ms = m.accessor<bool, 2>();
  auto ys = expected.accessor<double, 2>();
  for (int64_t r = 0; r < x.size(0); ++r) {
    double sum = 0;
    for (int64_t c = 0; c < x.size(1); ++c) {
      if (ms[r][c]) sum += xs[r][c];
      ys[r][c] = sum;
    }
  }
  expect_close(run.outputs[0], expected);
}

TEST(ReferenceScan, FlopsAreOnePerElementAndTwoWhenMasked) {
  const double n = 32768.0 * 32768;
  for (int id = 89; id <= 92; ++id) EXPECT_DOUBLE_EQ(task_spec(id, Scale::kernelbench).flops, n);
  EXPECT_DOUBLE_EQ(task_spec(93, Scale::kernelbench).flops, 2 * n);
}

// ---- losses ----

TEST(ReferenceLoss, Task94MseMatchesLoop) {
  // reference: torch::mean((p - t)^2); independent: loop sum of squared differences / n.
  auto run = run_small(94);
  auto p = f64(run.inputs[0]), t = f64(run.inputs[1]);
  auto ps = p.accessor<double, 2>();
  auto ts = t.accessor<double, 2>();
  double sum = 0;
  for (int64_t r = 0; r < p.size(0); ++r)
    for (int64_t c = 0; c < p.size(1); ++c) sum += (ps[r][c] - ts[r][c]) * (ps[r][c] - ts[r][c]);
  expect_close(run.outputs[0], scalar(sum / static_cast<double>(p.numel())));
}

TEST(ReferenceLoss, Task95CrossEntropyMatchesLoopWithInt64Targets) {
  // reference: F::cross_entropy(p, t); independent: per row logsumexp(p) - p[t], mean over rows.
  auto run = run_small(95);
  const auto& targets = run.inputs[1];
  ASSERT_EQ(targets.scalar_type(), torch::kInt64);
  ASSERT_EQ(run.spec.inputs[1].dtype, DType::i64);
  const int64_t classes = run.inputs[0].size(1);
  EXPECT_GE(targets.min().item<int64_t>(), 0);
  EXPECT_LT(targets.max().item<int64_t>(), classes);
  auto p = f64(run.inputs[0]);
  auto ps = p.accessor<double, 2>();
  auto ts = targets.accessor<int64_t, 1>();
  double sum = 0;
  for (int64_t r = 0; r < p.size(0); ++r) {
    double m = -INFINITY, exps = 0;
    for (int64_t c = 0; c < classes; ++c) m = std::max(m, ps[r][c]);
    for (int64_t c = 0; c < classes; ++c) exps += std::exp(ps[r][c] - m);
    sum += m + std::log(exps) - ps[r][ts[r]];
  }
  expect_close(run.outputs[0], scalar(sum / static_cast<double>(p.size(0))));
}

TEST(ReferenceLoss, Task96HuberMatchesLoop) {
  // reference: F::smooth_l1_loss(p, t); independent: loop |d|<1 ? d^2/2 : |d|-1/2, mean.
  auto run = run_small(96);
  const auto& targets = run.inputs[1];
  int64_t quadratic = 0, linear = 0;
  auto huber_loops = [&](const torch::Tensor& predictions) {
    auto p = f64(predictions), t = f64(targets);
    auto ps = p.accessor<double, 2>();
    auto ts = t.accessor<double, 2>();
    double sum = 0;
    for (int64_t r = 0; r < p.size(0); ++r) {
      for (int64_t c = 0; c < p.size(1); ++c) {
        const double d = std::fabs(ps[r][c] - ts[r][c]);
        ++(d < 1 ? quadratic : linear);
        sum += d < 1 ? 0.5 * d * d : d - 0.5;
      }
    }
    return scalar(sum / static_cast<double>(p.numel()));
  };
  expect_close(run.outputs[0], huber_loops(run.inputs[0]));
  // Drawn inputs differ by less than 1; predictions spread over [-1.5,1.5] take both branches.
  auto spread = run.inputs[0] / run.inputs[0].max() * 3 - 1.5;
  expect_close(run.model({spread, targets}, {})[0], huber_loops(spread));
  EXPECT_GT(quadratic, 0);
  EXPECT_GT(linear, 0);
}

TEST(ReferenceLoss, Task98KlDivMatchesLoop) {
  // reference: F::kl_div(log(p), t, batchmean); independent: loop sum t*(log t - log p) / rows.
  auto run = run_small(98);
  auto p = f64(run.inputs[0]), t = f64(run.inputs[1]);
  // Both inputs are softmax rows.
  expect_close(p.sum(-1), torch::ones({p.size(0)}, torch::kFloat64));
  expect_close(t.sum(-1), torch::ones({t.size(0)}, torch::kFloat64));
  auto ps = p.accessor<double, 2>();
  auto ts = t.accessor<double, 2>();
  double sum = 0;
  for (int64_t r = 0; r < p.size(0); ++r)
    for (int64_t c = 0; c < p.size(1); ++c)
      sum += ts[r][c] * (std::log(ts[r][c]) - std::log(ps[r][c]));
  expect_close(run.outputs[0], scalar(sum / static_cast<double>(p.size(0))));
}

TEST(ReferenceLoss, Task99TripletMarginMatchesLoop) {
  // reference: nn::TripletMarginLoss(margin 1); independent: per row
  // max(||a-p+eps|| - ||a-n+eps|| + 1, 0) with eps 1e-6, mean over rows.
  auto run = run_small(99);
  auto a = f64(run.inputs[0]), p = f64(run.inputs[1]), n = f64(run.inputs[2]);
  auto as = a.accessor<double, 2>();
  auto ps = p.accessor<double, 2>();
  auto ns = n.accessor<double, 2>();
  const double eps = 1e-6, margin = 1.0;
  double sum = 0;
  for (int64_t r = 0; r < a.size(0); ++r) {
    double ap = 0, an = 0;
    for (int64_t c = 0; c < a.size(1); ++c) {
      ap += (as[r][c] - ps[r][c] + eps) * (as[r][c] - ps[r][c] + eps);
      an += (as[r][c] - ns[r][c] + eps) * (as[r][c] - ns[r][c] + eps);
    }
    sum += std::max(std::sqrt(ap) - std::sqrt(an) + margin, 0.0);
  }
  expect_close(run.outputs[0], scalar(sum / static_cast<double>(a.size(0))));
}

TEST(ReferenceLoss, Task100HingeMatchesLoopWithTargetsAlongTheLastDim) {
  // reference: torch::mean(clamp_min(1 - p * t, 0)); independent: loop over (row i, column j)
  // with targets[j]: KernelBench's targets [batch] broadcast along the last dimension.
  auto run = run_small(100);
  const auto& targets = run.inputs[1];
  EXPECT_TRUE(((targets == 1) | (targets == -1)).all().item<bool>());
  EXPECT_EQ(run.inputs[0].size(0), run.inputs[0].size(1));
  auto hinge_loops = [&](const torch::Tensor& predictions) {
    auto p = f64(predictions), t = f64(targets);
    auto ps = p.accessor<double, 2>();
    auto ts = t.accessor<double, 1>();
    double sum = 0;
    for (int64_t i = 0; i < p.size(0); ++i)
      for (int64_t j = 0; j < p.size(1); ++j) sum += std::max(0.0, 1 - ps[i][j] * ts[j]);
    return scalar(sum / static_cast<double>(p.numel()));
  };
  expect_close(run.outputs[0], hinge_loops(run.inputs[0]));
  // Drawn predictions in [0,1) never reach the clamp; predictions in [-2,2) do.
  auto shifted = run.inputs[0] * 4 - 2;
  expect_close(run.model({shifted, targets}, {})[0], hinge_loops(shifted));
}

TEST(ReferenceLoss, InputsAreDrawnInKernelBenchsOrder) {
  // get_inputs draws scale = rand(()) before the tensors it scales (94, 96, 98, 99).
  const TaskSpec mse = task_spec(94, Scale::small);
  torch::manual_seed(5);
  auto scale = torch::rand({});
  auto predictions = torch::rand(mse.inputs[0].shape) * scale;
  auto targets = torch::rand(mse.inputs[1].shape);
  auto drawn = make_inputs(mse, 5, torch::kCPU);
  EXPECT_TRUE(torch::equal(drawn[0], predictions));
  EXPECT_TRUE(torch::equal(drawn[1], targets));

  const TaskSpec triplet = task_spec(99, Scale::small);
  torch::manual_seed(5);
  scale = torch::rand({});
  auto anchor = torch::rand(triplet.inputs[0].shape) * scale;
  drawn = make_inputs(triplet, 5, torch::kCPU);
  EXPECT_TRUE(torch::equal(drawn[0], anchor));
}

TEST(ReferenceLoss, OutputsAreScalarsAndFlopsFollowThePerElementCounts) {
  auto spec = [](int id) { return task_spec(id, Scale::kernelbench); };
  const double square = 32768.0 * 32768;
  EXPECT_DOUBLE_EQ(spec(94).flops, 3 * square);
  EXPECT_DOUBLE_EQ(spec(95).flops, 4 * 32768.0 * 4096);
  EXPECT_DOUBLE_EQ(spec(96).flops, 5 * square);
  EXPECT_DOUBLE_EQ(spec(98).flops, 5 * 16384.0 * 16384);
  EXPECT_DOUBLE_EQ(spec(99).flops, 6 * 32768.0 * 8192);
  EXPECT_DOUBLE_EQ(spec(100).flops, 4 * square);
  for (int id : {94, 95, 96, 98, 99, 100}) {
    SCOPED_TRACE("task " + std::to_string(id));
    EXPECT_TRUE(spec(id).outputs.at(0).shape.empty());
    EXPECT_EQ(run_small(id).outputs.at(0).dim(), 0);
  }
}

}  // namespace
}  // namespace kbrl::testing
