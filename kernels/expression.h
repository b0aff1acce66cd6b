#pragma once
// Integer expressions of the candidate file format (candidate_file.h): the sizes of a launch plan
// written in terms of the task's shapes, e.g. `cdiv(numel(x), 256)` or `size(x, 0) * 2`.
#include <cstdint>
#include <string_view>

#include <reference/task.h>

namespace kbrl {

/// Evaluates an integer expression against a task's shapes. The grammar:
///   expr    := term (('+' | '-') term)*
///   term    := unary (('*' | '/' | '%') unary)*
///   unary   := '-' unary | primary
///   primary := integer | '(' expr ')' | cdiv(expr, expr) | min(expr, expr) | max(expr, expr)
///            | numel(tensor) | size(tensor, expr)
/// `tensor` is the name of one of the task's inputs, parameters or outputs (a parameter's dots may
/// be written as underscores). `/` truncates toward zero; `size` accepts a negative dimension as
/// Python does. Arithmetic is on int64 with overflow, division by zero and a dimension out of range
/// reported as errors. Throws InputError with a message saying what is wrong and where (no line
/// number: the caller adds it).
int64_t evaluate_expression(std::string_view text, const TaskSpec& task);

/// Does a tensor's name in a TaskSpec match `name`, with dots and underscores interchangeable?
bool tensor_name_matches(std::string_view spec_name, std::string_view name);

/// The task's tensor (input, parameter or output) named `name`, or nullptr. Parameter names match
/// with dots or with underscores in their place ("conv.weight" or "conv_weight").
const TensorSpec* find_tensor(const TaskSpec& task, std::string_view name);

}  // namespace kbrl
