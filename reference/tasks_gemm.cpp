// Level-1 gemm tasks. (Being written: see task_def.h for how a family file defines its tasks.)
#include "task_def.h"

namespace kbrl::detail {

void add_gemm_tasks(TaskDefs&) {}

}  // namespace kbrl::detail
