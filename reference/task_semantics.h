#pragma once
// What each task's reference computes, in our own words: the sentence a language model's prompt
// shows (kernels/prompt.h). Written from the libtorch references in reference/tasks_*.cpp.
#include <string_view>

namespace kbrl {

/// What forward computes, in one or two sentences with a formula over the task's tensor names,
/// e.g. task 19: "y = max(x, 0), elementwise." Throws InputError for an unknown task id.
std::string_view task_semantics(int task_id);

}  // namespace kbrl
