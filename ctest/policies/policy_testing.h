#pragma once
// Shared by the policy tests (test_policies.cpp, test_learning.cpp): small specs, sums, a temp file
// and a policy's expected reward on the synthetic table.
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include <unistd.h>

#include <gtest/gtest.h>

#include <experiments/algorithms.h>
#include <experiments/environment.h>
#include <experiments/training_loops.h>
#include <kbrl/error.h>
#include <kernels/generator.h>
#include <policies/baseline_policies.h>
#include <policies/schedule_policy.h>
#include <reference/task_registry.h>

namespace kbrl::testing {

inline TaskSpec small(int id) { return task_spec(id, Scale::small); }

inline double total(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s;
}

inline std::filesystem::path temp_file(const std::string& name) {
  return std::filesystem::temp_directory_path() /
         ("kbrl-test-policies-" + std::to_string(::getpid()) + "-" + name);
}

/// Mean over tasks of the synthetic environment's expected reward.
inline double expected_reward(SyntheticEnvironment& env, Policy& p, const std::vector<int>& tasks, double t) {
  double sum = 0;
  for (int id : tasks) sum += env.expected_reward(p, small(id), t);
  return sum / static_cast<double>(tasks.size());
}

}  // namespace kbrl::testing
