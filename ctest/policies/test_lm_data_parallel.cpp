// Data-parallel GRPO updates (policies/lm/data_parallel.h) against one process on the whole batch:
// a small random model, 8 completions of 32 tokens, passes of 2 completions; the same batch on 1, 2
// and 3 ranks (3 gets shares of 3, 3 and 2). Every rank must hold the same summed gradient, equal to
// one process's within float32 summation noise, and take the same step (the second step's gradient). A
// rank that ran the whole batch would double the gradient; one that ran nothing would halve it.
// On a CPU build through Gloo; on a CUDA build through NCCL on GPUs 0..2 (gpu label: skipped with
// fewer than 2 GPUs).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <unistd.h>

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

TEST(LmDataParallel, RanksTakeOneProcesssStep) {
  const auto backends = DataParallelGroup::backends();
  const bool gpus = on_gpus();
  if (gpus && gpu_count() < 2) GTEST_SKIP() << "fewer than 2 GPUs";
  ASSERT_FALSE(backends.empty()) << "this build has no data-parallel backend: on Debian install libgloo-dev "
                                    "(.ci/setup does), then configure again";
  const std::string spec = std::string("spec=lm:random:2x64:3,shots=0,system=none,micro_batch=2,device=") +
                           (gpus ? "cuda" : "cpu");
  const std::vector<std::string> args = {spec, "k=8", "tokens=32", "steps=2", "rank_lora=4", "lr=1e-2"};
  const fs::path dir = fs::temp_directory_path() / ("kbrl-test-dp-" + std::to_string(::getpid()));
  const auto one = testing::run_ranks(KBRL_LM_DP_RANK, args, 1, dir / "size1", gpus, std::chrono::seconds(240));
  ASSERT_EQ(one.error, "");
  const std::vector<float>& reference = one.gradients.at(0);
  ASSERT_GT(reference.size(), 0u);
  for (int size : {2, 3}) {
    if (gpus && size > gpu_count()) continue;
    const auto run = testing::run_ranks(KBRL_LM_DP_RANK, args, size, dir / ("size" + std::to_string(size)), gpus,
                                        std::chrono::seconds(240));
    ASSERT_EQ(run.error, "") << size << " ranks";
    for (int r = 0; r < size; ++r) {
      EXPECT_EQ(run.reports[r]["backend"], backends.front());
      EXPECT_EQ(run.gradients[r], run.gradients[0]) << "rank " << r << " of " << size << " holds another sum";
      const double diff = testing::relative_difference(run.gradients[r], reference);
      EXPECT_LT(diff, 1e-5) << "rank " << r << " of " << size << ": the summed gradient differs from one process's";
      EXPECT_LT(testing::relative_difference(run.gradients2[r], one.gradients2[0]), 1e-4)
          << "rank " << r << " of " << size << ": step 2's gradient differs: another step 1 was taken";
      EXPECT_EQ(run.reports[r]["steps"][0]["tokens"], 8 * 32);
    }
    std::printf("[ figures ] %d ranks (%s): gradient relative difference from one process's %.2e (step 1), %.2e "
                "(step 2)\n",
                size, backends.front().c_str(), testing::relative_difference(run.gradients[0], reference),
                testing::relative_difference(run.gradients2[0], one.gradients2[0]));
  }
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
