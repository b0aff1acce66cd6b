#pragma once
// What test_cli_learn.cpp and test_cli_learn_inputs.cpp share: the synthetic environment's flags,
// a fresh directory per test, a task no generator covers.
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <kernels/generator.h>

#include "cli_testing.h"

namespace kbrl::testing {

/// `kbrl sample`, `train`, `ttt`, `sft` and `sweep` on the CPU: the synthetic environment, small scale.
inline const std::string kSynthetic = " --env synthetic --scale small ";

/// A fresh directory for one test of the learning commands.
inline std::filesystem::path cli_learn_dir(const std::string& name) { return fresh_dir("kbrl-cli-learn", name); }

/// A task id no generator covers (0 when every task is covered).
inline int uncovered_task() {
  const std::vector<int> covered = covered_tasks();
  for (int id = 1; id <= 100; ++id)
    if (std::find(covered.begin(), covered.end(), id) == covered.end()) return id;
  return 0;
}

}  // namespace kbrl::testing
