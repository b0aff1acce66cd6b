// Level-1 reduction tasks. (Being written: see task_def.h for how a family file defines its tasks.)
#include "task_def.h"

namespace kbrl::detail {

void add_reduction_tasks(TaskDefs&) {}

}  // namespace kbrl::detail
