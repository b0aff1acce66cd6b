// KernelBench-format answers (kernels/kernelbench_import.h): the importer's launch plans, what it
// refuses and why, and the answers of ctest/kernels/kernelbench_answers/ (written in the styles
// models write, each with its expected result), whose converted ones must compile.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <ctest/text_testing.h>
#include <harness/evaluator.h>
#include <harness/record/kernelbench_result.h>
#include <kernels/action.h>
#include <kernels/candidate_file.h>
#include <kbrl/error.h>
#include <kernels/kernelbench_import.h>
#include <reference/task_registry.h>

namespace kbrl {
namespace {

namespace fs = std::filesystem;
using kbrl::testing::contains;

fs::path answers_dir() {
  const char* root = std::getenv("KBRL_SOURCE_DIR");  // CTest sets it
  return fs::path(root ? root : ".") / "ctest" / "kernels" / "kernelbench_answers";
}

std::string read_text(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// A KernelBench answer for task 19 with this host function body and these kernels.
std::string relu_answer(const std::string& host_body, const std::string& kernels = "", const std::string& forward =
                                                                                          "return self.ext.relu_cuda(x)") {
  return "```python\nimport torch\nimport torch.nn as nn\nfrom torch.utils.cpp_extension import load_inline\n\n"
         "src = \"\"\"\n#include <torch/extension.h>\n#include <cuda_runtime.h>\n#define BLOCK 256\n" +
         (kernels.empty() ? "__global__ void relu_kernel(const float* x, float* y, long long n) {\n"
                            "  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n"
                            "  if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;\n}\n"
                          : kernels) +
         "\ntorch::Tensor relu_cuda(torch::Tensor x) {\n" + host_body + "\n}\n\"\"\"\n\n"
         "ext = load_inline(name='relu', cpp_sources='torch::Tensor relu_cuda(torch::Tensor x);', cuda_sources=src,\n"
         "                  functions=['relu_cuda'], verbose=False)\n\n"
         "class ModelNew(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.ext = ext\n\n"
         "    def forward(self, x):\n        " + forward + "\n```\n";
}

/// The answer with a weight of ModelNew's own.
std::string with_weights(std::string answer) {
  const std::string at = "self.ext = ext";
  answer.insert(answer.find(at) + at.size(), "\n        self.w = nn.Parameter(torch.ones(3))");
  return answer;
}

const char* kReluHost =
    "  TORCH_CHECK(x.is_cuda(), \"x must be a CUDA tensor\");\n"
    "  auto out = torch::empty_like(x);\n"
    "  int64_t n = x.numel();\n"
    "  const int blocks = (n + BLOCK - 1) / BLOCK;\n"
    "  relu_kernel<<<blocks, BLOCK, 0, at::cuda::getCurrentCUDAStream()>>>(x.data_ptr<float>(), out.data_ptr<float>(), n);\n"
    "  C10_CUDA_KERNEL_LAUNCH_CHECK();\n"
    "  return out;";

TEST(KernelBenchImport, TheHostFunctionBecomesTheLaunchPlan) {
  const TaskSpec task = task_spec(19, Scale::small);
  const std::string code = extract_code(relu_answer(kReluHost));
  ASSERT_TRUE(is_kernelbench_answer(code));
  const KernelBenchImport imported = import_kernelbench_answer(code, task);
  ASSERT_EQ(imported.unsupported, "");
  const std::string& file = imported.candidate_file;
  EXPECT_TRUE(contains(file, "// kbrl: launch relu_kernel grid=(numel(x) + 256 - 1) / 256 block=256 "
                             "args=in:x,out:y,i64:numel(x)\n")) << file;
  EXPECT_TRUE(contains(file, "extern \"C\" __global__ void relu_kernel(")) << file;
  EXPECT_FALSE(contains(file, "torch::Tensor relu_cuda")) << file;  // the host function is not device code
  EXPECT_FALSE(contains(file, "\n#include <torch/extension.h>")) << file;
  const Candidate c = parse_candidate_file(file, task, "answer.cu");
  ASSERT_EQ(c.launches.size(), 1u);
  EXPECT_EQ(c.launches[0].kernel, "relu_kernel");
  // realize reads it the same way.
  const Realized r = realize(task, {ActionKind::text, {}, relu_answer(kReluHost)});
  ASSERT_TRUE(r.candidate) << r.format_error;
  EXPECT_EQ(r.code, file);
  EXPECT_EQ(*r.candidate, c);
}

TEST(KernelBenchImport, Dim3GridsSeveralLaunchesPointersAndAZeroedOutput) {
  const TaskSpec task = task_spec(19, Scale::small);
  const std::string kernels =
      "__global__ void fill(float* y, int rows, int cols, float v) { }\n"
      "__global__ void __launch_bounds__(256) relu2d(const float* x, float* y, int rows, int cols) { }\n";
  const std::string host =
      "  const auto rows = x.size(0), cols = x.size(1);\n"
      "  auto y = torch::zeros({rows, cols}, x.options());\n"
      "  float* y_ptr = y.data_ptr<float>();\n"
      "  dim3 block(16, 16);\n"
      "  dim3 grid((cols + 15) / 16, std::min((rows + 15) / 16, (int64_t)65535));\n"
      "  fill<<<grid, block>>>(y_ptr, rows, cols, 0.5f);\n"
      "  relu2d<<<grid, block, 16 * sizeof(float)>>>((float*)x.data_ptr(), y_ptr, rows, cols);\n"
      "  cudaError_t err = cudaGetLastError();\n"
      "  if (err != cudaSuccess) { printf(\"%s\", cudaGetErrorString(err)); }\n"
      "  return y;";
  const KernelBenchImport imported = import_kernelbench_answer(extract_code(relu_answer(host, kernels)), task);
  ASSERT_EQ(imported.unsupported, "");
  const std::string& file = imported.candidate_file;
  EXPECT_TRUE(contains(file, "// kbrl: launch kbrl_import_fill ")) << file;  // torch::zeros: zeroed first
  EXPECT_TRUE(contains(file, "args=out:y,i64:size(x, 0) * size(x, 1),f32:0\n")) << file;
  EXPECT_TRUE(contains(file, "// kbrl: launch fill grid=(size(x, 1) + 15) / 16,min((size(x, 0) + 15) / 16, 65535) block=16,16 ")) << file;
  EXPECT_TRUE(contains(file, "args=out:y,i32:size(x, 0),i32:size(x, 1),f32:0.5\n")) << file;
  EXPECT_TRUE(contains(file, " smem=16 * 4 args=in:x,out:y,")) << file;
  EXPECT_TRUE(contains(file, "extern \"C\" __global__ void __launch_bounds__(256) relu2d(")) << file;
  const Candidate c = parse_candidate_file(file, task, "answer.cu");
  ASSERT_EQ(c.launches.size(), 3u);
  EXPECT_EQ(c.launches[2].kernel, "relu2d");
}

// AT_DISPATCH_FLOATING_TYPES over a kernel templated on scalar_t: the float branch, the kernel
// made the float one (kbrl's tensors are float).
TEST(KernelBenchImport, AtDispatchRunsTheFloatBranch) {
  const TaskSpec task = task_spec(19, Scale::small);
  const std::string kernels =
      "template <typename scalar_t>\n__global__ void relu_kernel(const scalar_t* x, scalar_t* y, long long n) {\n"
      "  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n"
      "  if (i < n) y[i] = x[i] > scalar_t(0) ? x[i] : scalar_t(0);\n}\n";
  const std::string host =
      "  auto out = torch::empty_like(x);\n"
      "  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), \"relu\", ([&] {\n"
      "    relu_kernel<scalar_t><<<(x.numel() + 255) / 256, 256>>>(x.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), "
      "x.numel());\n  }));\n  return out;";
  const KernelBenchImport imported = import_kernelbench_answer(extract_code(relu_answer(host, kernels)), task);
  ASSERT_EQ(imported.unsupported, "");
  const std::string& file = imported.candidate_file;
  EXPECT_TRUE(contains(file, "// kbrl: launch relu_kernel grid=(numel(x) + 255) / 256 block=256 "
                             "args=in:x,out:y,i64:numel(x)\n")) << file;
  EXPECT_TRUE(contains(file, "typedef float scalar_t;\nextern \"C\" __global__ void relu_kernel(")) << file;
  EXPECT_NO_THROW(parse_candidate_file(file, task, "answer.cu"));
  // A dispatch without a float branch is refused.
  std::string integral = host;
  integral.replace(integral.find("FLOATING"), 8, "INTEGRAL");
  EXPECT_TRUE(contains(import_kernelbench_answer(extract_code(relu_answer(integral, kernels)), task).unsupported,
                       "no float branch"));
}

TEST(KernelBenchImport, WhatItCannotReadIsNamed) {
  const TaskSpec task = task_spec(19, Scale::small);
  const std::string relu_launch = "relu_kernel<<<1, 256>>>(x.data_ptr<float>(), out.data_ptr<float>(), x.numel());";
  const struct {
    std::string answer, reason;
  } cases[] = {
      {relu_answer("  auto out = torch::empty_like(x);\n  for (int i = 0; i < 2; ++i) " + relu_launch + "\n  return out;"),
       "control flow"},
      {relu_answer("  auto out = torch::empty_like(x);\n  cublasHandle_t h; cublasCreate(&h);\n  return out;"), "cuBLAS"},
      {relu_answer("  auto out = torch::relu(x);\n  return out;"), "torch operation"},
      {relu_answer("  auto out = torch::empty_like(x);\n  relu_kernel<float, 4><<<1, 256>>>(x.data_ptr<float>(), "
                   "out.data_ptr<float>(), x.numel());\n  return out;",
                   "template <typename T, int V> __global__ void relu_kernel(const T* x, T* y, long long n) {}\n"),
       "template"},
      {relu_answer("  auto out = torch::empty({7}, x.options());\n  " + relu_launch + "\n  return out;"), "output shape"},
      {relu_answer(std::string("  auto out = torch::empty_like(x);\n  ") + relu_launch + "\n  return out;", "",
                   "y = self.ext.relu_cuda(x)\n        return y * 2"),
       "forward"},
      {"```python\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        return torch.relu(x)\n```", "no CUDA"},
      {"```python\nsrc = \"\"\"\n__global__ void k() {}\nclass ModelNew(nn.Module):\n    pass\n```", "syntax"},
      {with_weights(relu_answer(std::string("  auto out = torch::empty_like(x);\n  ") + relu_launch + "\n  return out;")),
       "parameters"},
  };
  for (const auto& c : cases) {
    const KernelBenchImport imported = import_kernelbench_answer(extract_code(c.answer), task);
    EXPECT_EQ(imported.candidate_file, "") << c.reason;
    EXPECT_TRUE(contains(imported.unsupported, c.reason)) << c.reason << ": " << imported.unsupported;
    const Realized r = realize(task, {ActionKind::text, {}, c.answer});
    EXPECT_FALSE(r.candidate);
    EXPECT_EQ(r.failure, Outcome::unsupported_format) << c.reason;
    EXPECT_TRUE(contains(r.format_error, "a KernelBench-format answer kbrl cannot read: ")) << r.format_error;
  }
}

// The answers of kernelbench_answers/: each converted or refused as expected.json says; the
// converted ones compile (compile-only, sm_90). Prints the share converted.
TEST(KernelBenchImport, TheAnswersOfTheTestDataAsExpected) {
  const nlohmann::json expected = nlohmann::json::parse(read_text(answers_dir() / "expected.json"));
  ASSERT_GE(expected.size(), 30u);
  EvalSettings settings;
  settings.compile_only = true;
  settings.arch = "sm_90";
  settings.scale = Scale::kernelbench;
  settings.cache_dir = fs::temp_directory_path() / "kbrl-kernelbench-import-cache";
  Evaluator evaluator(settings);
  int converted = 0;
  for (const auto& e : expected) {
    const std::string file = e.at("file");
    const TaskSpec task = task_spec(e.at("task").get<int>(), Scale::kernelbench);
    const Realized r = realize(task, {ActionKind::text, {}, read_text(answers_dir() / file)});
    if (e.at("expect") == "converted") {
      ASSERT_TRUE(r.candidate) << file << ": " << r.format_error;
      const EvalRecord record = evaluator.evaluate(*r.candidate, r.raw);
      EXPECT_EQ(record.outcome, Outcome::not_run) << file << ": " << record.outcome_detail << "\n" << r.code;
      ++converted;
    } else {
      EXPECT_FALSE(r.candidate) << file;
      EXPECT_EQ(r.failure, Outcome::unsupported_format) << file << ": " << r.format_error;
      EXPECT_TRUE(contains(r.format_error, e.at("reason").get<std::string>())) << file << ": " << r.format_error;
    }
  }
  std::printf("kernelbench_answers: %d of %zu converted\n", converted, expected.size());
}

// Hostile and damaged text never throws out of the importer nor crashes it (kbrl serve imports
// whatever a client sends): every answer of the test data cut short at many places, with bytes
// flipped, and blown up (a 200 KB line, deep parentheses, many statements).
TEST(KernelBenchImport, DamagedAnswersNeverThrowOrCrash) {
  const TaskSpec task = task_spec(19, Scale::kernelbench);
  std::vector<std::string> texts;
  for (const auto& entry : fs::directory_iterator(answers_dir()))
    if (entry.path().extension() == ".md") texts.push_back(extract_code(read_text(entry.path())));
  ASSERT_GE(texts.size(), 30u);
  uint64_t state = 0x9E3779B97F4A7C15ull;  // a fixed seed: the same cases every run
  auto next = [&state] {
    state ^= state << 13, state ^= state >> 7, state ^= state << 17;
    return state;
  };
  const char* noise = "(){}[]\"';<>=\n#";
  int cases = 0;
  for (const std::string& text : texts) {
    for (int i = 0; i < 40; ++i) {
      std::string damaged = text.substr(0, next() % (text.size() + 1));
      if (i % 2)
        for (int k = 0; k < 4 && !damaged.empty(); ++k) damaged[next() % damaged.size()] = noise[next() % 15];
      const KernelBenchImport imported = import_kernelbench_answer(damaged, task);
      EXPECT_TRUE(imported.candidate_file.empty() != imported.unsupported.empty());
      if (!imported.candidate_file.empty()) {
        try {
          parse_candidate_file(imported.candidate_file, task, "answer.cu");
        } catch (const InputError&) {
          // a plan the damaged numbers break: a format error, not a crash
        }
      }
      ++cases;
    }
  }
  const std::string host = kReluHost;
  const std::string hostile[] = {
      relu_answer(host, "", "return self.ext.relu_cuda(" + std::string(200000, 'x') + ")"),
      relu_answer("  auto out = torch::empty_like(x);\n  int n = " + std::string(5000, '(') + "1" +
                  std::string(5000, ')') + ";\n" + host),
      relu_answer(std::string(20000, ';') + host),
      relu_answer("  int a = 1" + std::string(200000, ' ') + ";\n" + host),
      "class ModelNew:\n" + std::string(300000, '\n'),
      "class ModelNew\nsrc = r\"\"\"" + std::string(100000, '\\'),
      relu_answer("  auto out = torch::empty_like(x);\n  int n = " + std::string(100000, '-') + "1;\n" + host),
      "x = load_inline(cuda_sources=" + std::string(50000, '[') + "s" + std::string(50000, ']') + ")\nclass ModelNew:\n",
      relu_answer(host, "\n" + std::string(200000, ' ') + "\n" + std::string(200000, ' ') + "#include <vector>\n"),
  };
  for (const std::string& text : hostile) {
    const KernelBenchImport imported = import_kernelbench_answer(text, task_spec(19, Scale::small));
    EXPECT_TRUE(imported.candidate_file.empty() != imported.unsupported.empty());
    ++cases;
  }
  std::printf("%d damaged or hostile answers imported without a throw or a crash\n", cases);
}

TEST(KernelBenchResult, FieldsAsKernelBenchReportsThem) {
  EvalRecord r;
  r.outcome = Outcome::ok;
  r.compile.ok = true;
  r.speedup = 1.5;
  r.speedup_ci = SpeedupInterval{1.4, 1.6};
  r.device = "NVIDIA H100 80GB HBM3";
  RuntimeStats t;
  t.n = 50;
  t.mean_ms = 2.0;
  t.median_ms = 1.9;
  r.runtime = t;
  t.mean_ms = 3.0;
  r.reference = t;
  nlohmann::json j = kernelbench_result(r);
  EXPECT_EQ(j.at("compiled"), true);
  EXPECT_EQ(j.at("correctness"), true);
  EXPECT_EQ(j.at("runtime"), 2.0);
  EXPECT_EQ(j.at("ref_runtime"), 3.0);
  EXPECT_EQ(j.at("runtime_stats").at("num_trials"), 50);
  EXPECT_EQ(j.at("runtime_stats").at("median"), 1.9);
  EXPECT_EQ(j.at("metadata").at("kbrl_outcome"), "ok");
  EXPECT_EQ(j.at("metadata").at("hardware"), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(j.at("metadata").at("speedup_ci95"), nlohmann::json::array({1.4, 1.6}));
  r.outcome = Outcome::wrong_answer;  // timed or not, a wrong answer has no runtime
  j = kernelbench_result(r);
  EXPECT_EQ(j.at("correctness"), false);
  EXPECT_EQ(j.at("runtime"), -1.0);
  EXPECT_TRUE(j.at("runtime_stats").empty());
}

}  // namespace
}  // namespace kbrl
