// The language model's update on a GPU (part of test_lm_gpu; skipped where there is none): the fused
// operations against the plain ones in bfloat16, pooled passes against one pass per completion, and
// the layer's kernels against torch operations.
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include <kbrl/splitmix64.h>
#include <policies/lm/fused_ops.h>
#include <policies/lm/llama_net.h>
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
// Two shapes: 4 heads of their own keys (4x256) and 6 query heads over 2 key/value heads (4x384).
class FusedUpdate : public ::testing::TestWithParam<const char*> {};

TEST_P(FusedUpdate, AgreesWithPlainInBfloat16) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no GPU: libtorch sees no CUDA device";
  std::printf("[ figures ] %s; flash attention takes grouped heads: %s\n", GetParam(),
              flash_takes_grouped_heads() ? "yes" : "no");
  LmOptions o = parse_lm_spec(std::string("lm:random:") + GetParam() +
                              ":1,device=cuda,dtype=bfloat16,shots=0,system=none,micro_batch=4");
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

INSTANTIATE_TEST_SUITE_P(LmGpu, FusedUpdate, ::testing::Values("4x256", "4x384"));

// Pooled passes on a GPU (micro_batches.h; the GPU's default): completions of four prompts, two
// each, in one pass behind the prompts' common prefix against one pass per completion, fused, in
// bfloat16: one SFT and one GRPO step (KL and entropy terms) the same up to bfloat16 rounding
// (the batching changes the order of sums), with FusedUpdate's tolerances.
TEST(PooledUpdate, AgreesWithOnePassPerCompletionInBfloat16) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no GPU: libtorch sees no CUDA device";
  LmOptions one = parse_lm_spec("lm:random:4x256:1,device=cuda,dtype=bfloat16,shots=0,system=none,micro_batch=1");
  LmOptions pooled = one;
  pooled.micro_batch = 8;
  pooled.pool = "on";
  LmPolicy a(one), b(pooled);
  for (LmPolicy* p : {&a, &b}) {
    p->add_adapter({8, 16.0}, 3);
    p->set_optimizer({.learning_rate = 1e-3});
  }
  std::vector<TrainItem> items;
  uint64_t rng = 7;
  for (int id : {19, 21, 22, 23})
    for (int k = 0; k < 2; ++k) {
      TrainItem it;
      it.task = task_spec(id, Scale::small);
      const int length = 50 + static_cast<int>(splitmix64(rng) % 200);
      for (int t = 0; t < length; ++t) it.tokens.push_back(static_cast<int>(splitmix64(rng) % 256));
      it.advantages.assign(it.tokens.size(), k ? 1.0 : -1.0);
      items.push_back(std::move(it));
    }
  UpdateConfig sft;
  sft.objective = Objective::likelihood;
  sft.aggregation = Aggregation::token_mean;
  UpdateConfig grpo;
  grpo.kl_coef = 0.05;
  grpo.entropy_coef = 0.01;
  for (const UpdateConfig& config : {sft, grpo}) {
    const UpdateStats x = a.update(items, config), y = b.update(items, config);
    std::printf("[ figures ] loss %.6g / %.6g, grad norm %.6g / %.6g, kl %.6g / %.6g (one pass each / pooled)\n",
                x.loss, y.loss, x.grad_norm, y.grad_norm, x.kl, y.kl);
    EXPECT_GT(x.grad_norm, 0.0);
    EXPECT_NEAR(x.loss, y.loss, 0.01 * std::abs(x.loss) + 1e-6);
    EXPECT_NEAR(x.grad_norm, y.grad_norm, 0.02 * x.grad_norm);
    EXPECT_NEAR(x.entropy, y.entropy, 0.01 * x.entropy);
    EXPECT_EQ(x.tokens, y.tokens);
  }
}

