// The reduction generator (tasks 47, 48, 49, 51, 52, 53): coverage, space sizes, expert configs,
// tokenization, launch plans over the task's own tensors and declared scratch, the candidate-file
// form, and every distinct (source, options) of every legal configuration compiled by NVRTC for
// sm_90a (no GPU needed). Numerical correctness is for the gpu tests. The checks every family
// shares are in generator_testing.h.
#include <set>
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

const std::set<int> kSumTasks = {47, 48};
const std::set<int> kArgTasks = {51, 52};

const testing::FamilySpec kReduction = {
    .name = "reduction",
    .space_sizes = testing::sizes_of({47, 48, 49, 51, 52, 53},
                                     [](int id) { return kSumTasks.count(id) ? 756 : 378; }),
    .extra_knobs = {"accumulators", "cols_per_block", "row_splits"},
    .arg_kinds = {ArgKind::input, ArgKind::output, ArgKind::scratch, ArgKind::i64, ArgKind::f32},
    .round_trip_every = 17,
};

TEST(ReductionGenerator, Coverage) { testing::expect_coverage(kReduction); }

TEST(ReductionGenerator, SpaceSizesAndTokens) { testing::expect_knob_spaces(kReduction); }

TEST(ReductionGenerator, ExpertIsLegalAndSafe) {
  testing::expect_expert_legal_and_safe(
      kReduction, [](const TaskSpec& task, const Config&, const Candidate& c) {
        if (task.scale != Scale::kernelbench) return;
        EXPECT_TRUE(c.scratch.empty());
        ASSERT_EQ(c.launches.size(), 1u);
        EXPECT_EQ(c.launches[0].grid.x, 128u);  // cdiv(4095, 32)
        EXPECT_EQ(c.launches[0].grid.y, 128u);  // B
        EXPECT_EQ(c.launches[0].block.x * c.launches[0].block.y, 256u);
      });
}

TEST(ReductionGenerator, RejectsIllegalConfigs) {
  const TaskSpec task = task_spec(47, Scale::small);
  const Generator& g = generator_for(47);
  Config c = g.expert(task);
  c.set("cols_per_block", "block");  // only for column_per_thread
  EXPECT_THROW(g.generate(task, c), InputError);
  c = g.expert(task);
  c.set("row_splits", "4");  // only for two_kernel
  EXPECT_THROW(g.generate(task, c), InputError);
  c = g.expert(task);
  c.set("unroll", "1");  // accumulators 4 > unroll 1
  EXPECT_THROW(g.generate(task, c), InputError);
  c = g.expert(task);
  c.set("tail", "dropped");  // sum has no tail knob
  EXPECT_THROW(g.generate(task, c), InputError);
  const TaskSpec t51 = task_spec(51, Scale::small);
  c = generator_for(51).expert(t51);
  c.set("precision", "fp16_compute");  // argmax has no precision knob
  EXPECT_THROW(generator_for(51).generate(t51, c), InputError);
}

// Plans name only the task's input x, output y and the scratch the candidate declares (one
// partial buffer per two_kernel plan, two for argmax/argmin), with positive constants.
TEST(ReductionGenerator, PlansUseOnlyTheTasksArguments) {
  testing::expect_plans_use_only_task_arguments(
      kReduction, [](const TaskSpec& task, const Config& config, const Candidate& c) {
        const int64_t B = task.inputs[0].shape[0], K = task.inputs[0].shape[2];
        EXPECT_EQ(task.inputs.size(), 1u);  // x is input 0
        EXPECT_EQ(task.outputs.size(), 1u);
        const bool two = config.at("variant") == "two_kernel";
        ASSERT_EQ(c.launches.size(), two ? 2u : 1u) << config.str();
        EXPECT_EQ(c.scratch.size(), two ? (kArgTasks.count(task.id) ? 2u : 1u) : 0u);
        for (const ScratchBuffer& s : c.scratch) {
          EXPECT_EQ(s.bytes, B * config.integer("row_splits") * K * 4);
        }
        const Launch& main = c.launches[0];
        EXPECT_EQ(main.block.x * main.block.y, config.integer("block")) << config.str();
        EXPECT_EQ(static_cast<int64_t>(main.grid.x) * main.block.x >= K, true);
        for (const Launch& l : c.launches) {
          EXPECT_LE(l.shared_bytes, 48u * 1024u);
          for (const KernelArg& a : l.args) {
            if (a.kind == ArgKind::i64) {
              EXPECT_GT(a.ivalue, 0);
            } else if (a.kind == ArgKind::f32) {
              EXPECT_GT(a.value, 0.0);
            }
          }
        }
        EXPECT_TRUE(c.options.empty());
      });
}

TEST(ReductionGenerator, SourcesFollowTheKnobs) {
  const TaskSpec task = task_spec(48, Scale::kernelbench);
  const Candidate base = generate_with(task);
  EXPECT_TRUE(contains(base.source, "__ldcs("));
  EXPECT_TRUE(contains(base.source, "typedef float Acc;"));
  EXPECT_TRUE(contains(base.source, "constexpr int kAcc = 4;"));
  // Mean is the sum times 1/R.
  EXPECT_EQ(base.launches[0].args.back(), (KernelArg{ArgKind::f32, 0, 1.0 / 4096, 0}));
  const Candidate sum = generate_with(task_spec(47, Scale::kernelbench));
  EXPECT_EQ(sum.source, base.source);
  EXPECT_EQ(sum.launches[0].args.back(), (KernelArg{ArgKind::f32, 0, 1.0, 0}));
  auto with = [&](const char* overrides) { return generate_with(task, overrides); };
  EXPECT_TRUE(contains(with("precision=fp16_compute").source, "typedef __half Acc;"));
  EXPECT_TRUE(contains(with("cache_hint=ldg").source, "__ldg("));
  EXPECT_EQ(with("block=512,cols_per_block=64").source, base.source);
  const Candidate two = with("variant=two_kernel,row_splits=16");
  EXPECT_TRUE(contains(two.source, "kbrl_reduce_combine"));
  EXPECT_EQ(two.launches[0].grid.y, 16u);
  const TaskSpec t51 = task_spec(51, Scale::kernelbench);
  const Candidate am = generate_with(t51);
  EXPECT_TRUE(contains(am.source, "long long* __restrict__ y"));
  EXPECT_TRUE(contains(am.source, "k_better"));
  EXPECT_TRUE(contains(generate_with(t51, "tail=dropped").source, "tail=dropped (unsafe)"));
}

// Every distinct (source, options) of every legal configuration of every task (both scales'
// sources are the same; they are added anyway) compiles for sm_90a; fp16_compute shows in the
// precision audit and fp32 configurations show nothing.
TEST(ReductionGenerator, ConfigsCompileAndUnsafeOnesAreAudited) {
  testing::expect_every_config_compiles(
      testing::task_specs(kReduction.tasks(), {Scale::kernelbench, Scale::small}), "reduction");
}

}  // namespace
}  // namespace kbrl
