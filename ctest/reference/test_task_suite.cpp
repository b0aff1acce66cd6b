// The task suite as a whole: every reference runs at small scale and agrees with its spec; FLOP and
// byte counts follow hand-derived formulas; the splits are fixed and well formed.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include <kbrl/error.h>

#include <reference/reference_model.h>
#include <reference/splits.h>
#include <reference/task_registry.h>

namespace kbrl {
namespace {

TEST(TaskSuite, HasAllHundredLevel1Tasks) {
  const auto& ids = task_ids();
  ASSERT_EQ(ids.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(ids[i], i + 1);
}

TEST(TaskSuite, UnknownIdIsAnInputError) {
  EXPECT_THROW(task_spec(0, Scale::small), InputError);
  EXPECT_THROW(task_spec(101, Scale::kernelbench), InputError);
  EXPECT_THROW(parse_scale("huge"), InputError);
}

// Every reference runs on the CPU at small scale; outputs and parameters match the spec exactly.
TEST(TaskSuite, EverySmallReferenceRunsAndMatchesItsSpec) {
  for (int id : task_ids()) {
    SCOPED_TRACE("task " + std::to_string(id));
    const TaskSpec spec = task_spec(id, Scale::small);
    auto model = make_reference(spec);
    auto inputs = make_inputs(spec, /*seed=*/7, torch::kCPU);
    ASSERT_EQ(inputs.size(), spec.inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      EXPECT_EQ(inputs[i].sizes().vec(), spec.inputs[i].shape) << spec.inputs[i].name;
      EXPECT_EQ(inputs[i].scalar_type(), to_torch(spec.inputs[i].dtype)) << spec.inputs[i].name;
    }
    auto params = model.parameters();
    ASSERT_EQ(params.size(), spec.parameters.size());
    for (size_t i = 0; i < params.size(); ++i)
      EXPECT_EQ(params[i].sizes().vec(), spec.parameters[i].shape) << spec.parameters[i].name;
    std::vector<double> scalars;
    for (const auto& s : spec.scalars) scalars.push_back(s.value);
    auto outputs = model(inputs, scalars);
    ASSERT_EQ(outputs.size(), spec.outputs.size());
    for (size_t i = 0; i < outputs.size(); ++i) {
      EXPECT_EQ(outputs[i].sizes().vec(), spec.outputs[i].shape);
      EXPECT_EQ(outputs[i].scalar_type(), to_torch(spec.outputs[i].dtype));
      if (outputs[i].is_floating_point()) {
        EXPECT_TRUE(torch::isfinite(outputs[i]).all().item<bool>()) << "non-finite output";
      }
    }
  }
}

TEST(TaskSuite, ParametersAreFixedBySeedAndInputsBySeed) {
  const TaskSpec spec = task_spec(63, Scale::small);  // a conv with a weight
  auto a = make_reference(spec), b = make_reference(spec);
  ASSERT_FALSE(a.parameters().empty());
  EXPECT_TRUE(torch::equal(a.parameters()[0], b.parameters()[0]));
  EXPECT_TRUE(torch::equal(make_inputs(spec, 3, torch::kCPU)[0], make_inputs(spec, 3, torch::kCPU)[0]));
  EXPECT_FALSE(torch::equal(make_inputs(spec, 3, torch::kCPU)[0], make_inputs(spec, 4, torch::kCPU)[0]));
}

TEST(TaskSuite, SmallScaleIsSmall) {
  for (int id : task_ids()) {
    const TaskSpec spec = task_spec(id, Scale::small);
    EXPECT_LT(spec.min_bytes, 64e6) << "task " << id << " is not small";
  }
}

// FLOPs and minimum bytes of tasks of different families against formulas derived by hand from
// KernelBench's shapes (conventions in reference/README.md).
double flops(int id) { return task_spec(id, Scale::kernelbench).flops; }
double bytes(int id) { return task_spec(id, Scale::kernelbench).min_bytes; }

TEST(TaskCounts, GemmIsTwoMNK) {
  EXPECT_DOUBLE_EQ(flops(1), 2.0 * 4096 * 4096 * 4096);
  EXPECT_DOUBLE_EQ(bytes(1), 4.0 * 3 * 4096 * 4096);
  EXPECT_DOUBLE_EQ(flops(3), 2.0 * 128 * 512 * 2048 * 1024);  // bmm
  EXPECT_DOUBLE_EQ(flops(4), 2.0 * 2048 * 1048576);           // matrix-vector
  EXPECT_DOUBLE_EQ(bytes(4), 4.0 * (2048.0 * 1048576 + 1048576 + 2048));
}

TEST(TaskCounts, ElementwiseAndSoftmax) {
  const double n = 4096.0 * 393216;
  EXPECT_DOUBLE_EQ(flops(19), n);  // relu: one max per element
  EXPECT_DOUBLE_EQ(bytes(19), 8.0 * n);
  EXPECT_DOUBLE_EQ(flops(23), 5.0 * n);  // softmax: max, sub, exp, sum, div
  EXPECT_DOUBLE_EQ(bytes(5), 8.0 * 65536 * 16384);  // the scalar s moves no bytes
}

TEST(TaskCounts, ReductionsAndArgReductions) {
  const double in = 128.0 * 4096 * 4095, out = 128.0 * 4095;
  EXPECT_DOUBLE_EQ(flops(47), in);
  EXPECT_DOUBLE_EQ(bytes(47), 4.0 * (in + out));
  EXPECT_DOUBLE_EQ(flops(51), in);
  EXPECT_DOUBLE_EQ(bytes(51), 4.0 * in + 8.0 * out);  // int64 indices
}

TEST(TaskCounts, NormsPoolingScansLosses) {
  const double x = 64.0 * 64 * 512 * 512;
  EXPECT_DOUBLE_EQ(flops(33), 7.0 * x);  // batch norm: stats 3, normalize 2, affine 2
  EXPECT_DOUBLE_EQ(bytes(33), 4.0 * (2 * x + 2 * 64));
  EXPECT_DOUBLE_EQ(flops(42), 16.0 * 32 * 64 * 511 * 511);  // 4x4 window per output
  EXPECT_DOUBLE_EQ(flops(89), 32768.0 * 32768);             // cumsum: one add per element
  EXPECT_DOUBLE_EQ(bytes(93), 32768.0 * 32768 * (4 + 1 + 4));  // x, bool mask, out
  EXPECT_DOUBLE_EQ(flops(94), 3.0 * 32768 * 32768);            // mse: sub, square, sum
  EXPECT_DOUBLE_EQ(bytes(94), 8.0 * 32768 * 32768 + 4);        // 0-d output
  EXPECT_DOUBLE_EQ(bytes(95), 4.0 * 32768 * 4096 + 8.0 * 32768 + 4);  // int64 targets
}

TEST(TaskCounts, ConvAndAttention) {
  // Conv2d 16->128 k3, 1024x1024 -> 1022x1022: 2 * outputs * Cin * kh * kw.
  EXPECT_DOUBLE_EQ(flops(63), 2.0 * 16 * 128 * 1022 * 1022 * 16 * 9);
  EXPECT_DOUBLE_EQ(bytes(63), 4.0 * (16.0 * 16 * 1024 * 1024 + 128 * 16 * 9 + 16.0 * 128 * 1022 * 1022));
  // Task 50: Conv2d 3->96 k11 s4 p2 with bias: 2 * outputs * 3 * 121 + one add per output.
  const double out50 = 256.0 * 96 * 55 * 55;
  EXPECT_DOUBLE_EQ(flops(50), 2.0 * out50 * 3 * 121 + out50);
  // Attention: QK^T and PV (4*B*H*S*S*D) plus softmax (5 per score).
  const double bh = 32.0 * 32, s = 512, d = 1024;
  EXPECT_DOUBLE_EQ(flops(97), 4.0 * bh * s * s * d + 5.0 * bh * s * s);
}

TEST(Splits, EightyTwentyDisjointWithBothSubsets) {
  const auto& train = split("train").ids;
  const auto& eval = split("eval").ids;
  EXPECT_EQ(train.size(), 80u);
  EXPECT_EQ(eval.size(), 20u);
  std::set<int> all(train.begin(), train.end());
  for (int id : eval) EXPECT_TRUE(all.insert(id).second) << "task " << id << " is in both splits";
  EXPECT_EQ(all.size(), 100u);
  for (const char* subset : {"subset1", "subset2"})
    for (int id : split(subset).ids)
      EXPECT_TRUE(std::binary_search(eval.begin(), eval.end(), id)) << subset << " task " << id;
  EXPECT_EQ(split("subset1").ids, (std::vector<int>{4, 5, 12, 14, 15}));
  EXPECT_EQ(split("subset2").ids, (std::vector<int>{18, 28, 29, 30, 32}));
  EXPECT_THROW(split("test"), InputError);
}

TEST(Splits, EvalSplitIsFixed) {
  // The documented draw (kSplitSeed, splitmix64 Fisher-Yates): any change to it is a new split and
  // must be a deliberate, documented change.
  EXPECT_EQ(split("eval").ids,
            (std::vector<int>{4, 5, 12, 14, 15, 16, 17, 18, 20, 28, 29, 30, 32, 40, 41, 52, 66, 67, 73, 79}));
}

}  // namespace
}  // namespace kbrl
