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
//
// Limits: every plan keeps plan_limits (candidate.h: at most 64 launches of at most 256 arguments,
// 16 scratch buffers of 8 GiB together, 227 KiB of dynamic shared memory per launch, CUDA's grid
// and block limits); every expression kMaxExpressionLength and kMaxExpressionDepth (expression.h);
// a file read from disk kMaxCandidateFileBytes.
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include <reference/task.h>

#include "candidate.h"

namespace kbrl {

/// The largest candidate file read_candidate_file reads: 16 MiB.
inline constexpr int64_t kMaxCandidateFileBytes = int64_t{16} << 20;

/// Parses a candidate file's text against a task. Throws InputError of the form
/// "<file_name>:<line>: <what is wrong>" (unknown directive, tensor or key, bad expression, zero or
/// oversized grid or block, a plan past plan_limits, a kernel name the source never mentions) or
/// "<file_name>: no launch". Messages quote at most kMaxQuotedInput characters of the file.
Candidate parse_candidate_file(std::string_view text, const TaskSpec& task,
                               std::string_view file_name = "candidate.cu");

/// The text of the candidate file at `path` (symbolic links followed). Throws InputError, before
/// reading anything, for a path that is not a regular file (a directory, a device such as
/// /dev/zero, a FIFO, a socket) or one larger than kMaxCandidateFileBytes; and for one that
/// cannot be read.
std::string read_candidate_file(const std::filesystem::path& path);

/// read_candidate_file, then parse_candidate_file (error messages name the file).
Candidate load_candidate_file(const std::filesystem::path& path, const TaskSpec& task);

}  // namespace kbrl
