// The on-disk candidate format (kernels/candidate_file.h): good files and every error with its line,
// the plan's limits, short error messages for long input, and what read_candidate_file refuses.
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

namespace kbrl {
namespace {

const std::string kRelu = R"(// A ReLU.
// kbrl: launch relu grid=cdiv(numel(x), 256) block=256 args=in:x,out:y,i64:numel(x)
extern "C" __global__ void relu(const float* x, float* y, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] < 0.f ? 0.f : x[i];
}
)";

TaskSpec relu_task() { return task_spec(19, Scale::small); }

/// The InputError message of parsing `text` against task `id` (small scale).
std::string error_of(const std::string& text, int id = 19) {
  try {
    parse_candidate_file(text, task_spec(id, Scale::small), "k.cu");
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

/// kRelu with its launch line replaced by `line`.
std::string relu_with(const std::string& line) {
  std::string text = kRelu;
  const size_t start = text.find("// kbrl: launch");
  return text.replace(start, text.find('\n', start) - start, line);
}

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

TEST(CandidateFile, PlanLimits) {
  const std::string source = "extern \"C\" __global__ void relu(const float* x, float* y, long long n) {}\n";
  auto launches = [&](int n) {
    std::string text;
    for (int i = 0; i < n; ++i) text += "// kbrl: launch relu grid=1 block=32 args=in:x,out:y,i64:1\n";
    return text + source;
  };
  EXPECT_EQ(parse_candidate_file(launches(64), relu_task()).launches.size(), 64u);
  EXPECT_NE(error_of(launches(65)).find("k.cu:65: more than 64 launches"), std::string::npos)
      << error_of(launches(65));

  auto scratch = [&](int n) {
    std::string text;
    for (int i = 0; i < n; ++i) text += fmt::format("// kbrl: scratch s{} bytes=4\n", i);
    return text + launches(1);
  };
  EXPECT_EQ(parse_candidate_file(scratch(16), relu_task()).scratch.size(), 16u);
  EXPECT_NE(error_of(scratch(17)).find("k.cu:17: more than 16 scratch buffers"), std::string::npos)
      << error_of(scratch(17));
  const std::string eight_gib = "// kbrl: scratch a bytes=8 * 1024 * 1024 * 1024\n";
  EXPECT_EQ(parse_candidate_file(eight_gib + launches(1), relu_task()).scratch[0].bytes, int64_t{8} << 30);
  EXPECT_NE(error_of(eight_gib + "// kbrl: scratch b bytes=1\n" + launches(1))
                .find("k.cu:2: scratch 'b' of 1 bytes brings the plan's scratch to more than 8589934592"),
            std::string::npos);
  EXPECT_NE(error_of("// kbrl: scratch a bytes=9 * 1024 * 1024 * 1024\n" + launches(1)).find("k.cu:1: scratch 'a'"),
            std::string::npos);

  const std::string max_smem = "// kbrl: launch relu grid=1 block=32 smem=227 * 1024 args=in:x,out:y,i64:1";
  EXPECT_EQ(parse_candidate_file(relu_with(max_smem), relu_task()).launches[0].shared_bytes, 232448u);
  const std::string too_much = error_of(relu_with("// kbrl: launch relu grid=1 block=32 smem=232449 args=in:x"));
  EXPECT_NE(too_much.find("k.cu:2: smem is 232449: dynamic shared memory must be 0 to 232448 bytes"),
            std::string::npos) << too_much;
  EXPECT_NE(error_of(relu_with("// kbrl: launch relu grid=1 block=32 smem=1073741824 args=in:x")).find("smem is"),
            std::string::npos);
  EXPECT_NE(error_of("// kbrl: scaffold smem=300000\n").find("k.cu:1: smem is 300000"), std::string::npos);

  std::string args = "in:x,out:y";
  for (int i = 2; i < 256; ++i) args += ",i32:1";
  EXPECT_EQ(parse_candidate_file(relu_with("// kbrl: launch relu grid=1 block=1 args=" + args), relu_task())
                .launches[0].args.size(), 256u);
  EXPECT_NE(error_of(relu_with("// kbrl: launch relu grid=1 block=1 args=" + args + ",i32:1"))
                .find("k.cu:2: 257 arguments: a launch may have at most 256"),
            std::string::npos);
}

TEST(CandidateFile, PlanLimitViolation) {
  Candidate c = parse_candidate_file(kRelu, relu_task());
  EXPECT_EQ(plan_limit_violation(c), std::nullopt);
  auto violation = [](Candidate c) { return plan_limit_violation(c).value_or("none"); };
  Candidate many = c;
  many.launches.assign(65, c.launches[0]);
  EXPECT_NE(violation(many).find("65 launches: a plan may have at most 64"), std::string::npos) << violation(many);
  Candidate smem = c;
  smem.launches[0].shared_bytes = 232449;
  EXPECT_NE(violation(smem).find("launch 0 ('relu'): 232449 bytes of dynamic shared memory"), std::string::npos)
      << violation(smem);
  Candidate grid = c;
  grid.launches[0].grid.y = 65536;
  EXPECT_NE(violation(grid).find("grid.y is 65536"), std::string::npos) << violation(grid);
  Candidate block = c;
  block.launches[0].block = {64, 32, 1};
  EXPECT_NE(violation(block).find("block has 2048 threads"), std::string::npos) << violation(block);
  block.launches[0].block = {1, 1, 0};
  EXPECT_NE(violation(block).find("block.z is 0"), std::string::npos) << violation(block);
  Candidate args = c;
  args.launches[0].args.resize(257);
  EXPECT_NE(violation(args).find("257 arguments"), std::string::npos) << violation(args);
  Candidate scratch = c;
  scratch.scratch = {{"a", int64_t{6} << 30}, {"b", int64_t{3} << 30}};
  EXPECT_NE(violation(scratch).find("scratch 'b'"), std::string::npos) << violation(scratch);
  scratch.scratch.assign(17, {"s", 4});
  EXPECT_NE(violation(scratch).find("17 scratch buffers"), std::string::npos) << violation(scratch);
  scratch.scratch = {{"z", 0}};
  EXPECT_NE(violation(scratch).find("scratch 'z' has 0 bytes"), std::string::npos) << violation(scratch);
}

// Every plan kbrl itself makes keeps the limits: each catalogue entry (one that broke them would
// no longer parse) and every legal configuration of every generator, at both scales.
TEST(CandidateFile, CatalogueAndGeneratorPlansKeepTheLimits) {
  std::vector<CatalogKernel> catalogue = known_good_kernels();
  catalogue.insert(catalogue.end(), adversarial_kernels().begin(), adversarial_kernels().end());
  for (const CatalogKernel& k : catalogue) {
    SCOPED_TRACE(k.name);
    try {
      const Candidate c = parse_candidate_file(kernel_source(k), task_spec(k.task_id, Scale::kernelbench), k.file);
      EXPECT_EQ(plan_limit_violation(c), std::nullopt);
    } catch (const InputError& e) {
      ADD_FAILURE() << e.what();
    }
  }
  int checked = 0;
  for (const int id : covered_tasks()) {
    for (const Scale scale : {Scale::kernelbench, Scale::small}) {
      const TaskSpec task = task_spec(id, scale);
      const Generator& g = generator_for(id);
      for (const Config& config : g.space(task).enumerate()) {
        const Candidate c = g.generate(task, config);
        EXPECT_EQ(plan_limit_violation(c), std::nullopt) << "task " << id << " " << config.str();
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 0);
}

// Error messages quote at most about 120 characters of any one piece of input, whatever its size.
TEST(CandidateFile, ErrorsQuoteLongInputShortly) {
  const std::string huge(5000, 'q');
  const std::vector<std::string> lines = {
      "// kbrl: launch relu grid=1 block=1 " + huge + "=1 args=in:x",
      "// kbrl: launch relu" + huge + " grid=1 block=1 args=in:x",
      "// kbrl: launch 9" + huge + " grid=1 block=1 args=in:x",
      "// kbrl: launch relu grid=1 block=1 args=in:" + huge,
      "// kbrl: launch relu grid=1 block=1 args=out:" + huge,
      "// kbrl: launch relu grid=1 block=1 args=scratch:" + huge,
      "// kbrl: launch relu grid=1 block=1 args=" + huge + ":x",
      "// kbrl: launch relu grid=1 block=1 args=" + huge,
      "// kbrl: launch relu grid=1 block=1 args=f32:" + huge,
      "// kbrl: launch relu grid=1 block=1 args=in:x,,out:y" + std::string(5000, ' ') + huge,
      "// kbrl: launch relu grid=1,1,1," + huge + " block=1 args=in:x",
      "// kbrl: launch relu grid=1 block=1 args=i32:" + huge,
      "// kbrl: launch relu grid=" + std::string(1000, '9') + " block=1 args=in:x",
      "// kbrl: launch relu grid=" + std::string(2000, '1') + "+q block=1 args=in:x",
      "// kbrl: " + huge,
      "// kbrl: scratch " + huge + " bytes=0",
  };
  for (const std::string& line : lines) {
    const std::string message = error_of(relu_with(line));
    EXPECT_NE(message, "no error") << line.substr(0, 80);
    EXPECT_LT(message.size(), 400u) << message;
  }
  const std::string scaffold = error_of("// kbrl: scaffold " + huge + "\n");
  EXPECT_NE(scaffold.find("unexpected 'qqq"), std::string::npos) << scaffold.substr(0, 400);
  EXPECT_LT(scaffold.size(), 400u) << scaffold;
}

/// The InputError message of read_candidate_file(path), or "read N bytes". It runs in a child
/// process limited to 20 seconds and 2 GiB of data, so that a regression (reading /dev/zero
/// without end, waiting on a FIFO for a writer) fails the test instead of exhausting the machine.
void expect_read_refused(const std::string& path, const std::string& message_pattern) {
  const auto child = [&] {
    alarm(20);
    const rlimit data{rlim_t{2} << 30, rlim_t{2} << 30};
    setrlimit(RLIMIT_DATA, &data);
    try {
      const std::string text = read_candidate_file(path);
      std::fprintf(stderr, "read %zu bytes\n", text.size());
    } catch (const InputError& e) {
      std::fprintf(stderr, "%s\n", e.what());
      std::_Exit(0);
    }
    std::_Exit(1);
  };
  EXPECT_EXIT(child(), ::testing::ExitedWithCode(0), message_pattern) << path;
}

// `kbrl eval --kernel /dev/zero` read forever and a FIFO blocked: only regular files of at most
// 16 MiB are read, symbolic links followed.
TEST(CandidateFile, ReadsOnlyRegularFilesOfBoundedSize) {
  const auto dir = std::filesystem::temp_directory_path() / ("kbrl-test-read-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const auto fifo = dir / "fifo.cu";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::filesystem::create_symlink("/dev/zero", dir / "zero.cu");
  std::filesystem::create_symlink(fifo, dir / "fifo_link.cu");
  const auto big = dir / "big.cu";
  std::ofstream(big) << kRelu;
  std::filesystem::resize_file(big, kMaxCandidateFileBytes + 1);  // sparse: no disk used

  expect_read_refused("/dev/zero", "'/dev/zero' is a character device, not a regular file");
  expect_read_refused((dir / "zero.cu").string(), "zero.cu' is a character device, not a regular file");
  expect_read_refused(fifo.string(), "fifo.cu' is a FIFO .named pipe., not a regular file");
  expect_read_refused((dir / "fifo_link.cu").string(), "is a FIFO");
  expect_read_refused(dir.string(), "is a directory, not a regular file");
  expect_read_refused(big.string(), "has 16777217 bytes: at most 16777216 .16 MiB. are read");
  expect_read_refused((dir / "missing.cu").string(), "cannot read candidate file .*No such file");

  // A regular file, through a symbolic link too, and one of exactly the limit.
  const auto good = dir / "relu.cu";
  std::ofstream(good) << kRelu;
  std::filesystem::create_symlink(good, dir / "relu_link.cu");
  EXPECT_EQ(read_candidate_file(dir / "relu_link.cu"), kRelu);
  EXPECT_EQ(load_candidate_file(dir / "relu_link.cu", relu_task()).launches.size(), 1u);
  const auto at_limit = dir / "at_limit.cu";
  {
    std::ofstream out(at_limit);
    out << kRelu << "//";
    out << std::string(static_cast<size_t>(kMaxCandidateFileBytes) - kRelu.size() - 3, 'x') << "\n";
  }
  ASSERT_EQ(std::filesystem::file_size(at_limit), static_cast<uintmax_t>(kMaxCandidateFileBytes));
  EXPECT_EQ(load_candidate_file(at_limit, relu_task()).launches.size(), 1u);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kbrl
