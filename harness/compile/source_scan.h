#pragma once
// Checks on a candidate's source text before NVRTC sees it: its size and its #include directives.
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace kbrl {

/// Sources larger than this are rejected before compilation.
inline constexpr size_t kMaxSourceBytes = 1u << 20;

/// The headers a candidate may #include. NVRTC 13.0 has no includable built-in headers (even
/// cuda_fp16.h needs an include path), so these resolve in the CUDA toolkit's include directory.
std::span<const std::string_view> allowed_includes();

/// The source with comments and raw string literals' contents replaced by spaces (newlines kept,
/// so line numbers still hold) and backslash-newline splices joined into one line followed by as
/// many empty lines. Digit separators (1'000) are not character literals.
std::string strip_comments(std::string_view source);

/// Why the source may not be compiled (too large, a NUL byte, an #include, #include_next, #import
/// or #embed of anything outside allowed_includes(), an #include of a macro), or nullopt.
/// The message names the line: "line 3: #include <stdio.h> is not allowed (allowed: ...)".
std::optional<std::string> check_source(std::string_view source);

}  // namespace kbrl
