// Level-1 norm tasks. (Being written: see task_def.h for how a family file defines its tasks.)
#include "task_def.h"

namespace kbrl::detail {

void add_norm_tasks(TaskDefs&) {}

}  // namespace kbrl::detail