// The layer's kernels (fused_ops.h) against the torch operations they replace, forward and backward,
// in float32 and bfloat16: the rotary embedding of [3, 37, 5, 64] (T = 37 positions), RMSNorm of
// SmolLM2's width (576), SwiGLU's product of its intermediate width (1,536), and the output's
// log-probs and entropies with their gradient.
TEST(LmGpu, LayerKernelsAgreeWithTorchOperations) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no GPU: libtorch sees no CUDA device";
  torch::manual_seed(7);
  const auto f32 = torch::TensorOptions().device(torch::kCUDA).dtype(torch::kFloat32);
  const int64_t T = 37, D = 64;
  const torch::Tensor inv = torch::pow(10000.0, -torch::arange(0, D / 2, f32) * 2.0 / D);
  const torch::Tensor angles = torch::outer(torch::arange(100, 100 + T, f32), inv);
  const torch::Tensor cos = torch::cat({angles.cos(), angles.cos()}, -1), sin = torch::cat({angles.sin(), angles.sin()}, -1);
  const torch::Tensor w = torch::rand({576}, f32) + 0.5;
  using Op = std::function<torch::Tensor(const std::vector<torch::Tensor>&)>;
  for (const auto type : {torch::kFloat32, torch::kBFloat16}) {
    const char* type_name = type == torch::kFloat32 ? "float32" : "bfloat16";
    const double tol = type == torch::kFloat32 ? 1e-5 : 2e-2;
    auto relative = [](const torch::Tensor& a, const torch::Tensor& b) {  // largest difference over largest value
      return (a.to(torch::kFloat32) - b.to(torch::kFloat32)).abs().max().item<double>() /
             (b.to(torch::kFloat32).abs().max().item<double>() + 1e-12);
    };
    // The kernel's op and the torch operations' on the same random inputs of `shape` (every input and
    // the output that shape), forward and the gradient of every input for the same random grad.
    auto check = [&](const char* what, std::vector<int64_t> shape, size_t inputs, const Op& fused, const Op& plain) {
      std::vector<torch::Tensor> x, xr;
      for (size_t i = 0; i < inputs; ++i) {
        x.push_back(torch::randn(shape, f32).to(type).requires_grad_());
        xr.push_back(x.back().detach().clone().requires_grad_());
      }
      const torch::Tensor g = torch::randn(shape, f32).to(type);
      const torch::Tensor y = fused(x), yr = plain(xr);
      y.backward(g);
      yr.backward(g);
      double backward = 0;
      for (size_t i = 0; i < inputs; ++i) backward = std::max(backward, relative(x[i].grad(), xr[i].grad()));
      const double forward = relative(y, yr);
      std::printf("[ figures ] %s %s: forward %.3g, backward %.3g (largest difference over largest value)\n", what,
                  type_name, forward, backward);
      EXPECT_LT(forward, tol) << what << " " << type_name;
      EXPECT_LT(backward, tol) << what << " " << type_name;
    };
    check("rotary", {3, T, 5, D}, 1, [&](const auto& v) { return fused_rope(v[0], cos, sin); },
          [&](const auto& v) { return apply_rope(v[0], cos.unsqueeze(1), sin.unsqueeze(1)); });
    check("rms_norm", {2, 45, 576}, 1, [&](const auto& v) { return fused_rms_norm(v[0], w, 1e-5); },
          [&](const auto& v) { return rms_norm(v[0], w, 1e-5); });
    check("swiglu", {2, 45, 1536}, 2, [&](const auto& v) { return fused_swiglu(v[0], v[1]); },
          [&](const auto& v) { return torch::silu(v[0]) * v[1]; });
    {  // the output's scores: 9 rows of 5,000 logits at temperature 0.7, the gradient of both scores
      const double temperature = 0.7;
      torch::Tensor logits = (torch::randn({9, 5000}, f32) * 3).to(type);
      const torch::Tensor targets = torch::randint(0, 5000, {9}, f32.dtype(torch::kInt64));
      const torch::Tensor g_lp = torch::randn({9}, f32), g_ent = torch::randn({9}, f32);
      const torch::Tensor leaf = logits.detach().clone().requires_grad_();
      const torch::Tensor logp = torch::log_softmax(leaf.to(torch::kFloat32) / temperature, -1);
      const torch::Tensor lp = logp.gather(-1, targets.unsqueeze(-1)).squeeze(-1), ent = -(logp.exp() * logp).sum(-1);
      (lp * g_lp + ent * g_ent).sum().backward();
      const KernelTokenScores k = kernel_token_scores(logits, targets, temperature, true);
      const double forward = std::max(relative(k.logprob, lp), relative(k.entropy, ent));
      kernel_token_scores_backward(logits, targets, k.stats, g_lp, g_ent, temperature);
      const double backward = relative(logits, leaf.grad());
      std::printf("[ figures ] token_scores %s: forward %.3g, backward %.3g\n", type_name, forward, backward);
      EXPECT_LT(forward, 1e-5) << type_name;  // float32 arithmetic on the same logits either way
      EXPECT_LT(backward, tol) << type_name;
    }
  }
}

}  // namespace
}  // namespace kbrl::lm
