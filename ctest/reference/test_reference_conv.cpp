// Convolution references (libtorch Conv*d / ConvTranspose*d) against naive float64 loops: a direct
// convolution (gather) and a scatter-style transposed convolution, both written once for 3 spatial
// dims; 1D and 2D tasks run through them with leading singleton dims. The constructor arguments
// are transcribed here again from KernelBench's task files, so tasks_conv.cpp's table is checked.
#include <array>
#include <set>
#include <string>

#include "reference_testing.h"

namespace kbrl::testing {
namespace {

using Dims = std::vector<int64_t>;
using Index3 = std::array<int64_t, 3>;

/// Calls fn(i) for every index i in [0, size) of a 3-d box, last dim fastest.
template <typename Fn>
void for_each_index(const Index3& size, Fn fn) {
  for (int64_t a = 0; a < size[0]; ++a)
    for (int64_t b = 0; b < size[1]; ++b)
      for (int64_t c = 0; c < size[2]; ++c) fn(Index3{a, b, c});
}

/// A contiguous float64 [N, C, D, H, W] tensor addressed by (n, c, spatial index).
struct Grid {
  torch::Tensor t;
  double* data;
  int64_t channels;
  Index3 size;

  explicit Grid(torch::Tensor tensor)
      : t(tensor.to(torch::kFloat64).contiguous()), data(t.data_ptr<double>()), channels(t.size(1)),
        size{t.size(2), t.size(3), t.size(4)} {}
  double& operator()(int64_t n, int64_t c, const Index3& i) {
    return data[(((n * channels + c) * size[0] + i[0]) * size[1] + i[1]) * size[2] + i[2]];
  }
  bool contains(const Index3& i) const {
    for (int d = 0; d < 3; ++d)
      if (i[d] < 0 || i[d] >= size[d]) return false;
    return true;
  }
};

/// Constructor arguments of one convolution, one entry per spatial dim.
struct Geometry {
  Dims stride, padding, dilation, output_padding;
  int64_t groups = 1;
};

/// [N, C, s...] with 1-3 spatial dims -> [N, C, 1.., s...] with 3.
torch::Tensor to_3d(const torch::Tensor& t) {
  auto shape = t.sizes().vec();
  shape.insert(shape.begin() + 2, 5 - shape.size(), 1);
  return t.reshape(shape);
}
/// Pads a per-dim argument to 3 dims with `fill` in front.
Index3 to_3d(const Dims& v, int64_t fill) {
  Index3 out{fill, fill, fill};
  std::copy(v.begin(), v.end(), out.begin() + (3 - v.size()));
  return out;
}
/// Drops the leading singleton spatial dims: [N, C, 1.., s...] -> [N, C, s...] (`dims` of them).
torch::Tensor from_3d(const torch::Tensor& t, size_t dims) {
  auto shape = t.sizes().vec();
  shape.erase(shape.begin() + 2, shape.begin() + 5 - dims);
  return t.reshape(shape);
}

/// Direct convolution: y[n,co,o] = bias[co] + sum over ci in co's group and taps k of
/// x[n,ci,o*stride - padding + k*dilation] * w[co,ci,k] (out-of-range taps read zero padding).
torch::Tensor naive_conv(const torch::Tensor& x_in, const torch::Tensor& w_in,
                         const torch::Tensor& bias, const Geometry& geo) {
  const size_t dims = x_in.dim() - 2;
  Grid x(to_3d(x_in)), w(to_3d(w_in));
  const Index3 s = to_3d(geo.stride, 1), p = to_3d(geo.padding, 0), dil = to_3d(geo.dilation, 1);
  const int64_t batch = x.t.size(0), c_out = w.t.size(0);
  const int64_t cin_g = x.channels / geo.groups, cout_g = c_out / geo.groups;
  Index3 out_size;
  for (int d = 0; d < 3; ++d)
    out_size[d] = (x.size[d] + 2 * p[d] - dil[d] * (w.size[d] - 1) - 1) / s[d] + 1;
  const auto b = bias.defined() ? bias.to(torch::kFloat64) : torch::zeros({c_out}, torch::kFloat64);
  Grid y(torch::zeros({batch, c_out, out_size[0], out_size[1], out_size[2]}, torch::kFloat64));
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t co = 0; co < c_out; ++co) {
      const int64_t group = co / cout_g;
      const double b_co = b[co].item<double>();
      for_each_index(y.size, [&](const Index3& o) {
        double acc = b_co;
        for (int64_t cl = 0; cl < cin_g; ++cl)
          for_each_index(w.size, [&](const Index3& k) {
            Index3 i;
            for (int d = 0; d < 3; ++d) i[d] = o[d] * s[d] - p[d] + k[d] * dil[d];
            if (x.contains(i)) acc += x(n, group * cin_g + cl, i) * w(co, cl, k);
          });
        y(n, co, o) = acc;
      });
    }
  return from_3d(y.t, dims);
}

/// Transposed convolution by scatter: every x[n,ci,i] adds x * w[ci,co,k] to
/// y[n,co,i*stride - padding + k*dilation] for co in ci's group; the output is
/// (in-1)*stride - 2*padding + dilation*(k-1) + output_padding + 1 long in each dim.
torch::Tensor naive_conv_transpose(const torch::Tensor& x_in, const torch::Tensor& w_in,
                                   const Geometry& geo) {
  const size_t dims = x_in.dim() - 2;
  Grid x(to_3d(x_in)), w(to_3d(w_in));
  const Index3 s = to_3d(geo.stride, 1), p = to_3d(geo.padding, 0), dil = to_3d(geo.dilation, 1),
               op = to_3d(geo.output_padding, 0);
  const int64_t batch = x.t.size(0), cout_g = w.channels, c_out = cout_g * geo.groups;
  const int64_t cin_g = x.channels / geo.groups;
  Index3 out_size;
  for (int d = 0; d < 3; ++d)
    out_size[d] = (x.size[d] - 1) * s[d] - 2 * p[d] + dil[d] * (w.size[d] - 1) + op[d] + 1;
  Grid y(torch::zeros({batch, c_out, out_size[0], out_size[1], out_size[2]}, torch::kFloat64));
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t ci = 0; ci < x.channels; ++ci) {
      const int64_t group = ci / cin_g;
      for_each_index(x.size, [&](const Index3& i) {
        const double xv = x(n, ci, i);
        for (int64_t cl = 0; cl < cout_g; ++cl)
          for_each_index(w.size, [&](const Index3& k) {
            Index3 o;
            for (int d = 0; d < 3; ++d) o[d] = i[d] * s[d] - p[d] + k[d] * dil[d];
            if (y.contains(o)) y(n, group * cout_g + cl, o) += xv * w(ci, cl, k);
          });
      });
    }
  return from_3d(y.t, dims);
}

