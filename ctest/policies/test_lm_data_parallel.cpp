// Data-parallel GRPO updates (policies/lm/data_parallel.h) against one process on the whole batch:
// a small random model, 8 completions of 16-47 tokens over two tasks' prompts, passes of 2
// completions, no gradient clipping; the same batch on 1, 2 and 3 ranks (3 gets shares of 3, 3 and
// 2). Every rank must hold the same summed gradient, equal to one process's within float32 summation
// noise, report the same loss, entropy, KL and gradient norm, and take the same step (the second
// step's gradient). A rank that ran the whole batch would double the gradient; one that ran nothing
// would halve it.
// On a CPU build through Gloo; on a CUDA build through NCCL on GPUs 0..2 (gpu label: skipped with
// fewer than 2 GPUs).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <kbrl/error.h>
#include <policies/lm/data_parallel.h>
#if KBRL_TORCH_CUDA
#include <torch/cuda.h>
#endif

#include "data_parallel_testing.h"

namespace kbrl::lm {
namespace {

namespace fs = std::filesystem;

bool on_gpus() {
#if KBRL_TORCH_CUDA
  return true;
#else
  return false;
#endif
}

int gpu_count() {
#if KBRL_TORCH_CUDA
  return static_cast<int>(torch::cuda::device_count());
#else
  return 0;
#endif
}

// One configuration on 1 rank and on `sizes` ranks: the summed gradients of steps 1 and 2 and the
// statistics against one process's.
void expect_one_processs_step(const std::vector<std::string>& args, const std::vector<int>& sizes, const fs::path& dir,
                              bool gpus) {
  const std::string backend = DataParallelGroup::backends().front();
  const auto one = testing::run_ranks(KBRL_LM_DP_RANK, args, 1, dir / "size1", gpus, std::chrono::seconds(80));
  ASSERT_EQ(one.error, "");
  ASSERT_GT(one.gradients.at(0).size(), 0u);
  const nlohmann::json& first = one.reports[0]["steps"][0];
  for (int size : sizes) {
    if (gpus && size > gpu_count()) continue;
    const auto run = testing::run_ranks(KBRL_LM_DP_RANK, args, size, dir / ("size" + std::to_string(size)), gpus,
                                        std::chrono::seconds(80));
    ASSERT_EQ(run.error, "") << size << " ranks";
    for (int r = 0; r < size; ++r) {
      SCOPED_TRACE("rank " + std::to_string(r) + " of " + std::to_string(size));
      EXPECT_EQ(run.reports[r]["backend"], backend);
      EXPECT_EQ(run.gradients[r], run.gradients[0]) << "another rank holds another sum";
      EXPECT_LT(testing::relative_difference(run.gradients[r], one.gradients[0]), 1e-5)
          << "the summed gradient differs from one process's";
      EXPECT_LT(testing::relative_difference(run.gradients2[r], one.gradients2[0]), 1e-4)
          << "step 2's gradient differs: another step 1 was taken";
      const nlohmann::json& step = run.reports[r]["steps"][0];
      for (const char* stat : {"grad_norm", "loss", "entropy", "kl", "clip_fraction"}) {
        if (first[stat].is_null()) {  // not measured (the KL without a KL term): not measured on any rank
          EXPECT_TRUE(step[stat].is_null()) << stat;
          continue;
        }
        EXPECT_NEAR(step[stat].get<double>(), first[stat].get<double>(), 1e-5 * (1 + std::abs(first[stat].get<double>())))
            << stat;
      }
      EXPECT_EQ(step["tokens"], first["tokens"]);
    }
    std::printf("[ figures ] %d ranks (%s): gradient relative difference from one process's %.2e (step 1), %.2e "
                "(step 2); gradient norm %.6f (one process %.6f)\n",
                size, backend.c_str(), testing::relative_difference(run.gradients[0], one.gradients[0]),
                testing::relative_difference(run.gradients2[0], one.gradients2[0]),
                run.reports[0]["steps"][0]["grad_norm"].get<double>(), first["grad_norm"].get<double>());
  }
}

TEST(LmDataParallel, RanksTakeOneProcesssStep) {
  const bool gpus = on_gpus();
  if (gpus && gpu_count() < 2) GTEST_SKIP() << "fewer than 2 GPUs";
  ASSERT_FALSE(DataParallelGroup::backends().empty())
      << "this build has no data-parallel backend: on Debian install libgloo-dev (.ci/setup does), then configure again";
  const std::string spec = std::string("spec=lm:random:2x64:3,shots=0,system=none,micro_batch=2,device=") +
                           (gpus ? "cuda" : "cpu");
  const fs::path dir = fs::temp_directory_path() / ("kbrl-test-dp-" + std::to_string(::getpid()));
  // GRPO as the experiments run it: completions of different lengths over two tasks' prompts, some
  // with sampling log-probs, a KL term, no clipping (a gradient summed at the wrong scale shows).
  expect_one_processs_step({spec, "k=8", "tokens=32", "steps=2", "rank_lora=4", "lr=1e-2", "clip=0", "varied=1", "kl=0.05"},
                           {2, 3}, dir / "grpo", gpus);
  // Every token weighted alike: the weights divide by the whole batch's tokens, not a rank's.
  expect_one_processs_step({spec, "k=8", "tokens=32", "steps=2", "rank_lora=4", "lr=1e-2", "clip=0", "varied=1",
                            "aggregation=token_mean"},
                           {2}, dir / "token_mean", gpus);
  fs::remove_all(dir);
}

TEST(LmDataParallel, BadGroupsAreRefused) {
  auto options = [](const std::string& store, int rank, int size, const std::string& backend) {
    DataParallelOptions o;
    o.store = store;
    o.rank = rank;
    o.size = size;
    o.backend = backend;
    return o;
  };
  EXPECT_THROW(DataParallelGroup::join(options("/tmp/x", 2, 2, ""), false), InputError);
  EXPECT_THROW(DataParallelGroup::join(options("", 0, 1, ""), false), InputError);
  EXPECT_THROW(DataParallelGroup::join(options("/tmp/x", 0, 1, "mpi"), false), InputError);
}

}  // namespace
}  // namespace kbrl::lm
