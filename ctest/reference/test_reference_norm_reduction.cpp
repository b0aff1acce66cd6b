// Norm, reduction and arg-reduction references (libtorch) against plain-loop implementations in
// float64.
#include <cmath>
#include <functional>
#include <vector>

#include "reference_testing.h"

namespace kbrl::testing {
namespace {

constexpr double kEps = 1e-5;

using GroupOf = std::function<int64_t(int64_t)>;  // flat element index -> its group

/// Plain loops: every element of x minus its group's mean, over sqrt(biased variance + eps).
torch::Tensor standardize(const torch::Tensor& x, int64_t groups, const GroupOf& group_of) {
  auto in = x.contiguous().to(torch::kFloat64);
  auto out = torch::empty_like(in);
  const double* src = in.data_ptr<double>();
  double* dst = out.data_ptr<double>();
  std::vector<double> mean(groups, 0.0), var(groups, 0.0), count(groups, 0.0);
  for (int64_t i = 0; i < in.numel(); ++i) {
    mean[group_of(i)] += src[i];
    count[group_of(i)] += 1;
  }
  for (int64_t g = 0; g < groups; ++g) mean[g] /= count[g];
  for (int64_t i = 0; i < in.numel(); ++i) {
    const double d = src[i] - mean[group_of(i)];
    var[group_of(i)] += d * d;
  }
  for (int64_t g = 0; g < groups; ++g) var[g] /= count[g];
  for (int64_t i = 0; i < in.numel(); ++i) {
    const int64_t g = group_of(i);
    dst[i] = (src[i] - mean[g]) / std::sqrt(var[g] + kEps);
  }
  return out;
}

/// Plain loops: y[i] * weight[k] + bias[k] with k = param_of(i).
torch::Tensor affine(const torch::Tensor& y, const torch::Tensor& weight, const torch::Tensor& bias,
                     const GroupOf& param_of) {
  auto w = weight.detach().contiguous().to(torch::kFloat64);
  auto b = bias.detach().contiguous().to(torch::kFloat64);
  auto out = y.clone();
  double* dst = out.data_ptr<double>();
  for (int64_t i = 0; i < out.numel(); ++i) {
    const int64_t k = param_of(i);
    dst[i] = dst[i] * w.data_ptr<double>()[k] + b.data_ptr<double>()[k];
  }
  return out;
}

/// Plain loops: x[i] / finish(sum over i's group of term(x), group size).
torch::Tensor divide_by_group(const torch::Tensor& x, int64_t groups, const GroupOf& group_of,
                              double (*term)(double), double (*finish)(double sum, double n)) {
  auto in = x.contiguous().to(torch::kFloat64);
  auto out = torch::empty_like(in);
  const double* src = in.data_ptr<double>();
  double* dst = out.data_ptr<double>();
  std::vector<double> sum(groups, 0.0), count(groups, 0.0);
  for (int64_t i = 0; i < in.numel(); ++i) {
    sum[group_of(i)] += term(src[i]);
    count[group_of(i)] += 1;
  }
  for (int64_t i = 0; i < in.numel(); ++i) {
    const int64_t g = group_of(i);
    dst[i] = src[i] / finish(sum[g], count[g]);
  }
  return out;
}

/// The norm modules start with weight 1 and bias 0: give them random values so that the affine step
/// is exercised, and run the reference again.
torch::Tensor rerun_with_random_affine(const SmallRun& run) {
  torch::NoGradGuard no_grad;
  torch::manual_seed(5);
  auto params = run.model.parameters();
  EXPECT_EQ(params.size(), 2u);
  for (auto& p : params) p.uniform_(-1.5, 1.5);
  return run.model(run.inputs, {})[0];
}

// Indices of a contiguous [N,C,H,W] tensor.
struct Nchw {
  int64_t n, c, hw;
  explicit Nchw(const torch::Tensor& x) : n(x.size(0)), c(x.size(1)), hw(x.size(2) * x.size(3)) {}
  int64_t batch(int64_t i) const { return i / (c * hw); }
  int64_t channel(int64_t i) const { return i / hw % c; }
};

TEST(ReferenceNorm, ParametersAreTheModulesInNamedParametersOrder) {
  for (int id = 33; id <= 40; ++id) {
    SCOPED_TRACE("task " + std::to_string(id));
    const TaskSpec spec = task_spec(id, Scale::small);
    auto model = make_reference(spec);
    const auto named = model.module->named_parameters(/*recurse=*/true);
    ASSERT_EQ(named.size(), spec.parameters.size());
    for (size_t i = 0; i < named.size(); ++i) {
      EXPECT_EQ(named[i].key(), spec.parameters[i].name);
      EXPECT_EQ(named[i].value().sizes().vec(), spec.parameters[i].shape);
    }
    const bool affine = id == 33 || id == 35 || id == 40;
    EXPECT_EQ(spec.parameters.size(), affine ? 2u : 0u);
  }
}

TEST(ReferenceNorm, Task33BatchNormUsesBatchStatistics) {
  // reference: nn::BatchNorm2d(64) in training mode; independent: loops over per-channel mean and
  // biased variance of (N,H,W), eps 1e-5, times the module's weight plus its bias.
  auto run = run_small(33);
  const Nchw d(run.inputs[0]);
  const GroupOf channel = [d](int64_t i) { return d.channel(i); };
  auto normalized = standardize(run.inputs[0], d.c, channel);
  expect_close(run.outputs[0], normalized);  // weight 1, bias 0 as constructed

  // Training mode also moves the running mean 10% of the way to the batch mean.
  auto batch_mean = run.inputs[0].to(torch::kFloat64).mean({0, 2, 3});
  expect_close(run.model.module->named_buffers()["running_mean"], 0.1 * batch_mean);

  auto y = rerun_with_random_affine(run);
  auto params = run.model.parameters();
  expect_close(y, affine(normalized, params[0], params[1], channel));
}

TEST(ReferenceNorm, Task34InstanceNormMatchesLoop) {
  // reference: nn::InstanceNorm2d(64) (no affine, no running stats); independent: loops over the
  // mean and biased variance of each (sample, channel) plane.
  auto run = run_small(34);
  const Nchw d(run.inputs[0]);
  EXPECT_TRUE(run.model.parameters().empty());
  expect_close(run.outputs[0], standardize(run.inputs[0], d.n * d.c, [d](int64_t i) {
                 return d.batch(i) * d.c + d.channel(i);
               }));
}

TEST(ReferenceNorm, Task35GroupNormMatchesLoop) {
  // reference: nn::GroupNorm(8, 64); independent: loops over the statistics of each (sample, group
  // of 8 consecutive channels), then per-channel weight and bias.
  auto run = run_small(35);
  const Nchw d(run.inputs[0]);
  const int64_t groups = 8, per_group = d.c / groups;
  auto normalized = standardize(run.inputs[0], d.n * groups, [d, groups, per_group](int64_t i) {
    return d.batch(i) * groups + d.channel(i) / per_group;
  });
  auto y = rerun_with_random_affine(run);
  auto params = run.model.parameters();
  expect_close(y,
               affine(normalized, params[0], params[1], [d](int64_t i) { return d.channel(i); }));
}

TEST(ReferenceNorm, Task40LayerNormMatchesLoop) {
  // reference: nn::LayerNorm({64,H,W}); independent: loops over the statistics of each sample, then
  // elementwise weight and bias of shape [64,H,W].
  auto run = run_small(40);
  const Nchw d(run.inputs[0]);
  const int64_t per_sample = d.c * d.hw;
  auto normalized =
      standardize(run.inputs[0], d.n, [per_sample](int64_t i) { return i / per_sample; });
  auto y = rerun_with_random_affine(run);
  auto params = run.model.parameters();
  expect_close(y, affine(normalized, params[0], params[1],
                         [per_sample](int64_t i) { return i % per_sample; }));
}

double square(double v) { return v * v; }
double magnitude(double v) { return std::fabs(v); }

TEST(ReferenceNorm, Task36RmsNormMatchesLoop) {
  // reference: x / sqrt(mean(x**2, dim=1) + eps) (torch ops); independent: loops over the channels
  // of each (sample, pixel).
  auto run = run_small(36);
  auto x = run.inputs[0] * 2 - 1;
  const Nchw d(x);
  expect_close(run.model({x}, {})[0],
               divide_by_group(
                   x, d.n * d.hw, [d](int64_t i) { return d.batch(i) * d.hw + i % d.hw; }, square,
                   [](double sum, double n) { return std::sqrt(sum / n + kEps); }));
}

TEST(ReferenceNorm, Task37FrobeniusNormMatchesLoop) {
  // reference: x / torch::linalg_vector_norm(x); independent: loop sqrt(sum of squares) of all x.
  auto run = run_small(37);
  auto x = run.inputs[0] * 2 - 1;
  expect_close(run.model({x}, {})[0],
               divide_by_group(
                   x, 1, [](int64_t) { return int64_t{0}; }, square,
                   [](double sum, double) { return std::sqrt(sum); }));
}

TEST(ReferenceNorm, Task38L1NormMatchesLoop) {
  // reference: x / mean(abs(x), dim=1); independent: per-row loop of mean |x|.
  auto run = run_small(38);
  auto x = run.inputs[0] * 2 - 1;
  const int64_t cols = x.size(1);
  expect_close(run.model({x}, {})[0],
               divide_by_group(
                   x, x.size(0), [cols](int64_t i) { return i / cols; }, magnitude,
                   [](double sum, double n) { return sum / n; }));
}

TEST(ReferenceNorm, Task39L2NormMatchesLoop) {
  // reference: x / torch::norm(x, 2, dim=1); independent: per-row loop sqrt(sum of squares).
  auto run = run_small(39);
  auto x = run.inputs[0] * 2 - 1;
  const int64_t cols = x.size(1);
  expect_close(run.model({x}, {})[0],
               divide_by_group(
                   x, x.size(0), [cols](int64_t i) { return i / cols; }, square,
                   [](double sum, double) { return std::sqrt(sum); }));
}

struct Reduction {
  int id;
  const char* what;  // the libtorch op under test, and the independent loop
  bool index;        // the output is an int64 index, compared exactly
  double (*fn)(const std::vector<double>& column);
};

const Reduction kReductions[] = {
    {47, "torch::sum(keepdim) vs loop sum", false,
     [](const std::vector<double>& c) {
       double s = 0;
       for (double v : c) s += v;
       return s;
     }},
    {48, "torch::mean vs loop sum/n", false,
     [](const std::vector<double>& c) {
       double s = 0;
       for (double v : c) s += v;
       return s / static_cast<double>(c.size());
     }},
    {49, "torch::max values vs loop max", false,
     [](const std::vector<double>& c) {
       double m = -INFINITY;
       for (double v : c) m = std::max(m, v);
       return m;
     }},
    {53, "torch::min values vs loop min", false,
     [](const std::vector<double>& c) {
       double m = INFINITY;
       for (double v : c) m = std::min(m, v);
       return m;
     }},
    {51, "torch::argmax vs loop first index of the max", true,
     [](const std::vector<double>& c) {
       size_t best = 0;
       for (size_t r = 1; r < c.size(); ++r)
         if (c[r] > c[best]) best = r;
       return static_cast<double>(best);
     }},
    {52, "torch::argmin vs loop first index of the min", true,
     [](const std::vector<double>& c) {
       size_t best = 0;
       for (size_t r = 1; r < c.size(); ++r)
         if (c[r] < c[best]) best = r;
       return static_cast<double>(best);
     }},
};

class ReductionTest : public ::testing::TestWithParam<Reduction> {};

TEST_P(ReductionTest, MatchesPlainLoopOverDim1) {
  const auto& red = GetParam();
  SCOPED_TRACE(red.what);
  auto run = run_small(red.id);
  // Shift inputs to [-1,1) so that sums cancel and max and min straddle zero.
  auto x = run.inputs[0] * 2 - 1;
  auto y = run.model({x}, {})[0];
  EXPECT_EQ(y.sizes().vec(), run.spec.outputs[0].shape);
  EXPECT_EQ(y.scalar_type(), to_torch(run.spec.outputs[0].dtype));

  auto xs = x.to(torch::kFloat64).contiguous();
  auto acc = xs.accessor<double, 3>();
  auto expected = torch::empty({x.size(0), x.size(2)}, torch::kFloat64);
  auto out = expected.accessor<double, 2>();
  std::vector<double> column(x.size(1));
  for (int64_t b = 0; b < x.size(0); ++b)
    for (int64_t k = 0; k < x.size(2); ++k) {
      for (int64_t r = 0; r < x.size(1); ++r) column[r] = acc[b][r][k];
      out[b][k] = red.fn(column);
    }
  expected = expected.reshape(run.spec.outputs[0].shape);
  if (red.index) {
    EXPECT_TRUE(torch::equal(y, expected.to(torch::kInt64)));
  } else {
    expect_close(y, expected);
  }
}

INSTANTIATE_TEST_SUITE_P(Level1, ReductionTest, ::testing::ValuesIn(kReductions),
                         [](const auto& info) { return "task" + std::to_string(info.param.id); });

// FLOPs (reference/README.md) and bytes at kernelbench scale, by hand from KernelBench's shapes.
TEST(NormReductionCounts, FollowTheConventions) {
  auto flops = [](int id) { return task_spec(id, Scale::kernelbench).flops; };
  auto bytes = [](int id) { return task_spec(id, Scale::kernelbench).min_bytes; };
  const double image = 112.0 * 64 * 512 * 512, rows = 32768.0 * 65535;
  const double layer = 16.0 * 64 * 256 * 256;
  EXPECT_DOUBLE_EQ(flops(34), 5 * image);  // instance norm: no affine
  EXPECT_DOUBLE_EQ(bytes(34), 8 * image);
  EXPECT_DOUBLE_EQ(flops(35), 7 * image);
  EXPECT_DOUBLE_EQ(bytes(35), 4 * (2 * image + 2 * 64));
  for (int id : {36, 37}) EXPECT_DOUBLE_EQ(flops(id), 3 * image);
  for (int id : {38, 39}) EXPECT_DOUBLE_EQ(flops(id), 3 * rows);
  EXPECT_DOUBLE_EQ(flops(40), 7 * layer);
  EXPECT_DOUBLE_EQ(bytes(40), 4 * (2 * layer + 2 * 64.0 * 256 * 256));  // elementwise affine
  const double in = 128.0 * 4096 * 4095, out = 128.0 * 4095;
  EXPECT_DOUBLE_EQ(flops(48), in + out);  // mean: the sum, then one division per output
  for (int id : {49, 52, 53}) EXPECT_DOUBLE_EQ(flops(id), in);
  EXPECT_DOUBLE_EQ(bytes(52), 4 * in + 8 * out);
}

}  // namespace
}  // namespace kbrl::testing
