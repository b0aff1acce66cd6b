// The references on the GPU (label gpu; skipped where there is none): every task runs once at
// kernelbench scale on each input set (the stress set drawn quickly on the device), and at small
// scale the GPU agrees with the CPU on the same inputs and parameters.
#include <gtest/gtest.h>
#include <torch/cuda.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include <harness/gpu/gpu_session.h>
#include <reference/reference_model.h>
#include <reference/task_registry.h>

namespace kbrl {
namespace {

class ReferenceGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string reason;
    if (!gpu_available(&reason)) GTEST_SKIP() << "no GPU: " << reason;
    at::globalContext().setAllowTF32CuBLAS(false);
    at::globalContext().setAllowTF32CuDNN(false);
  }
};

std::vector<double> scalars_of(const TaskSpec& spec) {
  std::vector<double> v;
  for (const auto& s : spec.scalars) v.push_back(s.value);
  return v;
}

TEST_F(ReferenceGpu, EveryTaskRunsOnceAtKernelBenchScale) {
  torch::NoGradGuard no_grad;
  const torch::Device cuda(torch::kCUDA, 0);
  for (int id : task_ids()) {
    SCOPED_TRACE("task " + std::to_string(id));
    const TaskSpec spec = task_spec(id, Scale::kernelbench);
    auto model = make_reference(spec);
    model.to(cuda);
    auto outputs = model(make_inputs(spec, /*seed=*/11, cuda), scalars_of(spec));
    ASSERT_EQ(outputs.size(), spec.outputs.size());
    for (size_t i = 0; i < outputs.size(); ++i) {
      EXPECT_EQ(outputs[i].sizes().vec(), spec.outputs[i].shape);
      EXPECT_EQ(outputs[i].scalar_type(), to_torch(spec.outputs[i].dtype));
      EXPECT_TRUE(outputs[i].is_cuda());
      if (outputs[i].is_floating_point()) {
        EXPECT_TRUE(torch::isfinite(outputs[i]).all().item<bool>());
      }
    }
  }
}

// Each stress set drawn on the GPU at kernelbench scale (torch's RNG on the device: a fraction of a
// second even for the 6.4 GB activation inputs), with a finite reference output.
TEST_F(ReferenceGpu, EveryStressSetRunsOnceAtKernelBenchScale) {
  torch::NoGradGuard no_grad;
  const torch::Device cuda(torch::kCUDA, 0);
  for (int id : task_ids()) {
    SCOPED_TRACE("task " + std::to_string(id));
    const TaskSpec spec = task_spec(id, Scale::kernelbench);
    auto model = make_reference(spec);
    model.to(cuda);
    torch::cuda::synchronize();
    const auto start = std::chrono::steady_clock::now();
    const auto inputs = make_inputs(spec, /*seed=*/11, cuda, InputSet::stress);
    torch::cuda::synchronize();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("stress draw task %3d: %8.1f ms\n", id, 1e3 * seconds);
    EXPECT_LT(seconds, 2.0) << "drawing the stress inputs is slow";
    auto outputs = model(inputs, scalars_of(spec));
    ASSERT_EQ(outputs.size(), spec.outputs.size());
    for (const auto& y : outputs) {
      if (y.is_floating_point()) {
        EXPECT_TRUE(torch::isfinite(y).all().item<bool>());
      }
    }
  }
}

