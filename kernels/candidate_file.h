#pragma once
// The on-disk candidate format (`kbrl eval --kernel FILE`): a .cu file whose `// kbrl:` comment
// lines give the launch plan. The file is otherwise ordinary CUDA C++ compiled by NVRTC.
//
//   // kbrl: launch <kernel> grid=<e>[,<e>[,<e>]] block=<e>[,<e>[,<e>]] [smem=<e>] args=<arg>,...
//   // kbrl: scratch <name> bytes=<e>
//   // kbrl: option <compile option> [<compile option> ...]
//   // kbrl: scaffold [block=<e>] [grid=<e>] [smem=<e>]
//
// <arg> is one of in:<name>, param:<name>, out:<name>, scratch:<name>, scalar:<name> (the task's
// tensors and scalars, the file's scratch buffers), f32:<number>, i32:<e>, i64:<e>. <e> is an
// integer expression (kernels/expression.h), e.g. `cdiv(numel(x), 256)`. Launches run in file
// order. With `scaffold`, the rest of the file after that line is the BODY of the scaffold's
// forward kernel (kernels/scaffold.h), the lines before it are helper device code, and `launch`
// and `scratch` lines are not allowed. Values may contain spaces: `grid=cdiv(numel(x), 256)`.
#include <filesystem>
#include <string_view>

#include <reference/task.h>

#include "candidate.h"

namespace kbrl {

/// Parses a candidate file's text against a task. Throws InputError of the form
/// "<file_name>:<line>: <what is wrong>" (unknown directive, tensor or key, bad expression, zero or
/// oversized grid or block, a kernel name the source never mentions) or "<file_name>: no launch".
Candidate parse_candidate_file(std::string_view text, const TaskSpec& task,
                               std::string_view file_name = "candidate.cu");

/// Reads `path` and parses it (error messages name the file). Throws InputError if unreadable.
Candidate load_candidate_file(const std::filesystem::path& path, const TaskSpec& task);

}  // namespace kbrl
