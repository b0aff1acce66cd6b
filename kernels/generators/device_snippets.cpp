#include "device_snippets.h"

#include "cuda_text.h"

namespace kbrl {

std::string load_expr(std::string_view hint, const std::string& ptr) {
  if (hint == "ldg") return "__ldg(" + ptr + ")";
  if (hint == "streaming") return "__ldcs(" + ptr + ")";
  return "*(" + ptr + ")";
}

std::string store_expr(std::string_view hint, const std::string& ptr, const std::string& value) {
  if (hint == "streaming") return "__stcs(" + ptr + ", " + value + ")";
  return "*(" + ptr + ") = " + value;
}

std::string k_exp_helper(FloatMath math, std::string_view arg) {
  const char* name = math == FloatMath::fast       ? "k_exp_fast"
                     : math == FloatMath::half_exp ? "k_exp_half"
                                                   : "k_exp_exact";
  return cuda_text::fill("snippets.cuh", name, {{"ARG", std::string(arg)}});
}

std::string k_log_helper(FloatMath math) {
  return cuda_text::section("snippets.cuh", math == FloatMath::fast ? "k_log_fast" : "k_log_exact");
}

std::string k_div_helper(FloatMath math) {
  return cuda_text::section("snippets.cuh", math == FloatMath::fast ? "k_div_fast" : "k_div_exact");
}

// Initialized from the embedded text when the library loads (cuda_text's tables are function-local
// statics, ready on first use); read only while generating.
const std::string& fast_math_note() { return cuda_text::section("snippets.cuh", "fast_math_note"); }

const std::string& max_sum_state() { return cuda_text::section("snippets.cuh", "max_sum_state"); }

std::string block_reduce_helper(WarpStep step) {
  const char* step_section = step == WarpStep::warp_reduce_call ? "warp_step_call" : "warp_step_shuffle";
  return cuda_text::fill("snippets.cuh", "block_reduce",
                         {{"WARP_STEP", cuda_text::fill("snippets.cuh", step_section, {{"INDENT", "  "}})},
                          {"WARP_STEP_INNER", cuda_text::fill("snippets.cuh", step_section, {{"INDENT", "    "}})}});
}

}  // namespace kbrl
