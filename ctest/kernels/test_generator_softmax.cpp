// The softmax generator (tasks 23 softmax, 24 log_softmax over dim 1): coverage, space sizes,
// tokenization, the expert configuration, launch plans over the task's own tensors, and every
// legal configuration compiled by NVRTC for sm_90a (no GPU needed). Whether the kernels compute
// the right numbers is for the gpu tests. The checks every family shares are in
// generator_testing.h.
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
using testing::generate_with;

const testing::FamilySpec kSoftmax = {
    .name = "softmax",
    .space_sizes = {{23, 288}, {24, 288}},
    .arg_kinds = {ArgKind::input, ArgKind::output, ArgKind::i64},
    .round_trip_every = 23,
};

TEST(SoftmaxGenerator, Coverage) { testing::expect_coverage(kSoftmax); }

TEST(SoftmaxGenerator, SpaceSizesTokensAndKnobNames) { testing::expect_knob_spaces(kSoftmax); }

TEST(SoftmaxGenerator, ExpertIsLegalAndSafe) { testing::expect_expert_legal_and_safe(kSoftmax); }

TEST(SoftmaxGenerator, RejectsIllegalConfigs) {
  const TaskSpec task = task_spec(23, Scale::small);
  const Generator& g = generator_for(23);
  Config c = g.expert(task);
  c.set("precision", "fp16_compute");
  c.set("fast_math", "on");  // one unsafe precision knob at a time
  EXPECT_THROW(g.generate(task, c), InputError);
  c = g.expert(task);
  c.set("vec", "2");
  EXPECT_THROW(g.generate(task, c), InputError);
}

// One block-per-row launch: x, y, rows, cols.
TEST(SoftmaxGenerator, PlansUseOnlyTheTasksArguments) {
  testing::expect_plans_use_only_task_arguments(
      kSoftmax, [](const TaskSpec& task, const Config& config, const Candidate& c) {
        const int64_t rows = task.inputs[0].shape[0], cols = task.inputs[0].shape[1];
        ASSERT_EQ(c.launches.size(), 1u);
        const Launch& l = c.launches[0];
        EXPECT_EQ(l.block.x, config.integer("block"));
        EXPECT_EQ(l.block.y * l.block.z * l.grid.y * l.grid.z, 1u);
        EXPECT_LE(static_cast<int64_t>(l.grid.x), rows);
        if (config.at("grid") == "exact") {
          EXPECT_EQ(static_cast<int64_t>(l.grid.x), rows);
        }
        EXPECT_EQ(l.shared_bytes, 0u);
        ASSERT_EQ(l.args.size(), 4u);
        EXPECT_EQ(l.args[0], (KernelArg{ArgKind::input, 0}));
        EXPECT_EQ(l.args[1], (KernelArg{ArgKind::output, 0}));
        EXPECT_EQ(l.args[2], (KernelArg{ArgKind::i64, 0, 0.0, rows}));
        EXPECT_EQ(l.args[3], (KernelArg{ArgKind::i64, 0, 0.0, cols}));
      });
}

TEST(SoftmaxGenerator, SourcesFollowTheKnobs) {
  const TaskSpec task = task_spec(23, Scale::kernelbench);
  const Candidate base = generate_with(task);
  EXPECT_TRUE(contains(base.source, "float4"));
  EXPECT_TRUE(contains(base.source, "__ldcs("));
  EXPECT_TRUE(contains(base.source, "__stcs("));
  EXPECT_TRUE(contains(base.source, "k_div(k_exp("));
  EXPECT_TRUE(contains(base.source, "return expf(d);"));
  EXPECT_TRUE(contains(base.source, "kbrl_add(st, v);"));
  EXPECT_FALSE(contains(base.source, "__shared__ __align__(16) float cache"));
  const auto with = generate_with;
  EXPECT_TRUE(contains(with(task, "fast_math=on").source, "__expf"));
  EXPECT_EQ(with(task, "fast_math=on").options, std::vector<std::string>{"--use_fast_math"});
  EXPECT_TRUE(contains(with(task, "precision=fp16_compute").source, "hexp("));
  EXPECT_FALSE(contains(with(task, "vec=1").source, "float4"));
  EXPECT_FALSE(contains(with(task, "cache_hint=none").source, "__ldcs("));
  EXPECT_TRUE(contains(with(task, "variant=three_pass").source, "MaxOp{}"));
  EXPECT_TRUE(contains(with(task, "variant=block_per_row_cached").source,
                       "constexpr long long kCache = 8192;"));
  EXPECT_TRUE(contains(with(task_spec(23, Scale::small), "variant=block_per_row_cached").source,
                       "constexpr long long kCache = 1000;"));
  // block and grid change only the launch.
  const Candidate other = with(task, "block=128,grid=waves");
  EXPECT_EQ(other.source, base.source);
  EXPECT_NE(other.launches, base.launches);
  // log_softmax: x - max - log(sum).
  const TaskSpec t24 = task_spec(24, Scale::kernelbench);
  const Candidate c24 = with(t24, "");
  EXPECT_TRUE(contains(c24.source, "const float logsum = k_log(sum);"));
  EXPECT_TRUE(contains(c24.source, "q.x - m - logsum"));
  EXPECT_TRUE(contains(with(t24, "fast_math=on").source, "__logf"));
}

// Every legal configuration (each task's pairwise cover unless KBRL_EVERY_CONFIG=1) of both tasks,
// at both scales, compiles for sm_90a: configurations are grouped by (source, options) and each
// distinct unit compiled once. Unsafe configurations show in the precision audit; safe ones show
// nothing reduced.
TEST(SoftmaxGenerator, ConfigsCompileAndUnsafeOnesAreAudited) {
  testing::expect_every_config_compiles(
      testing::task_specs(kSoftmax.tasks(), {Scale::kernelbench, Scale::small}), "softmax");
}

}  // namespace
}  // namespace kbrl