// The stress sets are well conditioned: at kernelbench scale, torch's fp32 reference stays within the
// harness's stress tolerance (atol 1e-4 times max(1, RMS of the output), rtol 1e-4, relative L2
// error under 1e-3) of the same operator in fp64 on the same inputs, so a kernel that sums in
// another order, as accurate as torch, passes too. The convolutions are left out (fp64
// convolutions at these sizes take minutes; their weights are small, so x ~ uniform[-10, 10) gives
// outputs of a few units).
TEST_F(ReferenceGpu, StressReferenceAgreesWithFloat64) {
  torch::NoGradGuard no_grad;
  const torch::Device cuda(torch::kCUDA, 0);
  for (int id : task_ids()) {
    const TaskSpec spec = task_spec(id, Scale::kernelbench);
    if (spec.family == Family::conv) continue;
    SCOPED_TRACE("task " + std::to_string(id));
    auto model = make_reference(spec);
    model.to(cuda);
    auto model64 = make_reference(spec);
    model64.module->to(cuda, torch::kFloat64);
    auto inputs = make_inputs(spec, /*seed=*/13, cuda, InputSet::stress);
    const auto actual = model(inputs, scalars_of(spec));
    for (auto& t : inputs)
      if (t.is_floating_point()) t = t.to(torch::kFloat64);
    const auto expected = model64(inputs, scalars_of(spec));
    inputs.clear();
    for (size_t i = 0; i < expected.size(); ++i) {
      if (!expected[i].is_floating_point()) {
        EXPECT_TRUE(torch::equal(actual[i], expected[i])) << "integer output differs from fp64's";
        continue;
      }
      const auto e = expected[i].reshape(-1);
      const auto a = actual[i].reshape(-1);
      const double rms = e.norm().item<double>() / std::sqrt(static_cast<double>(e.numel()));
      const double atol = 1e-4 * std::max(1.0, rms);
      // In chunks: a whole fp64 copy of the error of a 6.4 GB output would not fit beside the rest.
      double max_error = 0, error_sq = 0;
      int64_t outside = 0;
      const int64_t chunk = int64_t{1} << 26;
      for (int64_t start = 0; start < e.numel(); start += chunk) {
        const int64_t length = std::min(chunk, e.numel() - start);
        const auto ec = e.narrow(0, start, length);
        const auto error = (a.narrow(0, start, length).to(torch::kFloat64) - ec).abs();
        max_error = std::max(max_error, error.max().item<double>());
        error_sq += error.square().sum().item<double>();
        outside += (error > atol + 1e-4 * ec.abs()).sum().item<int64_t>();
      }
      const double norm = e.norm().item<double>();
      const double rel_l2 = norm > 0 ? std::sqrt(error_sq) / norm : 0;
      std::printf("stress fp32 vs fp64 task %3d: rms %10.4g  max abs error %10.4g  outside %lld  "
                  "rel L2 %.3g\n",
                  id, rms, max_error, static_cast<long long>(outside), rel_l2);
      EXPECT_EQ(outside, 0) << "elements outside the stress tolerance of fp64's answer";
      EXPECT_LE(rel_l2, 1e-3);
    }
  }
}

TEST_F(ReferenceGpu, SmallScaleGpuAgreesWithCpu) {
  torch::NoGradGuard no_grad;
  const torch::Device cuda(torch::kCUDA, 0);
  for (int id : task_ids()) {
    SCOPED_TRACE("task " + std::to_string(id));
    const TaskSpec spec = task_spec(id, Scale::small);
    auto cpu_model = make_reference(spec);
    auto gpu_model = make_reference(spec);
    gpu_model.to(cuda);
    const auto inputs = make_inputs(spec, /*seed=*/5, torch::kCPU);
    Tensors gpu_inputs;
    for (const auto& t : inputs) gpu_inputs.push_back(t.to(cuda));
    const auto expected = cpu_model(inputs, scalars_of(spec));
    const auto actual = gpu_model(gpu_inputs, scalars_of(spec));
    for (size_t i = 0; i < expected.size(); ++i) {
      auto a = actual[i].cpu().to(torch::kFloat64), e = expected[i].to(torch::kFloat64);
      const double worst = ((a - e).abs() - (1e-4 + 1e-4 * e.abs())).max().item<double>();
      EXPECT_LE(worst, 0.0) << "GPU and CPU references differ by more than 1e-4";
    }
  }
}

}  // namespace
}  // namespace kbrl
