#pragma once
// The outcome of one evaluation: exactly one value of this enum plus its detail (DESIGN.md).
// Expected candidate failures are data, never exceptions.
#include <string>
#include <string_view>

namespace kbrl {

enum class Outcome {
  ok,
  compile_error,
  load_error,
  launch_error,
  runtime_error,
  timeout,
  wrong_shape,
  wrong_answer,
  nondeterministic,
  input_mutated,
  guard_violation,
  impossible,
};

std::string_view to_string(Outcome);
Outcome parse_outcome(std::string_view);  // throws InputError

}  // namespace kbrl
