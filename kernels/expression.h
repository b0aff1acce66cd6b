#pragma once
// Integer expressions of the candidate file format (candidate_file.h): the sizes of a launch plan
// written in terms of the task's shapes, e.g. `cdiv(numel(x), 256)` or `size(x, 0) * 2`.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <reference/task.h>

namespace kbrl {

/// The longest expression evaluate_expression accepts, in characters.
inline constexpr size_t kMaxExpressionLength = 4096;
/// The deepest nesting evaluate_expression accepts: every parenthesis, function call and unary
/// minus opens one level (`-(min(1, 2))` is 3 deep). The parser is recursive; this bounds its stack.
inline constexpr int kMaxExpressionDepth = 64;
/// The most characters of a user's input that an error message quotes.
inline constexpr size_t kMaxQuotedInput = 120;

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
/// number: the caller adds it), also for an expression longer than kMaxExpressionLength or nested
/// deeper than kMaxExpressionDepth. Messages quote at most kMaxQuotedInput characters of the text.
int64_t evaluate_expression(std::string_view text, const TaskSpec& task);

/// `text` as an error message quotes it: whole when at most `max_chars` long, else its first
/// `max_chars` characters, "..." and its length, e.g. "1+1+1+1... (4000 characters)".
std::string quote_input(std::string_view text, size_t max_chars = kMaxQuotedInput);

/// Does a tensor's name in a TaskSpec match `name`, with dots and underscores interchangeable?
bool tensor_name_matches(std::string_view spec_name, std::string_view name);

/// The task's tensor (input, parameter or output) named `name`, or nullptr. Parameter names match
/// with dots or with underscores in their place ("conv.weight" or "conv_weight").
const TensorSpec* find_tensor(const TaskSpec& task, std::string_view name);

}  // namespace kbrl
