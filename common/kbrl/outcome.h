#pragma once
// The outcome of one evaluation: exactly one value of this enum plus its detail (DESIGN.md).
// Expected candidate failures are data, never exceptions.
#include <string>
#include <string_view>

namespace kbrl {

enum class Outcome {
  ok,
  format_error,  // a text action that yields no candidate (no code, bad plan line, ...): not compiled
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
  not_run,  // compiled, but there is no GPU to run it (compile-only evaluation, e.g. with --arch)
};


std::string_view to_string(Outcome);
Outcome parse_outcome(std::string_view);  // throws InputError

}  // namespace kbrl
