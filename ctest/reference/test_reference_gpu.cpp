// The references on the GPU (label gpu; skipped where there is none): every task runs once at
// kernelbench scale, and at small scale the GPU agrees with the CPU on the same inputs and parameters.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "harness/gpu_session.h"
#include "reference/reference_model.h"
#include "reference/task_registry.h"

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
