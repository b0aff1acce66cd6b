// The scan generator (tasks 89 cumsum, 90 cumprod, 91 reverse cumsum, 92 exclusive cumsum, 93 masked
// cumsum, along dim 1): coverage, space sizes, tokenization, the expert configuration, launch plans
// over the task's own tensors, sources that follow the knobs, and every legal configuration
// compiled by NVRTC for sm_90a (no GPU needed). Numerical correctness is checked on a GPU:
// ctest/kernels/test_generator_gpu.cpp runs every covered task through the evaluator; this test
// does not check numbers on the CPU.
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

const testing::FamilySpec kScan = {
    .name = "scan",
    .space_sizes = testing::sizes_of({89, 90, 91, 92, 93}, [](int) { return 288; }),
    .arg_kinds = {ArgKind::input, ArgKind::output, ArgKind::i64},
};

TEST(ScanGenerator, Coverage) { testing::expect_coverage(kScan); }

TEST(ScanGenerator, SpaceSizesTokensAndKnobNames) { testing::expect_knob_spaces(kScan); }

TEST(ScanGenerator, ExpertIsLegalAndSafe) { testing::expect_expert_legal_and_safe(kScan); }

TEST(ScanGenerator, RejectsIllegalConfigs) {
  const TaskSpec task = task_spec(89, Scale::small);
  const Generator& g = generator_for(89);
  Config c = g.expert(task);
  c.set("precision", "fp16_compute");
  c.set("tail", "dropped");  // one unsafe knob at a time
  EXPECT_THROW(g.generate(task, c), InputError);
  c = g.expert(task);
  c.set("vec", "2");
  EXPECT_THROW(g.generate(task, c), InputError);
  c = g.expert(task);
  c.set("fast_math", "on");  // no such knob
  EXPECT_THROW(g.generate(task, c), InputError);
}

// One launch, a block or a warp per row: x (and task 93's mask), y, rows, cols.
TEST(ScanGenerator, PlansUseOnlyTheTasksArguments) {
  testing::expect_plans_use_only_task_arguments(
      kScan, [](const TaskSpec& task, const Config& config, const Candidate& c) {
        const int64_t rows = task.inputs[0].shape[0], cols = task.inputs[0].shape[1];
        ASSERT_EQ(c.launches.size(), 1u);
        const Launch& l = c.launches[0];
        EXPECT_EQ(l.kernel, "kbrl_scan");
        EXPECT_EQ(l.block.x, config.integer("block"));
        EXPECT_EQ(l.block.y * l.block.z * l.grid.y * l.grid.z, 1u);
        const int64_t rows_per_block =
            config.at("variant") == "block_per_row" ? 1 : config.integer("block") / 32;
        EXPECT_EQ(static_cast<int64_t>(l.grid.x), (rows + rows_per_block - 1) / rows_per_block);
        EXPECT_EQ(l.shared_bytes, 0u);
        EXPECT_TRUE(c.options.empty());
        size_t a = 0;
        ASSERT_EQ(l.args.size(), task.id == 93 ? 5u : 4u);
        EXPECT_EQ(l.args[a++], (KernelArg{ArgKind::input, 0}));
        if (task.id == 93) {
          EXPECT_EQ(l.args[a++], (KernelArg{ArgKind::input, 1}));
        }
        EXPECT_EQ(l.args[a++], (KernelArg{ArgKind::output, 0}));
        EXPECT_EQ(l.args[a++], (KernelArg{ArgKind::i64, 0, 0.0, rows}));
        EXPECT_EQ(l.args[a++], (KernelArg{ArgKind::i64, 0, 0.0, cols}));
      });
}

TEST(ScanGenerator, SourcesFollowTheKnobs) {
  const TaskSpec task = task_spec(89, Scale::kernelbench);
  const Generator& g = generator_for(89);
  const auto with = testing::generate_with;
  const Candidate base = g.generate(task, g.expert(task));
  EXPECT_TRUE(contains(base.source, "__shared__ T totals[2][32];"));
  EXPECT_TRUE(contains(base.source, "constexpr int kItems = 8;"));
  EXPECT_TRUE(contains(base.source, "constexpr bool kVec4 = true;"));
  EXPECT_TRUE(contains(base.source, "constexpr bool kReverse = false;"));
  EXPECT_TRUE(contains(base.source, "constexpr bool kExclusive = false;"));
  EXPECT_TRUE(contains(base.source, "constexpr bool kSafeTail = true;"));
  EXPECT_TRUE(contains(base.source, "return a + b;"));
  EXPECT_TRUE(contains(base.source, "__ldcs("));
  EXPECT_TRUE(contains(base.source, "__stcs("));
  EXPECT_FALSE(contains(with(task, "cache_hint=none").source, "__ldcs("));
  EXPECT_TRUE(contains(with(task, "vec=1").source, "constexpr bool kVec4 = false;"));
  EXPECT_TRUE(contains(with(task, "items_per_thread=16").source, "constexpr int kItems = 16;"));
  EXPECT_TRUE(contains(with(task, "tail=dropped").source, "constexpr bool kSafeTail = false;"));
  EXPECT_TRUE(contains(with(task, "precision=fp16_compute").source, "__hadd("));
  const Candidate warp = with(task, "variant=warp_per_row");
  EXPECT_FALSE(contains(warp.source, "__shared__"));
  EXPECT_FALSE(contains(warp.source, "__syncthreads"));
  // block changes only the launch; both scales share the source.
  const Candidate other = with(task, "block=1024");
  EXPECT_EQ(other.source, base.source);
  EXPECT_NE(other.launches, base.launches);
  EXPECT_EQ(g.generate(task_spec(89, Scale::small), g.expert(task)).source, base.source);
  // The tasks' math.
  EXPECT_TRUE(contains(with(task_spec(90, Scale::small), "").source, "return a * b;"));
  EXPECT_TRUE(contains(with(task_spec(90, Scale::small), "precision=fp16_compute").source,
                       "__hmul("));
  EXPECT_TRUE(contains(with(task_spec(91, Scale::small), "").source,
                       "constexpr bool kReverse = true;"));
  EXPECT_TRUE(contains(with(task_spec(92, Scale::small), "").source,
                       "constexpr bool kExclusive = true;"));
  const Candidate c93 = with(task_spec(93, Scale::small), "");
  EXPECT_TRUE(contains(c93.source, "const unsigned char* __restrict__ mask"));
  EXPECT_TRUE(contains(c93.source, "ld_x(xr + i) * (float)mr[i]"));
}

// Every legal configuration (each task's pairwise cover unless KBRL_EVERY_CONFIG=1) of every task
// compiles for sm_90a: configurations are grouped by (source, options) and each distinct unit
// compiled once. Shapes are kernel arguments, so the small scale's sources are the KernelBench
// scale's (checked above) and only that scale is compiled. Unsafe configurations show in the
// precision audit; safe ones show nothing reduced.
TEST(ScanGenerator, ConfigsCompileAndUnsafeOnesAreAudited) {
  testing::expect_every_config_compiles(testing::task_specs(kScan.tasks()), "scan");
}

}  // namespace
}  // namespace kbrl
