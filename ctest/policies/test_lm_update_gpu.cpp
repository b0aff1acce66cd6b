// The language model's update on a GPU (part of test_lm_gpu; skipped where there is none): the fused
// operations against the plain ones in bfloat16.
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include <cmath>
#include <cstdio>
#include <vector>

#include <kbrl/splitmix64.h>
#include <policies/lm/lm_policy.h>
#include <reference/task_registry.h>

namespace kbrl::lm {
namespace {

constexpr int kTask = 19;  // ReLU

// The update's fused operations on a GPU in bfloat16 (flash or memory-efficient attention, the
// output's log-probs in chunks) against the plain tensor operations, one GRPO step with the KL and
// entropy terms over completions of the ReLU prompt of unequal lengths: the same step up to
// bfloat16 rounding (the plain path rounds attention scores to bfloat16, the fused kernels keep
// them in float32). Tolerances: loss and entropy 1% (relative), gradient norm 2%, log-probs 0.05
// nats a token on average.
TEST(LmGpu, FusedUpdateAgreesWithPlainInBfloat16) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no GPU: libtorch sees no CUDA device";
  LmOptions o = parse_lm_spec("lm:random:4x256:1,device=cuda,dtype=bfloat16,shots=0,system=none,micro_batch=4");
  LmOptions f = o;
  o.model_options.fused = false;
  LmPolicy plain(o), fused(f);
  for (LmPolicy* p : {&plain, &fused}) {
    p->add_adapter({8, 16.0}, 3);
    p->set_optimizer({.learning_rate = 1e-3});
  }
  const TaskSpec task = task_spec(kTask, Scale::small);
  std::vector<TrainItem> items(8);
  std::vector<std::vector<int>> completions;
  uint64_t rng = 5;
  for (size_t i = 0; i < items.size(); ++i) {
    items[i].task = task;
    const int length = 100 + static_cast<int>(splitmix64(rng) % 300);
    for (int t = 0; t < length; ++t) items[i].tokens.push_back(static_cast<int>(splitmix64(rng) % 256));
    items[i].advantages.assign(items[i].tokens.size(), i % 2 ? 1.0 : -1.0);
    completions.push_back(items[i].tokens);
  }
  UpdateConfig config;
  config.kl_coef = 0.05;
  config.entropy_coef = 0.01;
  for (int step = 0; step < 2; ++step) {
    const UpdateStats a = plain.update(items, config), b = fused.update(items, config);
    std::printf("[ figures ] step %d: loss %.6g / %.6g, grad norm %.6g / %.6g, entropy %.6g / %.6g (plain / fused)\n",
                step, a.loss, b.loss, a.grad_norm, b.grad_norm, a.entropy, b.entropy);
    EXPECT_GT(a.grad_norm, 0.0);
    EXPECT_NEAR(a.loss, b.loss, 0.01 * std::abs(a.loss) + 1e-6) << "step " << step;
    EXPECT_NEAR(a.grad_norm, b.grad_norm, 0.02 * a.grad_norm) << "step " << step;
    EXPECT_NEAR(a.entropy, b.entropy, 0.01 * a.entropy) << "step " << step;
  }
  const auto la = plain.logprob(task, completions), lb = fused.logprob(task, completions);
  double diff = 0;
  size_t n = 0;
  for (size_t i = 0; i < la.size(); ++i)
    for (size_t j = 0; j < la[i].size(); ++j, ++n) diff += std::abs(la[i][j] - lb[i][j]);
  std::printf("[ figures ] mean |log-prob difference| after two steps: %.4g nats over %zu tokens\n", diff / n, n);
  EXPECT_LT(diff / n, 0.05);
}

}  // namespace
}  // namespace kbrl::lm
