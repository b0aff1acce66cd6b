#pragma once
// Internal to the candidate-file parser (candidate_file.cpp): the pieces of one `// kbrl:` line —
// fields, expressions, grid/block/smem values, launch arguments — each failing with a LineError
// that the parser rethrows with the file name and line number.
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <reference/task.h>

#include "candidate.h"

namespace kbrl::candidate_file_detail {

/// An error at one line; rethrown with the file name and line number by the parser.
struct LineError {
  std::string what;
};

[[noreturn]] void fail(std::string what);

std::string_view trim(std::string_view s);

/// Splits at `sep` outside parentheses (sep == ' ' splits at any run of whitespace).
std::vector<std::string> split_top_level(std::string_view s, char sep);

/// `<head> key=value key=value`: whitespace separates fields, except inside parentheses; a field
/// without '=' continues the previous value (so `grid=1 + 2` and `args=in:x, out:y` both work).
struct Fields {
  std::vector<std::string> heads;  // fields before the first key=value
  std::map<std::string, std::string> values;
};
/// The fields of `rest`; a key not in `keys`, or one given twice, fails.
Fields parse_fields(std::string_view rest, std::initializer_list<std::string_view> keys);

/// An integer expression (kernels/expression.h) over the task's sizes.
int64_t eval(std::string_view text, const TaskSpec& task);

/// 1 to 3 comma-separated expressions, each within [1, limit of that axis].
Dim3 parse_dim3(const std::string& key, const std::string& text, const TaskSpec& task,
                const int64_t (&limits)[3]);

/// Dynamic shared memory in bytes, 0 to plan_limits::kMaxSharedBytes.
uint32_t parse_smem(const std::string& text, const TaskSpec& task);

/// One `args=` entry (in:x, param:w, out:y, scratch:s, scalar:n, f32:v, i32:e, i64:e).
KernelArg resolve_arg(std::string_view arg, const TaskSpec& task, const Candidate& candidate);

bool is_identifier(std::string_view s);

/// Does `source` mention `name` as a whole identifier?
bool mentions(std::string_view source, std::string_view name);

/// The directive of a line (`// kbrl: <rest>`), or nullopt for ordinary source.
std::optional<std::string_view> directive(std::string_view line);

}  // namespace kbrl::candidate_file_detail
