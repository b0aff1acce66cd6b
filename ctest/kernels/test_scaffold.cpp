// The scaffold (kernels/scaffold.h): prelude, signature, launch plan, and bodies for real tasks at
// both scales that compile with NVRTC for sm_90a (no GPU needed).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <harness/compile/compile.h>
#include <kbrl/error.h>
#include <kernels/scaffold.h>
#include <reference/task_registry.h>

namespace kbrl {
namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(Scaffold, PreludeHasEveryShape) {
  const TaskSpec task = task_spec(19, Scale::kernelbench);  // x, y: [4096, 393216]
  const std::string prelude = scaffold_prelude(task);
  EXPECT_TRUE(contains(prelude, "constexpr long long x_numel = 1610612736LL;")) << prelude;
  EXPECT_TRUE(contains(prelude, "constexpr long long x_size0 = 4096LL;"));
  EXPECT_TRUE(contains(prelude, "constexpr long long x_size1 = 393216LL;"));
  EXPECT_TRUE(contains(prelude, "constexpr int x_dim = 2;"));
  EXPECT_TRUE(contains(prelude, "constexpr long long y_numel = 1610612736LL;"));
  EXPECT_TRUE(contains(prelude, "#define KBRL_GRID_STRIDE_LOOP(i, n)"));

  const TaskSpec loss = task_spec(95, Scale::small);  // a 0-d output: numel 1, no sizes
  const std::string loss_prelude = scaffold_prelude(loss);
  EXPECT_TRUE(contains(loss_prelude, "constexpr long long loss_numel = 1LL;")) << loss_prelude;
  EXPECT_TRUE(contains(loss_prelude, "constexpr int loss_dim = 0;"));
  EXPECT_FALSE(contains(loss_prelude, "loss_size0"));
}

TEST(Scaffold, SignatureOrderAndTypes) {
  EXPECT_EQ(scaffold_signature(task_spec(5, Scale::small)),
            "extern \"C\" __global__ void kbrl_forward(const float* __restrict__ A, "
            "float* __restrict__ C, float s)");
  EXPECT_EQ(scaffold_signature(task_spec(95, Scale::small)),
            "extern \"C\" __global__ void kbrl_forward(const float* __restrict__ predictions, "
            "const long long* __restrict__ targets, float* __restrict__ loss)");
  EXPECT_EQ(scaffold_signature(task_spec(33, Scale::small)),
            "extern \"C\" __global__ void kbrl_forward(const float* __restrict__ x, "
            "const float* __restrict__ weight, const float* __restrict__ bias, "
            "float* __restrict__ y)");
  EXPECT_TRUE(contains(scaffold_signature(task_spec(93, Scale::small)), "const bool* __restrict__ mask"));
  EXPECT_EQ(scaffold_identifier("depthwise.weight"), "depthwise_weight");
  EXPECT_EQ(scaffold_identifier("3d"), "_3d");
}

TEST(Scaffold, LaunchPlan) {
  const TaskSpec task = task_spec(5, Scale::small);
  const Candidate c = scaffold(task, "KBRL_GRID_STRIDE_LOOP(i, C_numel) C[i] = A[i] * s;");
  EXPECT_EQ(c.task_id, 5);
  ASSERT_EQ(c.launches.size(), 1u);
  const Launch& l = c.launches[0];
  EXPECT_EQ(l.kernel, "kbrl_forward");
  EXPECT_EQ(l.block, (Dim3{256, 1, 1}));
  EXPECT_EQ(l.grid, (Dim3{static_cast<uint32_t>((task.outputs[0].numel() + 255) / 256), 1, 1}));
  EXPECT_EQ(l.args, (std::vector<KernelArg>{{ArgKind::input, 0}, {ArgKind::output, 0},
                                            {ArgKind::task_scalar, 0}}));
  // KernelBench's ReLU: 1.6e9 elements, one thread each still fits grid.x.
  const Candidate big = scaffold(task_spec(19, Scale::kernelbench), "");
  EXPECT_EQ(big.launches[0].grid.x, 1610612736u / 256);

  ScaffoldOptions options;
  options.block = 512;
  options.grid = 132;
  options.shared_bytes = 1024;
  options.options = {"-lineinfo"};
  const Candidate custom = scaffold(task, "", options);
  EXPECT_EQ(custom.launches[0].grid, (Dim3{132, 1, 1}));
  EXPECT_EQ(custom.launches[0].block, (Dim3{512, 1, 1}));
  EXPECT_EQ(custom.launches[0].shared_bytes, 1024u);
  EXPECT_EQ(custom.options, std::vector<std::string>{"-lineinfo"});

  options.block = 0;
  EXPECT_THROW(scaffold(task, "", options), InputError);
  options.block = 2048;
  EXPECT_THROW(scaffold(task, "", options), InputError);
  options.block = 256;
  options.grid = 0;
  EXPECT_THROW(scaffold(task, "", options), InputError);
}

struct BodyCase {
  int task_id;
  std::string body;
};

// Real bodies for real tasks; each must compile at both scales.
TEST(Scaffold, BodiesCompileWithNvrtc) {
  const std::vector<BodyCase> cases = {
      {19, "KBRL_GRID_STRIDE_LOOP(i, y_numel) y[i] = fmaxf(x[i], 0.f);"},
      {5, "KBRL_GRID_STRIDE_LOOP(i, C_numel) C[i] = A[i] * s;"},
      {95,
       "if (blockIdx.x != 0 || threadIdx.x != 0) return;\n"
       "double total = 0.0;\n"
       "for (long long b = 0; b < predictions_size0; ++b) {\n"
       "  const float* row = predictions + b * predictions_size1;\n"
       "  float m = row[0];\n"
       "  for (long long c = 1; c < predictions_size1; ++c) m = fmaxf(m, row[c]);\n"
       "  double sum = 0.0;\n"
       "  for (long long c = 0; c < predictions_size1; ++c) sum += exp((double)(row[c] - m));\n"
       "  total += log(sum) + m - row[targets[b]];\n"
       "}\n"
       "loss[0] = (float)(total / predictions_size0);"},
      {33,
       "// batch norm in training mode would need statistics; the affine part is enough to compile\n"
       "KBRL_GRID_STRIDE_LOOP(i, y_numel) {\n"
       "  const long long c = (i / (x_size2 * x_size3)) % x_size1;\n"
       "  y[i] = x[i] * weight[c] + bias[c];\n"
       "}"},
  };
  for (const auto& c : cases) {
    for (Scale scale : {Scale::small, Scale::kernelbench}) {
      SCOPED_TRACE(fmt::format("task {} at {}", c.task_id, to_string(scale)));
      const Candidate candidate = scaffold(task_spec(c.task_id, scale), c.body);
      const CompileResult r = compile(candidate);
      EXPECT_TRUE(r.ok()) << r.error() << "\n" << r.log << "\n" << candidate.source;
      EXPECT_TRUE(contains(r.module().ptx, ".entry kbrl_forward")) << r.module().ptx.substr(0, 2000);
      EXPECT_FALSE(r.module().cubin.empty());
    }
  }
}

TEST(Scaffold, LineDirectivesPointIntoTheUsersFile) {
  ScaffoldOptions options;
  options.file_name = "body.cu";
  options.body_first_line = 10;
  const CompileResult r = compile(scaffold(task_spec(19, Scale::small), "y[0] = 1;\nundefined_thing;\n", options));
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(contains(r.log, "body.cu(11)")) << r.log;
  EXPECT_TRUE(contains(r.error(), "undefined_thing")) << r.error();
}

}  // namespace
}  // namespace kbrl