/// A single-convolution task and the arguments KernelBench's Model passes to its module.
struct ConvCase {
  int id;
  bool transposed;
  Geometry geo;
};

void PrintTo(const ConvCase& c, std::ostream* os) { *os << "task " << c.id; }

constexpr bool kConv = false, kTransposed = true;

// Transcribed from KernelBench/level1/<task>.py (get_init_inputs and the module's constructor):
// {id, transposed?, {stride, padding, dilation, output_padding, groups}}.
// clang-format off
const ConvCase kCases[] = {
    {50, kConv, {{4, 4}, {2, 2}, {1, 1}, {}, 1}},
    {54, kConv, {{1, 1, 1}, {0, 0, 0}, {1, 1, 1}, {}, 1}},
    {55, kConv, {{1, 1}, {0, 0}, {1, 1}, {}, 1}},
    {56, kConv, {{1, 1}, {0, 0}, {1, 1}, {}, 1}},
    {57, kTransposed, {{1, 1}, {0, 0}, {1, 1}, {0, 0}, 1}},
    {58, kTransposed, {{1, 1, 1}, {0, 0, 0}, {1, 1, 1}, {0, 0, 0}, 1}},
    {59, kConv, {{1, 1, 1}, {0, 0, 0}, {1, 1, 1}, {}, 1}},
    {60, kConv, {{1, 1, 1}, {0, 0, 0}, {1, 1, 1}, {}, 1}},
    {61, kTransposed, {{1, 1, 1}, {0, 0, 0}, {1, 1, 1}, {0, 0, 0}, 1}},
    {62, kConv, {{1, 1}, {0, 0}, {1, 1}, {}, 1}},
    {63, kConv, {{1, 1}, {0, 0}, {1, 1}, {}, 1}},
    {64, kTransposed, {{1}, {0}, {1}, {0}, 1}},
    {65, kTransposed, {{1, 1}, {0, 0}, {1, 1}, {0, 0}, 1}},
    {66, kConv, {{1, 1, 1}, {0, 0, 0}, {1, 1, 1}, {}, 1}},
    {67, kConv, {{1}, {0}, {1}, {}, 1}},
    {68, kTransposed, {{1, 1, 1}, {0, 0, 0}, {1, 1, 1}, {0, 0, 0}, 1}},
    {69, kTransposed, {{1, 1}, {0, 0}, {1, 1}, {0, 0}, 1}},
    {70, kTransposed, {{1, 1, 1}, {0, 0, 0}, {1, 1, 1}, {0, 0, 0}, 1}},
    {71, kTransposed, {{1, 1}, {0, 0}, {1, 1}, {0, 0}, 1}},
    {72, kTransposed, {{2, 2, 2}, {1, 2, 3}, {1, 1, 1}, {1, 1, 1}, 4}},
    {73, kTransposed, {{2, 2, 2}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, 1}},  // groups=4 never reaches the module
    {74, kTransposed, {{1}, {0}, {3}, {0}, 1}},
    {75, kTransposed, {{2, 3}, {1, 2}, {2, 1}, {0, 0}, 4}},
    {76, kConv, {{3}, {0}, {4}, {}, 1}},
    {77, kTransposed, {{2, 2, 2}, {1, 1, 1}, {2, 2, 2}, {0, 0, 0}, 1}},
    {78, kTransposed, {{1, 1}, {1, 3}, {1, 1}, {0, 0}, 1}},
    {79, kTransposed, {{2}, {1}, {2}, {0}, 1}},
    {80, kConv, {{1, 1}, {2, 4}, {2, 3}, {}, 1}},
    {81, kTransposed, {{5, 5}, {1, 1}, {2, 2}, {0, 0}, 1}},
    {82, kConv, {{1, 1}, {0, 0}, {1, 1}, {}, 64}},
    {83, kConv, {{1, 1}, {0, 0}, {1, 1}, {}, 8}},
    {84, kConv, {{1, 1}, {0, 0}, {1, 1}, {}, 128}},
    {85, kConv, {{1, 1}, {0, 0}, {1, 1}, {}, 128}},
    {87, kConv, {{1, 1}, {0, 0}, {1, 1}, {}, 1}},
};
// clang-format on

