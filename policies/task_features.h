#pragma once
// Task features the schedule policy conditions on (docs/design.md, Policies): operator family, log
// sizes, arithmetic intensity, dtype. Plain numbers, roughly in [-1, 1], so any network can read
// them; the order is fixed (task_feature_names()).
#include <string_view>
#include <vector>

#include <reference/task.h>

namespace kbrl {

/// The names of task_features()' entries, in order.
const std::vector<std::string_view>& task_feature_names();

/// The features of a task at its scale.
std::vector<float> task_features(const TaskSpec& task);

}  // namespace kbrl
