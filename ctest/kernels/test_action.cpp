// Actions (kernels/action.h): code extraction from a model's text, and realize() for knob and
// text actions, body and file style, with every way text can fail to make a candidate. Realized
// bodies compile with NVRTC (no GPU needed).
#include <gtest/gtest.h>

#include <harness/compile/compile.h>
#include <kbrl/error.h>
#include <kernels/action.h>
#include <kernels/generator.h>
#include <reference/task_registry.h>

namespace kbrl {
namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

Action text_action(std::string text) { return {ActionKind::text, {}, std::move(text)}; }

TEST(ExtractCode, LastFencedBlockWithProseAround) {
  const std::string text =
      "Here is a first try:\n```cuda\nfirst();\n```\nBut better:\n```cuda\nsecond();\nthird();\n```\nDone.";
  EXPECT_EQ(extract_code(text), "second();\nthird();");
}

TEST(ExtractCode, ToleratesCrlfTabsTagsAndMissingClosingFence) {
  EXPECT_EQ(extract_code("Sure.\r\n```c++\r\n\tint a = 1;\r\n\tint b = 2;\r\n```\r\n"), "\tint a = 1;\n\tint b = 2;");
  EXPECT_EQ(extract_code("```\nx();\n"), "x();");                       // no closing fence, no tag
  EXPECT_EQ(extract_code("text\n~~~cpp\ny();\n~~~\n"), "y();");           // tilde fences
  EXPECT_EQ(extract_code("  ```cuda\n  z();\n  ```"), "  z();");          // indented fences
  EXPECT_EQ(extract_code("````\n```\ninner\n```\n````\n"), "```\ninner\n```");  // a longer fence nests
}

TEST(ExtractCode, RawTextWithoutFencesAndEmptyBlocks) {
  EXPECT_EQ(extract_code("\n\ny[i] = x[i];\n\n"), "y[i] = x[i];");
  EXPECT_EQ(extract_code("```cuda\nreal();\n```\n```\n```\n"), "real();");  // an empty last block is skipped
  EXPECT_EQ(extract_code(""), "");
}

TEST(Realize, KnobsGoThroughTheGenerator) {
  const TaskSpec task = task_spec(19, Scale::small);
  const Generator& g = generator_for(19);
  const Config expert = g.expert(task);
  const Realized r = realize(task, {ActionKind::knobs, expert, {}});
  ASSERT_TRUE(r.candidate);
  EXPECT_EQ(*r.candidate, g.generate(task, expert));
  EXPECT_TRUE(r.code.empty());
  EXPECT_FALSE(r.style);
}

TEST(Realize, BodyWithHelpersCompiles) {
  const TaskSpec task = task_spec(19, Scale::kernelbench);
  const std::string text =
      "I will use a helper.\n```cuda\n"
      "__device__ __forceinline__ float relu1(float v) { return v > 0.f ? v : 0.f; }\n"
      "#define TWICE(a) ((a) + (a))\n"
      "KBRL_GRID_STRIDE_LOOP(i, x_numel) {\n"
      "  y[i] = relu1(x[i]);\n"
      "}\n```\n";
  const Realized r = realize(task, text_action(text));
  ASSERT_TRUE(r.candidate) << r.format_error;
  EXPECT_EQ(r.style, TextStyle::body);
  EXPECT_TRUE(contains(r.candidate->source, "__device__ __forceinline__ float relu1"));
  EXPECT_TRUE(contains(r.candidate->source, "kbrl_forward"));
  const CompileResult c = compile(*r.candidate);
  EXPECT_TRUE(c.ok()) << c.log << "\n" << r.candidate->source;
}

TEST(Realize, ACompleteScaffoldDefinitionIsTakenApart) {
  const TaskSpec task = task_spec(19, Scale::small);
  const std::string text =
      "```cuda\n"
      "__device__ float f(float v) { return fmaxf(v, 0.f); }\n"
      "extern \"C\" __global__ void\n"
      "kbrl_forward(const float* __restrict__ x, float* __restrict__ y) {\n"
      "  KBRL_GRID_STRIDE_LOOP(i, y_numel) { y[i] = f(x[i]); }\n"
      "}\n```";
  const Realized r = realize(task, text_action(text));
  ASSERT_TRUE(r.candidate) << r.format_error;
  const CompileResult c = compile(*r.candidate);
  EXPECT_TRUE(c.ok()) << c.log << "\n" << r.candidate->source;
}

TEST(Realize, CandidateFileStyle) {
  const TaskSpec task = task_spec(19, Scale::small);
  const std::string text =
      "```cuda\n"
      "// kbrl: launch relu grid=cdiv(numel(x),256) block=256 args=in:x,out:y,i64:numel(x)\n"
      "extern \"C\" __global__ void relu(const float* x, float* y, long long n) {\n"
      "  long long i = blockIdx.x * 256ll + threadIdx.x; if (i < n) y[i] = x[i] > 0 ? x[i] : 0; }\n"
      "```";
  const Realized r = realize(task, text_action(text));
  ASSERT_TRUE(r.candidate) << r.format_error;
  EXPECT_EQ(r.style, TextStyle::file);
  ASSERT_EQ(r.candidate->launches.size(), 1u);
  EXPECT_EQ(r.candidate->launches[0].kernel, "relu");
}

TEST(Realize, TextWithoutACandidateIsAFormatErrorNeverAnException) {
  const TaskSpec task = task_spec(19, Scale::small);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "no code"},
      {"```cuda\n```", "no code"},
      {"```cuda\nif (true) { y[0] = 1.f;\n```", "unbalanced"},
      {"```cuda\nint main() { return 0; }\n```", "main()"},
      {"```cuda\n__global__ void mine(float* y) { y[0] = 0; }\n```", "__global__"},
      {"```cuda\n__device__ float f(float v) { return v; }\n```", "no kernel body"},
      {"```cuda\n// kbrl: launch nowhere grid=1 block=1 args=out:y\nint x;\n```", "model_output.cu"},
      {"```cuda\n// kbrl: frobnicate\n__global__ void k() {}\n```", "model_output.cu"},
      {std::string(kMaxActionTextBytes + 1, 'x'), "at most"},
  };
  for (const auto& [text, expected] : cases) {
    Realized r;
    EXPECT_NO_THROW(r = realize(task, text_action(text))) << text.substr(0, 80);
    EXPECT_FALSE(r.candidate) << text.substr(0, 80);
    EXPECT_TRUE(contains(r.format_error, expected)) << text.substr(0, 80) << " -> " << r.format_error;
  }
}