class ConvTest : public ::testing::TestWithParam<ConvCase> {};

TEST_P(ConvTest, MatchesNaiveLoops) {
  const auto& c = GetParam();
  auto run = run_small(c.id);
  const auto& x = run.inputs.at(0);
  const std::string nd = std::to_string(x.dim() - 2) + "d";
  SCOPED_TRACE(c.transposed
                   ? "torch::nn::ConvTranspose" + nd + " vs naive scatter transposed conv (float64)"
                   : "torch::nn::Conv" + nd + " vs naive direct conv (float64 loops)");
  const auto params = run.model.parameters();
  ASSERT_FALSE(params.empty());
  const torch::Tensor bias = params.size() > 1 ? params[1] : torch::Tensor();
  const auto expected = c.transposed ? naive_conv_transpose(x, params[0], c.geo)
                                     : naive_conv(x, params[0], bias, c.geo);
  expect_close(run.outputs.at(0), expected);
}

INSTANTIATE_TEST_SUITE_P(Level1, ConvTest, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return "task" + std::to_string(info.param.id); });

TEST(ReferenceConv, Task86DepthwiseSeparableMatchesTwoNaiveConvs) {
  SCOPED_TRACE("Conv2d(groups=64, k3, p1) then Conv2d(k1) vs two naive direct convs (float64)");
  auto run = run_small(86);
  const auto params = run.model.parameters();
  ASSERT_EQ(params.size(), 2u);
  const auto mid = naive_conv(run.inputs[0], params[0], {}, {{1, 1}, {1, 1}, {1, 1}, {}, 64});
  expect_close(run.outputs[0], naive_conv(mid, params[1], {}, {{1, 1}, {0, 0}, {1, 1}, {}, 1}));
}

