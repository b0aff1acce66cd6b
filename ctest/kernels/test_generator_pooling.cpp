// The pooling generator (tasks 41-43 max pooling, 44-46 average pooling in 1, 2 and 3 dimensions):
// coverage, space sizes, tokenization, the expert configuration, launch plans over the task's own
// tensors, sources that follow the knobs, and every legal configuration compiled by NVRTC for
// sm_90a (no GPU needed). Numerical correctness (output sizes, NaN propagation, padding, the
// average's divisor) is checked on a GPU: ctest/kernels/test_generator_gpu.cpp runs every covered
// task through the evaluator; this test does not check numbers on the CPU.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "generator_testing.h"

#include <kbrl/error.h>
#include <kernels/generator.h>
#include <reference/task_registry.h>

namespace kbrl {
namespace {

using testing::contains;

const testing::FamilySpec kPooling = {
    .name = "pooling",
    .space_sizes = {{41, 288}, {42, 288}, {43, 288}, {44, 432}, {45, 432}, {46, 432}},
    .arg_kinds = {ArgKind::input, ArgKind::output, ArgKind::i64},
};

bool is_max(int id) { return id <= 43; }

TEST(PoolingGenerator, Coverage) { testing::expect_coverage(kPooling); }

// Max pooling has no arithmetic for fast-math: its configurations keep fast_math=off.
TEST(PoolingGenerator, SpaceSizesTokensAndKnobNames) {
  testing::expect_knob_spaces(
      kPooling, [](const TaskSpec& task, const KnobSpace&, const std::vector<Config>& all) {
        if (!is_max(task.id)) return;
        for (const Config& c : all) EXPECT_EQ(c.at("fast_math"), "off") << c.str();
      });
}

TEST(PoolingGenerator, ExpertIsLegalAndSafe) { testing::expect_expert_legal_and_safe(kPooling); }

TEST(PoolingGenerator, RejectsIllegalConfigs) {
  const TaskSpec task = task_spec(44, Scale::small);
  const Generator& g = generator_for(44);
  Config c = g.expert(task);
  c.set("precision", "fp16_compute");
  c.set("fast_math", "on");  // one unsafe precision knob at a time
  EXPECT_THROW(g.generate(task, c), InputError);
  c = g.expert(task);
  c.set("block", "1024");
  EXPECT_THROW(g.generate(task, c), InputError);
  // Max pooling has no arithmetic for fast-math.
  const TaskSpec t41 = task_spec(41, Scale::small);
  c = g.expert(t41);
  c.set("fast_math", "on");
  EXPECT_THROW(g.generate(t41, c), InputError);
}

// One launch over the output (direct, or through a shared-memory input tile): x, y, the number of
// planes, then (d, h, w) of the input and of the output (and the tile's input rows).
TEST(PoolingGenerator, PlansUseOnlyTheTasksArguments) {
  testing::expect_plans_use_only_task_arguments(kPooling, [](const TaskSpec& task,
                                                              const Config& config,
                                                              const Candidate& c) {
    const auto& in = task.inputs[0].shape;
    const auto& out = task.outputs[0].shape;
    ASSERT_EQ(in.size(), out.size());
    const int64_t planes = in[0] * in[1];
    ASSERT_EQ(c.launches.size(), 1u);
    const Launch& l = c.launches[0];
    const bool tile = config.at("variant") == "smem_tile";
    EXPECT_EQ(l.kernel, tile ? "kbrl_pool_tile" : "kbrl_pool");
    EXPECT_EQ(l.block.x, config.integer("block"));
    EXPECT_EQ(l.block.y * l.block.z * l.grid.y * l.grid.z, 1u);
    if (config.at("grid") == "waves") {
      EXPECT_LE(static_cast<int64_t>(l.grid.x) * config.integer("block"), 2 * 132 * 2048);
    }
    if (tile) {
      EXPECT_GT(l.shared_bytes, 0u);
      EXPECT_LE(l.shared_bytes, 128u * 1024u);
    } else {
      EXPECT_EQ(l.shared_bytes, 0u);
      if (config.at("grid") == "exact") {
        const int64_t per_block = config.integer("block") * config.integer("items_per_thread");
        EXPECT_EQ(static_cast<int64_t>(l.grid.x),
                  (task.outputs[0].numel() + per_block - 1) / per_block);
      }
    }
    ASSERT_EQ(l.args.size(), tile ? 10u : 9u);
    EXPECT_EQ(l.args[0], (KernelArg{ArgKind::input, 0}));
    EXPECT_EQ(l.args[1], (KernelArg{ArgKind::output, 0}));
    EXPECT_EQ(l.args[2], (KernelArg{ArgKind::i64, 0, 0.0, planes}));
    // (d, h, w) of the input, then of the output; 1 for dimensions the task does not have.
    const size_t nd = in.size() - 2;
    for (size_t a = 0; a < 3; ++a) {
      const int64_t iv = a < 3 - nd ? 1 : in[2 + a - (3 - nd)];
      const int64_t ov = a < 3 - nd ? 1 : out[2 + a - (3 - nd)];
      EXPECT_EQ(l.args[3 + a], (KernelArg{ArgKind::i64, 0, 0.0, iv})) << task.id << " " << a;
      EXPECT_EQ(l.args[6 + a], (KernelArg{ArgKind::i64, 0, 0.0, ov})) << task.id << " " << a;
    }
  });
}

TEST(PoolingGenerator, OutputSizesAreTorchs) {
  // floor((n + 2p - d(k - 1) - 1) / s) + 1 along every spatial dimension.
  EXPECT_EQ(task_spec(41, Scale::kernelbench).outputs[0].shape,
            (std::vector<int64_t>{64, 192, 65523}));
  EXPECT_EQ(task_spec(42, Scale::kernelbench).outputs[0].shape,
            (std::vector<int64_t>{32, 64, 511, 511}));
  EXPECT_EQ(task_spec(43, Scale::kernelbench).outputs[0].shape,
            (std::vector<int64_t>{16, 32, 62, 62, 62}));
  EXPECT_EQ(task_spec(44, Scale::kernelbench).outputs[0].shape,
            (std::vector<int64_t>{64, 128, 65537}));
  EXPECT_EQ(task_spec(45, Scale::kernelbench).outputs[0].shape,
            (std::vector<int64_t>{16, 64, 186, 186}));
  EXPECT_EQ(task_spec(46, Scale::kernelbench).outputs[0].shape,
            (std::vector<int64_t>{16, 32, 64, 64, 128}));
}

TEST(PoolingGenerator, SourcesFollowTheKnobs) {
  const TaskSpec task = task_spec(42, Scale::kernelbench);
  const Generator& g = generator_for(42);
  const auto with = testing::generate_with;
  const Candidate base = g.generate(task, g.expert(task));
  EXPECT_TRUE(contains(base.source, "kbrl_pool_tile"));
  EXPECT_TRUE(contains(base.source, "constexpr int KH = 4, SH = 1, PH = 1, LH = 1;"));
  EXPECT_TRUE(contains(base.source, "constexpr int KD = 1, SD = 1, PD = 0, LD = 1;"));
  EXPECT_TRUE(contains(base.source, "if (v > a || v != v) a = v;"));
  EXPECT_TRUE(contains(base.source, "#define KBRL_PAD_VALUE KBRL_NEG_INF"));
  EXPECT_TRUE(contains(base.source, "__stcs("));
  EXPECT_TRUE(contains(base.source, "constexpr int kItems = 2;"));
  EXPECT_FALSE(contains(with(task, "cache_hint=none").source, "__stcs("));
  EXPECT_TRUE(contains(with(task, "items_per_thread=4").source, "constexpr int kItems = 4;"));
  EXPECT_TRUE(contains(with(task, "variant=direct").source, "pool_one("));
  EXPECT_FALSE(contains(with(task, "variant=direct").source, "__shared__"));
  EXPECT_TRUE(contains(with(task, "precision=fp16_compute").source, "__hgt("));
  EXPECT_TRUE(contains(with(task, "tail=dropped").source, "tail=dropped"));
  EXPECT_TRUE(contains(with(task, "tail=dropped,variant=direct").source, "tail=dropped"));
  // block and grid change only the launch (and the tile's shared memory).
  const Candidate other = with(task, "block=128,grid=waves");
  EXPECT_EQ(other.source, base.source);
  EXPECT_NE(other.launches, base.launches);
  EXPECT_EQ(with(task, "variant=direct,block=512").source, with(task, "variant=direct").source);
  // Both scales share the source (shapes are kernel arguments).
  EXPECT_EQ(g.generate(task_spec(42, Scale::small), g.expert(task)).source, base.source);
  // smem_tile's region: 42's tile of 512 outputs is 128 wide and 4 high; its input 7 x 131.
  EXPECT_EQ(base.launches[0].shared_bytes, 7u * 131u * 4u);
  EXPECT_EQ(base.launches[0].args.back(), (KernelArg{ArgKind::i64, 0, 0.0, 7}));
  // Average pooling: padding adds 0, the divisor is torch's, fast-math divides with __fdividef.
  const TaskSpec t46 = task_spec(46, Scale::kernelbench);
  const Candidate c46 = with(t46, "");
  EXPECT_TRUE(contains(c46.source, "#define KBRL_PAD_VALUE 0.0f"));
  EXPECT_TRUE(contains(c46.source, "return a / div;"));
  EXPECT_TRUE(contains(c46.source, "axis_size(od, KD, SD, PD, ID)"));
  EXPECT_TRUE(contains(with(t46, "fast_math=on").source, "__fdividef"));
  EXPECT_EQ(with(t46, "fast_math=on").options, std::vector<std::string>{"--use_fast_math"});
  EXPECT_TRUE(contains(with(t46, "precision=fp16_compute").source, "__hadd("));
  // 41's dilation is in the window; 44's (average pooling) is 1.
  EXPECT_TRUE(contains(with(task_spec(41, Scale::small), "").source,
                       "constexpr int KW = 8, SW = 1, PW = 4, LW = 3;"));
  EXPECT_TRUE(contains(with(task_spec(44, Scale::small), "").source,
                       "constexpr int KW = 8, SW = 1, PW = 4, LW = 1;"));
  // 45 stages one row tap at a time: a 32 x 16 tile, 16 input rows of 352.
  const Candidate c45 = with(task_spec(45, Scale::kernelbench), "");
  EXPECT_TRUE(contains(c45.source, "const int RH = TH;"));
  EXPECT_EQ(c45.launches[0].shared_bytes, 16u * 352u * 4u);
}

// Every legal configuration (each task's pairwise cover unless KBRL_EVERY_CONFIG=1) of every task
// compiles for sm_90a: configurations are grouped by (source, options) and each distinct unit
// compiled once. Shapes are kernel arguments, so the small scale's sources are the KernelBench
// scale's (checked above) and only that scale is compiled. Unsafe configurations show in the
// precision audit; safe ones show nothing reduced.
TEST(PoolingGenerator, ConfigsCompileAndUnsafeOnesAreAudited) {
  testing::expect_every_config_compiles(testing::task_specs(kPooling.tasks()), "pooling");
}

}  // namespace
}  // namespace kbrl
