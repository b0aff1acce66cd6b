#pragma once
// The outcome of one evaluation: exactly one value of this enum plus its detail (docs/design.md).
// Expected candidate failures are data, never exceptions. In common because both the candidate side
// (kernels/kernel_catalog.h: what a catalog kernel must yield) and the harness use it.
#include <string>
#include <string_view>

#include "enum_names.h"

namespace kbrl {

enum class Outcome {
  ok,
  format_error,  // a text action that yields no candidate (no code, bad plan line, ...): not compiled
  unsupported_format,  // an answer in a format kbrl reads only in part (KernelBench's ModelNew) that it cannot read
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
  harness_error,  // the harness failed on this candidate (not the candidate's fault): not kept, a rerun evaluates it again
};

template <>
struct EnumNames<Outcome> {
  static constexpr std::string_view what = "outcome";
  static constexpr EnumEntry<Outcome> entries[] = {
      {Outcome::ok, "ok"},
      {Outcome::format_error, "format_error"},
      {Outcome::unsupported_format, "unsupported_format"},
      {Outcome::compile_error, "compile_error"},
      {Outcome::load_error, "load_error"},
      {Outcome::launch_error, "launch_error"},
      {Outcome::runtime_error, "runtime_error"},
      {Outcome::timeout, "timeout"},
      {Outcome::wrong_shape, "wrong_shape"},
      {Outcome::wrong_answer, "wrong_answer"},
      {Outcome::nondeterministic, "nondeterministic"},
      {Outcome::input_mutated, "input_mutated"},
      {Outcome::guard_violation, "guard_violation"},
      {Outcome::impossible, "impossible"},
      {Outcome::not_run, "not_run"},
      {Outcome::harness_error, "harness_error"},
  };
};

std::string_view to_string(Outcome);
Outcome parse_outcome(std::string_view);  // throws InputError

}  // namespace kbrl
