#pragma once
// Lookup of the 100 KernelBench level-1 tasks by id (torch-free).
#include <vector>

#include "task.h"

namespace kbrl {

/// All task ids in ascending order (1..100 for level 1).
const std::vector<int>& task_ids();

bool has_task(int id);

/// The task at a scale. Throws InputError for an unknown id, naming the valid range.
TaskSpec task_spec(int id, Scale scale);

}  // namespace kbrl
