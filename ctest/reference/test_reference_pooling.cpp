// Pooling references (libtorch nn::MaxPoolNd, nn::AvgPoolNd) against plain window loops in float64.
#include <cmath>
#include <limits>

#include "reference_testing.h"

namespace kbrl::testing {
namespace {

struct Pool {
  int id;
  const char* what;  // the libtorch module under test, and the independent implementation
  bool max;          // max pooling, else average pooling with count_include_pad
  int64_t kernel, stride, padding, dilation;
};

const Pool kPools[] = {
    {41, "nn::MaxPool1d(8,s1,p4,d3) vs window loop", true, 8, 1, 4, 3},
    {42, "nn::MaxPool2d(4,s1,p1) vs window loop", true, 4, 1, 1, 1},
    {43, "nn::MaxPool3d(3,s2,p1,d3) vs window loop", true, 3, 2, 1, 3},
    {44, "nn::AvgPool1d(8,s1,p4) vs window loop, padding counted", false, 8, 1, 4, 1},
    {45, "nn::AvgPool2d(11) vs window loop with stride 11", false, 11, 11, 0, 1},
    {46, "nn::AvgPool3d(3,s2,p1) vs window loop, padding counted", false, 3, 2, 1, 1},
};

/// Pools x:[N,C,spatial...] with plain loops over every output position and every window offset.
/// Positions in the padding are skipped by max pooling and count as zeros for average pooling
/// (whose divisor is always the kernel volume).
torch::Tensor pool_loops(const torch::Tensor& input, const Pool& p) {
  auto x = input.contiguous().to(torch::kFloat64);
  const int64_t dims = x.dim() - 2;
  std::vector<int64_t> in_len(x.sizes().begin() + 2, x.sizes().end());
  std::vector<int64_t> out_shape = {x.size(0), x.size(1)}, out_len;
  for (int64_t n : in_len) {
    // Count the window starts whose last tap still lies inside the padded input.
    int64_t count = 0;
    while (count * p.stride - p.padding + p.dilation * (p.kernel - 1) <= n - 1 + p.padding) ++count;
    out_len.push_back(count);
    out_shape.push_back(count);
  }
  int64_t in_plane = 1, out_plane = 1, taps = 1;
  for (int64_t d = 0; d < dims; ++d) {
    in_plane *= in_len[d];
    out_plane *= out_len[d];
    taps *= p.kernel;
  }
  auto out = torch::empty(out_shape, torch::kFloat64);
  const double* src = x.data_ptr<double>();
  double* dst = out.data_ptr<double>();
  std::vector<int64_t> pos(dims), tap(dims);
  for (int64_t plane = 0; plane < x.size(0) * x.size(1); ++plane) {
    for (int64_t o = 0; o < out_plane; ++o) {
      // Row-major coordinates of output position o.
      for (int64_t d = dims - 1, rest = o; d >= 0; --d) {
        pos[d] = rest % out_len[d];
        rest /= out_len[d];
      }
      double acc = p.max ? -std::numeric_limits<double>::infinity() : 0.0;
      for (int64_t t = 0; t < taps; ++t) {
        for (int64_t d = dims - 1, rest = t; d >= 0; --d) {
          tap[d] = rest % p.kernel;
          rest /= p.kernel;
        }
        bool inside = true;
        int64_t flat = 0;
        for (int64_t d = 0; d < dims; ++d) {
          const int64_t i = pos[d] * p.stride - p.padding + tap[d] * p.dilation;
          inside = inside && i >= 0 && i < in_len[d];
          flat = flat * in_len[d] + i;
        }
        if (!inside) continue;
        const double v = src[plane * in_plane + flat];
        acc = p.max ? std::max(acc, v) : acc + v;
      }
      dst[plane * out_plane + o] = p.max ? acc : acc / static_cast<double>(taps);
    }
  }
  return out;
}

class PoolingTest : public ::testing::TestWithParam<Pool> {};

TEST_P(PoolingTest, MatchesWindowLoops) {
  const auto& pool = GetParam();
  SCOPED_TRACE(pool.what);
  auto run = run_small(pool.id);
  EXPECT_EQ(run.outputs[0].sizes().vec(), run.spec.outputs[0].shape);
  // Shift inputs to [-1,1): a padded position taken as 0 instead of -inf then changes a max.
  auto x = run.inputs[0] * 2 - 1;
  auto y = run.model({x}, {})[0];
  expect_close(y, pool_loops(x, pool));
}

INSTANTIATE_TEST_SUITE_P(Level1, PoolingTest, ::testing::ValuesIn(kPools),
                         [](const auto& info) { return "task" + std::to_string(info.param.id); });

TEST(ReferencePooling, FlopsAreKernelVolumePerOutput) {
  // Output shapes at KernelBench's scale from level1_tasks.csv, times the kernel volume.
  auto flops = [](int id) { return task_spec(id, Scale::kernelbench).flops; };
  EXPECT_DOUBLE_EQ(flops(41), 8.0 * 64 * 192 * 65523);
  EXPECT_DOUBLE_EQ(flops(42), 16.0 * 32 * 64 * 511 * 511);
  EXPECT_DOUBLE_EQ(flops(43), 27.0 * 16 * 32 * 62 * 62 * 62);
  EXPECT_DOUBLE_EQ(flops(44), 8.0 * 64 * 128 * 65537);
  EXPECT_DOUBLE_EQ(flops(45), 121.0 * 16 * 64 * 186 * 186);
  EXPECT_DOUBLE_EQ(flops(46), 27.0 * 16 * 32 * 64 * 64 * 128);
  for (int id = 41; id <= 46; ++id) EXPECT_EQ(task_spec(id, Scale::small).family, Family::pooling);
}

}  // namespace
}  // namespace kbrl::testing
