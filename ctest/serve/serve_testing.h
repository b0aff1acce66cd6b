#pragma once
// Shared by the serve tests and benchmark: files of the source tree, and known-good candidates with
// a chosen launch plan (distinct records for one compiled source where the plan is not in it).
#include <cstdlib>
#include <filesystem>
#include <string>

#include <ctest/experiments/program_testing.h>

namespace kbrl::serving::testing {

using ::kbrl::testing::file_text;

/// A file of the source tree ($KBRL_SOURCE_DIR, which CTest sets, else `fallback`).
inline std::string source_file(const std::string& relative, const char* fallback = nullptr) {
  const char* root = std::getenv("KBRL_SOURCE_DIR");
  return file_text(std::filesystem::path(root ? root : (fallback ? fallback : ".")) / relative);
}

/// The known-good ReLU candidate file with its grid cap set to `grid` (the source changes with it:
/// a compile each).
inline std::string relu_file(long grid = 16384) {
  std::string text = source_file("kernels/known_good/relu.cu");
  text.replace(text.find("16384"), 5, std::to_string(grid));
  return text;
}

/// The known-good ReLU body (scaffold form) with its grid cap set to `grid`: the scaffold line is
/// not in the compiled source, so every grid is one compile.
inline std::string relu_body(long grid, const char* fallback_root = nullptr) {
  std::string text = source_file("kernels/known_good/relu_body.cu", fallback_root);
  text.replace(text.find("8192)"), 4, std::to_string(grid));
  return text;
}

}  // namespace kbrl::serving::testing
