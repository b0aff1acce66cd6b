#pragma once
// The generators' device code (kernels/generators/*.cpp only). It lives in CUDA files under
// kernels/generators/cuda/, embedded into the library at build time (embed_cuda.cmake); a
// generator's C++ emits only the configuration (#defines, constants, the launch plan) and joins
// the sections these files hold.
//
// A .cuh file is a sequence of sections. A line `//@section NAME` starts one; its text is every
// line after it up to the next `//@section` line or the end of the file, newlines included, so a
// generated source is the sections' exact bytes. `//@section NAME nonl` drops the section's final
// newline (for a piece that continues on the line the C++ writes next). Text before the first
// section is the file's header comment and is never emitted. A section may hold placeholders
// `@KEY@` (upper-case letters, digits, underscores), which fill() replaces.
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kbrl::cuda_text {

/// The text of `section` of kernels/generators/cuda/`file` ("conv.cuh"). Throws InternalError for
/// an unknown file or section, or a section holding a placeholder (use fill()).
const std::string& section(std::string_view file, std::string_view section);

/// `section` with every placeholder @KEY@ replaced by its value. Throws InternalError when a key
/// given does not occur, or a placeholder is left without a value.
std::string fill(std::string_view file, std::string_view section,
                 std::initializer_list<std::pair<std::string_view, std::string>> values);

/// The names of `file`'s sections, in file order (for tests). Throws InternalError for an
/// unknown file.
std::vector<std::string> section_names(std::string_view file);

}  // namespace kbrl::cuda_text
