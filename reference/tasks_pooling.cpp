// Level-1 pooling tasks. (Being written: see task_def.h for how a family file defines its tasks.)
#include "task_def.h"

namespace kbrl::detail {

void add_pooling_tasks(TaskDefs&) {}

}  // namespace kbrl::detail
