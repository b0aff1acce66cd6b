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

namespace {

/// "__device__ __forceinline__ float <signature> { return <value>; }" and a newline.
std::string float_helper(const std::string& signature, const std::string& value) {
  return "__device__ __forceinline__ float " + signature + " { return " + value + "; }\n";
}

}  // namespace

std::string k_exp_helper(FloatMath math, std::string_view arg) {
  const std::string a(arg);
  std::string value = "expf(" + a + ")";
  if (math == FloatMath::fast) value = "__expf(" + a + ")";
  if (math == FloatMath::half_exp) value = "__half2float(hexp(__float2half(" + a + ")))";
  return float_helper("k_exp(float " + a + ")", value);
}

std::string k_log_helper(FloatMath math) {
  return float_helper("k_log(float v)", math == FloatMath::fast ? "__logf(v)" : "logf(v)");
}

std::string k_div_helper(FloatMath math) {
  return float_helper("k_div(float a, float b)",
                      math == FloatMath::fast ? "__fdividef(a, b)" : "a / b");
}

const char* const kFastMathNote =
    "// fast_math=on (unsafe): intrinsics, and the whole unit under --use_fast_math.\n";

const std::string& max_sum_state() { return cuda_text::section("snippets.cuh", "max_sum_state"); }

std::string block_reduce_helper(WarpStep step) {
  const char* step_section = step == WarpStep::warp_reduce_call ? "warp_step_call" : "warp_step_shuffle";
  return cuda_text::fill("snippets.cuh", "block_reduce",
                         {{"WARP_STEP", cuda_text::fill("snippets.cuh", step_section, {{"INDENT", "  "}})},
                          {"WARP_STEP_INNER", cuda_text::fill("snippets.cuh", step_section, {{"INDENT", "    "}})}});
}

}  // namespace kbrl
