// The on-disk candidate format (kernels/candidate_file.h): good files and every error with its line;
// the plan's limits and what read_candidate_file refuses are in test_candidate_limits.cpp.
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include <kbrl/error.h>
#include <kernels/candidate_file.h>
#include <kernels/expression.h>
#include <kernels/generator.h>
#include <kernels/kernel_catalog.h>
#include <kernels/scaffold.h>
#include <reference/task_registry.h>

#include "candidate_file_testing.h"

namespace kbrl {
namespace {

using namespace testing;

TEST(CandidateFile, ParsesALaunch) {
  const TaskSpec task = relu_task();
  const Candidate c = parse_candidate_file(kRelu, task);
  EXPECT_EQ(c.task_id, 19);
  EXPECT_EQ(c.source, kRelu);  // the file itself, so NVRTC's line numbers are the file's
  ASSERT_EQ(c.launches.size(), 1u);
  const Launch& l = c.launches[0];
  EXPECT_EQ(l.kernel, "relu");
  const int64_t n = task.inputs[0].numel();
  EXPECT_EQ(l.grid, (Dim3{static_cast<uint32_t>((n + 255) / 256), 1, 1}));
  EXPECT_EQ(l.block, (Dim3{256, 1, 1}));
  EXPECT_EQ(l.shared_bytes, 0u);
  ASSERT_EQ(l.args.size(), 3u);
  EXPECT_EQ(l.args[0], (KernelArg{ArgKind::input, 0}));
  EXPECT_EQ(l.args[1], (KernelArg{ArgKind::output, 0}));
  EXPECT_EQ(l.args[2].kind, ArgKind::i64);
  EXPECT_EQ(l.args[2].ivalue, n);
  EXPECT_TRUE(c.scratch.empty());
  EXPECT_TRUE(c.options.empty());
}

TEST(CandidateFile, EveryArgumentKindScratchOptionsAndTwoLaunches) {
  const TaskSpec task = task_spec(5, Scale::small);  // inputs A, scalar s
  const std::string text = R"(// kbrl: option --use_fast_math -lineinfo
// kbrl: scratch partial bytes=4 * cdiv(numel(A), 256)
//   kbrl:   launch first grid=cdiv(numel(A), 256), 1, 1 block=16,16 smem=256*4 args=in:A, out:C, scratch:partial, scalar:s, f32:-1.5e-3, i32:size(A, 0), i64:numel(A)
// kbrl: launch second grid=1 block=32 args=scratch:partial,out:C
// kbrl: scratch other bytes=16
extern "C" __global__ void first() {}
extern "C" __global__ void second() {}
)";
  const Candidate c = parse_candidate_file(text, task);
  EXPECT_EQ(c.options, (std::vector<std::string>{"--use_fast_math", "-lineinfo"}));
  ASSERT_EQ(c.scratch.size(), 2u);
  EXPECT_EQ(c.scratch[0].name, "partial");
  EXPECT_EQ(c.scratch[0].bytes, 4 * ((task.inputs[0].numel() + 255) / 256));
  EXPECT_EQ(c.scratch[1], (ScratchBuffer{"other", 16}));
  ASSERT_EQ(c.launches.size(), 2u);
  const Launch& first = c.launches[0];
  EXPECT_EQ(first.grid.y, 1u);
  EXPECT_EQ(first.block, (Dim3{16, 16, 1}));
  EXPECT_EQ(first.shared_bytes, 1024u);
  ASSERT_EQ(first.args.size(), 7u);
  EXPECT_EQ(first.args[0], (KernelArg{ArgKind::input, 0}));
  EXPECT_EQ(first.args[1], (KernelArg{ArgKind::output, 0}));
  EXPECT_EQ(first.args[2], (KernelArg{ArgKind::scratch, 0}));
  EXPECT_EQ(first.args[3], (KernelArg{ArgKind::task_scalar, 0}));
  EXPECT_EQ(first.args[4].kind, ArgKind::f32);
  EXPECT_DOUBLE_EQ(first.args[4].value, -1.5e-3);
  EXPECT_EQ(first.args[5].kind, ArgKind::i32);
  EXPECT_EQ(first.args[5].ivalue, task.inputs[0].shape[0]);
  EXPECT_EQ(c.launches[1].kernel, "second");
  EXPECT_EQ(c.launches[1].args[0], (KernelArg{ArgKind::scratch, 0}));
}

TEST(CandidateFile, ParametersByDottedOrUnderscoredName) {
  const TaskSpec task = task_spec(33, Scale::small);  // batch norm: weight, bias
  ASSERT_GE(task.parameters.size(), 2u);
  const std::string text =
      "// kbrl: launch bn grid=size(x, 1) block=256 args=in:x,param:weight,param:bias,out:y\n"
      "extern \"C\" __global__ void bn() {}\n";
  const Candidate c = parse_candidate_file(text, task);
  EXPECT_EQ(c.launches[0].args[1], (KernelArg{ArgKind::parameter, 0}));
  EXPECT_EQ(c.launches[0].args[2], (KernelArg{ArgKind::parameter, 1}));
}

TEST(CandidateFile, Int64Targets) {
  const TaskSpec task = task_spec(95, Scale::small);  // cross entropy: predictions, targets (int64)
  const std::string text =
      "// kbrl: launch ce grid=1 block=size(predictions, 0) % 1024 + 1 args=in:predictions,in:targets,out:" +
      task.outputs[0].name + "\nextern \"C\" __global__ void ce() {}\n";
  const Candidate c = parse_candidate_file(text, task);
  EXPECT_EQ(c.launches[0].args[1], (KernelArg{ArgKind::input, 1}));
  EXPECT_EQ(task.inputs[1].dtype, DType::i64);
}

TEST(CandidateFile, Errors) {
  struct Case {
    std::string text;
    std::string message;
  };
  const std::vector<Case> cases = {
      {relu_with("// kbrl: launch relu grid=cdiv(numel(z), 256) block=256 args=in:x,out:y"),
       "k.cu:2: bad expression 'cdiv(numel(z), 256)': unknown tensor 'z'"},
      {relu_with("// kbrl: launch relu grid=1 block=256 args=in:z,out:y"),
       "k.cu:2: unknown input 'z' in 'in:z' (task 19 inputs: x)"},
      {relu_with("// kbrl: launch relu grid=1 block=256 args=in:x,out:x"), "k.cu:2: unknown output 'x'"},
      {relu_with("// kbrl: launch relu grid=1 block=256 args=param:w"), "k.cu:2: unknown parameter 'w'"},
      {relu_with("// kbrl: launch relu grid=1 block=256 args=scalar:s"), "k.cu:2: unknown scalar 's'"},
      {relu_with("// kbrl: launch relu grid=1 block=256 args=scratch:t"), "k.cu:2: unknown scratch 't'"},
      {relu_with("// kbrl: launch relu grid=1 block=256 args=x"), "k.cu:2: argument 'x' has no kind"},
      {relu_with("// kbrl: launch relu grid=1 block=256 args=ptr:x"), "k.cu:2: unknown argument kind 'ptr'"},
      {relu_with("// kbrl: launch relu grid=1 block=256 args=f32:1.5x"), "k.cu:2: bad number '1.5x'"},
      {relu_with("// kbrl: launch relu grid=1 block=256 args=i32:3000000000"), "outside the int32 range"},
      {relu_with("// kbrl: launch relu grid=1 block=256 args=in:x,,out:y"), "k.cu:2: empty argument"},
      {relu_with("// kbrl: launch relu grid=0 block=256 args=in:x"), "k.cu:2: grid.x is 0 ('0')"},
      {relu_with("// kbrl: launch relu grid=numel(x) - numel(x) block=256 args=in:x"), "k.cu:2: grid.x is 0"},
      {relu_with("// kbrl: launch relu grid=1,0 block=256 args=in:x"), "k.cu:2: grid.y is 0"},
      {relu_with("// kbrl: launch relu grid=1,65536 block=256 args=in:x"), "grid.y is 65536 ('65536'): CUDA allows at most 65535"},
      {relu_with("// kbrl: launch relu grid=1,1,1,1 block=256 args=in:x"), "grid= takes 1 to 3"},
      {relu_with("// kbrl: launch relu grid=1 block=2048 args=in:x"), "block.x is 2048"},
      {relu_with("// kbrl: launch relu grid=1 block=64,32 args=in:x"), "block has 2048 threads"},
      {relu_with("// kbrl: launch relu grid=1 block=256 smem=-1 args=in:x"), "smem is -1"},
      {relu_with("// kbrl: launch relu block=256 args=in:x"), "k.cu:2: 'launch' needs grid="},
      {relu_with("// kbrl: launch relu grid=1 args=in:x"), "k.cu:2: 'launch' needs block="},
      {relu_with("// kbrl: launch relu grid=1 block=1"), "k.cu:2: 'launch' needs args="},
      {relu_with("// kbrl: launch relu grid=1 grid=2 block=1 args=in:x"), "k.cu:2: 'grid' given twice"},
      {relu_with("// kbrl: launch relu grid=1 block=1 color=red args=in:x"), "k.cu:2: unknown key 'color'"},
      {relu_with("// kbrl: launch grid=1 block=1 args=in:x"), "k.cu:2: 'launch' takes one kernel name"},
      {relu_with("// kbrl: launch 9lives grid=1 block=1 args=in:x"), "k.cu:2: bad kernel name '9lives'"},
      {relu_with("// kbrl: launch relu_v2 grid=1 block=1 args=in:x"),
       "k.cu:2: kernel 'relu_v2' does not appear in the source"},
      {relu_with("// kbrl: lunch relu grid=1 block=1 args=in:x"), "k.cu:2: unknown kbrl directive 'lunch'"},
      {relu_with("// kbrl: option"), "k.cu:2: 'option' needs a compile option"},
      {relu_with("// kbrl: scratch buf"), "k.cu:2: 'scratch' needs bytes="},
      {relu_with("// kbrl: scratch buf bytes=0"), "k.cu:2: scratch 'buf' has 0 bytes"},
      {"// kbrl: scratch b bytes=4\n// kbrl: scratch b bytes=8\n", "k.cu:2: scratch 'b' declared twice"},
      {relu_with("// no launch here"), "k.cu: no launch"},
      {"", "k.cu: no launch"},
      {kRelu + "// kbrl: scaffold\n", "k.cu:7: 'scaffold' cannot be combined with 'launch'"},
      {"// kbrl: scaffold block=2000\n", "k.cu:1: block.x is 2000"},
      {"// kbrl: scaffold grid=0\n", "k.cu:1: grid.x is 0"},
      {"// kbrl: scaffold fast\n", "k.cu:1: unexpected 'fast' after 'scaffold'"},
      {"// kbrl: scaffold\ny[0] = 0;\n// kbrl: option -lineinfo\n",
       "k.cu:3: kbrl directives must come before 'scaffold' (line 1)"},
  };
  for (const auto& c : cases) {
    const std::string message = error_of(c.text);
    EXPECT_NE(message.find(c.message), std::string::npos)
        << "expected: " << c.message << "\n     got: " << message << "\n    text: " << c.text;
  }
}

TEST(CandidateFile, ScaffoldBodyHelpersAndLineDirectives) {
  const TaskSpec task = relu_task();
  const std::string text =
      "__device__ float relu1(float v) { return v < 0.f ? 0.f : v; }\n"
      "// kbrl: option -lineinfo\n"
      "// kbrl: scaffold block=128 grid=cdiv(numel(y), 128 * 4)\n"
      "KBRL_GRID_STRIDE_LOOP(i, y_numel) y[i] = relu1(x[i]);\n";
  const Candidate c = parse_candidate_file(text, task, "relu_body.cu");
  ASSERT_EQ(c.launches.size(), 1u);
  EXPECT_EQ(c.launches[0].kernel, kScaffoldKernel);
  EXPECT_EQ(c.launches[0].block, (Dim3{128, 1, 1}));
  EXPECT_EQ(c.launches[0].grid.x, static_cast<uint32_t>((task.outputs[0].numel() + 511) / 512));
  EXPECT_EQ(c.options, std::vector<std::string>{"-lineinfo"});
  EXPECT_NE(c.source.find("#line 1 \"relu_body.cu\"\n__device__ float relu1"), std::string::npos);
  EXPECT_NE(c.source.find("#line 4 \"relu_body.cu\"\nKBRL_GRID_STRIDE_LOOP"), std::string::npos);
  EXPECT_LT(c.source.find("relu1(float v)"), c.source.find("kbrl_forward("));
}

TEST(CandidateFile, LoadsFromDiskAndNamesTheFile) {
  const auto path = std::filesystem::temp_directory_path() / "kbrl_test_candidate_file.cu";
  {
    std::ofstream out(path);
    out << relu_with("// kbrl: launch relu grid=0 block=1 args=in:x");
  }
  try {
    load_candidate_file(path, relu_task());
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("kbrl_test_candidate_file.cu:2: grid.x is 0"), std::string::npos)
        << e.what();
  }
  std::filesystem::remove(path);
  EXPECT_THROW(load_candidate_file(path, relu_task()), InputError);
}

