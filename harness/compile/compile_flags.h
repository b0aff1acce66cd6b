#pragma once
// The compile options a candidate may ask for, and their canonical form.
#include <string>
#include <vector>

namespace kbrl {

/// The allowed options, as written in messages.
inline constexpr const char* kAllowedOptionsText =
    "--use_fast_math, -ftz=true|false, -prec-div=true|false, -prec-sqrt=true|false, "
    "-fmad=true|false, --extra-device-vectorization, -maxrregcount=N (16..255), -lineinfo";

struct CanonicalOptions {
  std::vector<std::string> options;  // canonical spellings, sorted, without duplicates
  std::string error;                 // non-empty: why the list is refused
  bool ok() const { return error.empty(); }
};

/// Checks a candidate's options against the allowed list and puts them in canonical form
/// ("-use_fast_math" -> "--use_fast_math", "--ftz=true" -> "-ftz=true", "--generate-line-info" ->
/// "-lineinfo"). An option outside the list, a bad value, or two values of one option
/// ("-ftz=true" and "-ftz=false") is an error naming the option.
CanonicalOptions canonical_options(const std::vector<std::string>& options);

}  // namespace kbrl
