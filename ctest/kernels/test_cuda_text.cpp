// The generators' embedded CUDA files (kernels/generators/cuda/*.cuh, kernels/generators/cuda_text.h):
// sections come back byte for byte, placeholders are filled or refused, unknown names are bugs.
#include <gtest/gtest.h>

#include <kbrl/error.h>
#include <kernels/generators/cuda_text.h>

namespace kbrl {
namespace {

TEST(CudaText, SectionsAreTheFilesBytes) {
  const std::string& s = cuda_text::section("snippets.cuh", "max_sum_state");
  EXPECT_TRUE(s.starts_with("struct MaxSum {\n"));
  EXPECT_TRUE(s.ends_with("  }\n}\n"));  // the section's own last newline is kept
  EXPECT_EQ(s.find("//@section"), std::string::npos);  // markers are not text
  const auto names = cuda_text::section_names("snippets.cuh");
  ASSERT_GE(names.size(), 2u);
  EXPECT_EQ(names[0], "max_sum_state");
}

TEST(CudaText, FillReplacesEveryPlaceholder) {
  const std::string t = cuda_text::fill("snippets.cuh", "warp_step_call", {{"INDENT", "    "}});
  EXPECT_EQ(t, "    v = kbrl_warp_reduce(v, op);\n");
}

TEST(CudaText, MisuseIsAnInternalError) {
  EXPECT_THROW(cuda_text::section("nope.cuh", "x"), InternalError);
  EXPECT_THROW(cuda_text::section("snippets.cuh", "nope"), InternalError);
  // a section with placeholders must go through fill, and fill must fill them all
  EXPECT_THROW(cuda_text::section("snippets.cuh", "warp_step_call"), InternalError);
  EXPECT_THROW(cuda_text::fill("snippets.cuh", "block_reduce", {{"WARP_STEP", ""}}), InternalError);
  EXPECT_THROW(cuda_text::fill("snippets.cuh", "warp_step_call", {{"INDENT", ""}, {"OTHER", ""}}),
               InternalError);
}

}  // namespace
}  // namespace kbrl
