#include "bench_lm_models.h"

#include <cstdlib>
#include <set>
#include <string>

#include <kbrl/splitmix64.h>
#include <torch/cuda.h>
#include <torch/version.h>
#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/autograd/profiler_kineto.h>
#endif
#if KBRL_TORCH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#endif

#include "llm_testing.h"

namespace kbrl::lm {

double gpu_peak_gib() {
#if KBRL_TORCH_CUDA
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(0);
  c10::cuda::CUDACachingAllocator::resetPeakStats(0);
  return static_cast<double>(stats.allocated_bytes[0].peak) / (1u << 30);  // [0]: every pool
#else
  return 0;
#endif
}

bool profile_if_asked(const std::string& name, const std::function<void()>& work) {
  const char* dir = std::getenv("KBRL_PROFILE_DIR");
  if (!dir || !*dir) return false;
#if TORCH_VERSION_MAJOR >= 2
  namespace prof = torch::profiler::impl;
  const std::set<prof::ActivityType> activities{prof::ActivityType::CPU, prof::ActivityType::CUDA};
  const prof::ProfilerConfig config(prof::ProfilerState::KINETO);
  torch::autograd::profiler::prepareProfiler(config, activities);
  torch::autograd::profiler::enableProfiler(config, activities);
  work();
  if (torch::cuda::is_available()) torch::cuda::synchronize();
  torch::autograd::profiler::disableProfiler()->save(std::string(dir) + "/" + name + ".json");
  return true;
#else
  (void)work;
  return false;
#endif
}

TaskSpec relu() { return task_spec(19, Scale::kernelbench); }

std::unique_ptr<LmPolicy>& cpu_policy(bool q8) {
  static std::unique_ptr<LmPolicy> float32, eight_bit;
  std::unique_ptr<LmPolicy>& p = q8 ? eight_bit : float32;
  if (!p && !testing::llm_model_path().empty()) {
    LmOptions o = parse_lm_spec("lm:" + testing::llm_model_path() + ",shots=0,system=none" +
                                (q8 ? ",cpu_weights=q8" : ""));
    o.max_tokens = kMaxTokens;
    p = std::make_unique<LmPolicy>(std::move(o));
  }
  return p;
}

std::unique_ptr<LmPolicy>& gpu_policy() {
  static std::unique_ptr<LmPolicy> p;
  if (!p && torch::cuda::is_available()) {
    LmOptions o = parse_lm_spec("lm:random:12x768:1,shots=0,system=none,device=cuda,dtype=bfloat16");
    o.max_tokens = kMaxTokens;
    p = std::make_unique<LmPolicy>(std::move(o));
  }
  return p;
}

std::vector<TrainItem> group_of_random_completions(uint64_t seed, int tasks) {
  std::vector<TrainItem> items(64);
  uint64_t rng = seed;
  const std::vector<int> ids = task_ids();
  for (size_t i = 0; i < items.size(); ++i) {
    items[i].task = tasks <= 1 ? relu() : task_spec(ids.at(i % static_cast<size_t>(tasks)), Scale::kernelbench);
    for (int t = 0; t < 1024; ++t) items[i].tokens.push_back(static_cast<int>(splitmix64(rng) % 256));
    items[i].advantages.assign(items[i].tokens.size(), i % 2 ? 1.0 : -1.0);
  }
  return items;
}

}  // namespace kbrl::lm