TEST(Realize, AKernelBenchAnswerIsImportedNotReadAsABody) {
  // KernelBench's format: a Python ModelNew whose CUDA source is compiled by load_inline.
  const std::string answer = "```python\nimport torch\nfrom torch.utils.cpp_extension import load_inline\n"
                             "cuda_source = \"\"\"\n__global__ void relu_kernel(const float* x, float* y, int n) {\n"
                             "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) y[i] = x[i] > 0 ? x[i] : 0;\n}\n"
                             "\"\"\"\nrelu = load_inline(name='relu', cpp_sources='', cuda_sources=cuda_source)\n"
                             "class ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return relu.relu_cuda(x)\n```\n";
  const Realized r = realize(task_spec(19, Scale::small), text_action(answer));
  EXPECT_FALSE(r.candidate);  // its host function relu_cuda is missing (ctest/kernels/test_kernelbench_import.cpp)
  EXPECT_EQ(r.failure, Outcome::unsupported_format);
  EXPECT_TRUE(contains(r.format_error, "a KernelBench-format answer kbrl cannot read: no host function 'relu_cuda'"))
      << r.format_error;
  // ModelNew alone (a word in a comment) is not the format.
  const Realized body = realize(task_spec(19, Scale::small),
                                text_action("```cuda\n// unlike ModelNew, a body\nKBRL_GRID_STRIDE_LOOP(i, x_numel) "
                                            "y[i] = x[i] > 0.f ? x[i] : 0.f;\n```"));
  EXPECT_TRUE(body.candidate) << body.format_error;
}

TEST(Realize, BracesInCommentsAndStringsDoNotCount) {
  const TaskSpec task = task_spec(19, Scale::small);
  const Realized r = realize(task, text_action("```\n// a } in a comment {{\n"
                                               "/* and { here */\n"
                                               "KBRL_GRID_STRIDE_LOOP(i, y_numel) { y[i] = x[i] > 0.f ? x[i] : 0.f; }\n```"));
  ASSERT_TRUE(r.candidate) << r.format_error;
  EXPECT_TRUE(compile(*r.candidate).ok());
}

TEST(Realize, KindsAndStylesParse) {
  EXPECT_EQ(parse_action_kind("text"), ActionKind::text);
  EXPECT_EQ(to_string(ActionKind::knobs), "knobs");
  EXPECT_EQ(parse_text_style("file"), TextStyle::file);
  EXPECT_THROW(parse_action_kind("words"), InputError);
  EXPECT_THROW(parse_text_style("prose"), InputError);
}

}  // namespace
}  // namespace kbrl
