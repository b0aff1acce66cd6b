#pragma once
// Shared by the language-model policy tests (test_lm_policy.cpp on a random model, test_lm_llm.cpp on
// SmolLM2): GRPO items from samples, and the sum of a sample's log-probs.
#include <vector>

#include <policies/lm/lm_policy.h>
#include <reference/task_registry.h>

namespace kbrl::testing {

inline double sum_of(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s;
}

/// One TrainItem per sample with a constant advantage per sample, old log-probs as sampled.
inline std::vector<TrainItem> items_with(const TaskSpec& task, const std::vector<Sample>& samples,
                                         const std::vector<double>& advantages) {
  std::vector<TrainItem> out;
  for (size_t i = 0; i < samples.size(); ++i) {
    TrainItem it;
    it.task = task;
    it.tokens = samples[i].tokens;
    it.old_logprobs = samples[i].logprobs;
    it.advantages.assign(samples[i].tokens.size(), advantages[i]);
    out.push_back(std::move(it));
  }
  return out;
}

}  // namespace kbrl::testing