// A plan line whose expression nests 30,000 parentheses or 200,000 minus signs deep used to crash
// the parser (stack overflow); now it is an error naming the line and the limit.
TEST(CandidateFile, DeepAndLongExpressionsAreErrors) {
  auto grid = [](const std::string& expression) {
    return relu_with("// kbrl: launch relu grid=" + expression + " block=256 args=in:x,out:y,i64:numel(x)");
  };
  const std::string parentheses = error_of(grid(std::string(30000, '(') + "1" + std::string(30000, ')')));
  EXPECT_NE(parentheses.find("k.cu:2: bad expression"), std::string::npos) << parentheses.substr(0, 400);
  EXPECT_NE(parentheses.find("longer than 4096 characters"), std::string::npos) << parentheses.substr(0, 400);
  const std::string minus = error_of(grid(std::string(200000, '-') + "1"));
  EXPECT_NE(minus.find("longer than 4096 characters"), std::string::npos) << minus.substr(0, 400);
  const std::string deep = error_of(grid(std::string(1000, '(') + "1" + std::string(1000, ')')));
  EXPECT_NE(deep.find("k.cu:2: bad expression"), std::string::npos) << deep.substr(0, 400);
  EXPECT_NE(deep.find("expression nesting deeper than 64"), std::string::npos) << deep.substr(0, 400);
  // In every place an expression is read.
  for (const std::string& line :
       {"// kbrl: launch relu grid=1 block=1 smem=" + std::string(100, '-') + "1 args=in:x,out:y,i64:1",
        "// kbrl: launch relu grid=1 block=1 args=in:x,out:y,i64:" + std::string(100, '-') + "1",
        "// kbrl: scratch t bytes=" + std::string(100, '-') + "1"})
    EXPECT_NE(error_of(relu_with(line)).find("nesting deeper than 64"), std::string::npos) << line;
  EXPECT_NE(error_of("// kbrl: scaffold grid=" + std::string(100, '-') + "1\n").find("nesting deeper than 64"),
            std::string::npos);
}

}  // namespace
}  // namespace kbrl