TEST(ReferenceConv, EveryConvTaskIsTested) {
  std::set<int> tested = {86};
  for (const auto& c : kCases) tested.insert(c.id);
  std::set<int> conv;
  for (int id : task_ids())
    if (task_spec(id, Scale::small).family == Family::conv) conv.insert(id);
  std::set<int> expected = {50};
  for (int id = 54; id <= 87; ++id) expected.insert(id);
  EXPECT_EQ(conv, expected);
  EXPECT_EQ(tested, expected);
}

TEST(ReferenceConv, SmallScaleKeepsKernelBenchParameterShapes) {
  // Only batch and spatial dims shrink: channels, kernels and groups (hence weights) stay.
  for (const auto& c : kCases) {
    SCOPED_TRACE("task " + std::to_string(c.id));
    EXPECT_EQ(task_spec(c.id, Scale::small).parameters,
              task_spec(c.id, Scale::kernelbench).parameters);
  }
}

std::vector<TensorSpec> params(int id) { return task_spec(id, Scale::kernelbench).parameters; }
TensorSpec f32(std::string name, Dims shape) {
  return {std::move(name), std::move(shape), DType::f32};
}

TEST(ReferenceConv, KernelBenchQuirksInParameters) {
  // 50: AlexNet conv1 with bias.
  EXPECT_EQ(params(50), (std::vector{f32("weight", {96, 3, 11, 11}), f32("bias", {96})}));
  // 59: kernel_size=3 builds a (3, 3, 1) kernel.
  EXPECT_EQ(params(59), (std::vector{f32("weight", {64, 3, 3, 3, 1})}));
  // 72: transposed weight [C_in, C_out/groups, k...] with groups=4.
  EXPECT_EQ(params(72), (std::vector{f32("weight", {32, 8, 3, 5, 7})}));
  // 73: groups=4 binds to the unused output_padding parameter: groups=1.
  EXPECT_EQ(params(73), (std::vector{f32("weight", {32, 32, 3, 3, 3})}));
  // 85: out_channels and groups are ignored; depthwise over in_channels.
  EXPECT_EQ(params(85), (std::vector{f32("weight", {128, 1, 3, 7})}));
  // 86: depthwise then pointwise, both without bias.
  EXPECT_EQ(params(86), (std::vector{f32("depthwise.weight", {64, 1, 3, 3}),
                                     f32("pointwise.weight", {128, 64, 1, 1})}));
}

TEST(ReferenceConv, KernelBenchFlops) {
  const auto flops = [](int id) { return task_spec(id, Scale::kernelbench).flops; };
  // Conv: 2 * outputs * C_in/groups * kernel volume.
  EXPECT_DOUBLE_EQ(flops(76), 2.0 * 64 * 128 * 174758 * 64 * 3);
  EXPECT_DOUBLE_EQ(flops(85), 2.0 * 32 * 128 * 126 * 250 * 1 * 21);
  // Transposed: 2 * inputs * C_out/groups * kernel volume.
  EXPECT_DOUBLE_EQ(flops(72), 2.0 * 8 * 32 * 12 * 24 * 48 * 8 * 105);
  EXPECT_DOUBLE_EQ(flops(73), 2.0 * 4 * 32 * 32 * 64 * 128 * 32 * 27);
  // 86: both convolutions.
  EXPECT_DOUBLE_EQ(flops(86), 2.0 * 16 * 64 * 512 * 512 * 9 + 2.0 * 16 * 128 * 512 * 512 * 64);
}

}  // namespace
}  // namespace kbrl::testing
