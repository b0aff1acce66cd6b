#include "outcome.h"

#include <array>

#include <kbrl/error.h>

namespace kbrl {
namespace {

constexpr std::array<std::pair<Outcome, std::string_view>, 14> kOutcomes{{
    {Outcome::ok, "ok"},
    {Outcome::format_error, "format_error"},
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
}};

}  // namespace

std::string_view to_string(Outcome outcome) {
  for (const auto& [o, name] : kOutcomes)
    if (o == outcome) return name;
  return "?";
}

Outcome parse_outcome(std::string_view text) {
  for (const auto& [o, name] : kOutcomes)
    if (name == text) return o;
  throw InputError(fmt::format("unknown outcome '{}'", text));
}

}  // namespace kbrl
