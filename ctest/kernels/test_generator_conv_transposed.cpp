// The conv_transposed generator (ConvTranspose1d/2d/3d tasks 57, 58, 61, 64, 65, 68-75 but 76 is
// not one, 77, 78, 79, 81): coverage, space sizes, tokenization, the expert configuration, launch
// plans over the task's own tensors, sources that follow the knobs, and every legal configuration
// compiled by NVRTC for sm_90a (no GPU needed). Numerical correctness is checked on a GPU:
// ctest/kernels/test_generator_gpu.cpp runs every covered task through the evaluator; nothing here
// checks numbers on the CPU.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "generator_testing.h"

#include <kbrl/error.h>
#include <kernels/generator.h>
#include <reference/task_registry.h>

namespace kbrl {
namespace {

const std::vector<int> kConvTTasks = {57, 58, 61, 64, 65, 68, 69, 70, 71,
                                      72, 73, 74, 75, 77, 78, 79, 81};

using testing::contains;

const testing::FamilySpec kConvT = {
    .name = "conv_transposed",
    .space_sizes = testing::sizes_of(kConvTTasks, [](int id) { return id == 72 ? 300 : 396; }),
    .foreign_tasks = {19, 76},  // 76 is a forward conv between the transposed ones
    .arg_kinds = {ArgKind::input, ArgKind::parameter, ArgKind::output, ArgKind::i32, ArgKind::i64},
    .round_trip_every = 97,
};

TEST(ConvTransposedGenerator, Coverage) { testing::expect_coverage(kConvT); }

TEST(ConvTransposedGenerator, SpaceSizesTokensAndKnobNames) {
  testing::expect_knob_spaces(kConvT);
}

TEST(ConvTransposedGenerator, ExpertIsLegalAndSafe) {
  testing::expect_expert_legal_and_safe(
      kConvT, [](const TaskSpec& task, const Config& expert, const Candidate&) {
        EXPECT_EQ(expert.at("variant"), "tiled_smem") << task.id;
      });
}

TEST(ConvTransposedGenerator, RejectsIllegalConfigs) {
  const TaskSpec task = task_spec(57, Scale::small);
  const Generator& g = generator_for(57);
  Config c = g.expert(task);
  c.set("variant", "direct");  // direct needs items_per_thread=1, tile_n=1
  EXPECT_THROW(g.generate(task, c), InputError);
  c = g.expert(task);
  c.set("tile_n", "32");  // not a value
  EXPECT_THROW(g.generate(task, c), InputError);
  c = g.expert(task);
  c.set("block", "512");
  EXPECT_THROW(g.generate(task, c), InputError);
  // Task 72 has 8 output channels per group: tile_n=16 is illegal there.
  const TaskSpec t72 = task_spec(72, Scale::small);
  c = g.expert(t72);
  EXPECT_EQ(c.at("tile_n"), "8");
  c.set("tile_n", "16");
  EXPECT_THROW(g.generate(t72, c), InputError);
}

// One launch: direct (a thread per output) or tiled (grid.y over the batch); arguments x, the
// weight (and bias), y, then only constants, the last one whether to stream.
TEST(ConvTransposedGenerator, PlansUseOnlyTheTasksArguments) {
  testing::expect_plans_use_only_task_arguments(kConvT, [](const TaskSpec& task,
                                                            const Config& config,
                                                            const Candidate& c) {
    const bool bias = task.parameters.size() == 2;
    ASSERT_EQ(c.launches.size(), 1u);
    const Launch& l = c.launches[0];
    EXPECT_EQ(l.block.x, config.integer("block"));
    EXPECT_EQ(l.block.y * l.block.z * l.grid.z, 1u);
    EXPECT_TRUE(c.options.empty());
    const bool direct = config.at("variant") == "direct";
    EXPECT_EQ(l.kernel, direct ? "kbrl_convt_direct" : "kbrl_convt_tiled");
    if (direct) {
      EXPECT_EQ(l.grid.y, 1u);
      EXPECT_GE(static_cast<int64_t>(l.grid.x) * l.block.x, task.outputs[0].numel());
    } else {
      EXPECT_EQ(static_cast<int64_t>(l.grid.y), task.inputs[0].shape[0]);
    }
    EXPECT_LE(l.shared_bytes, 48u * 1024u);
    EXPECT_EQ(l.shared_bytes > 0, config.at("variant") == "tiled_smem");
    // x, the weight (and bias), y; then only constants.
    size_t a = 0;
    ASSERT_GE(l.args.size(), 4u);
    EXPECT_EQ(l.args[a++], (KernelArg{ArgKind::input, 0}));
    EXPECT_EQ(l.args[a++], (KernelArg{ArgKind::parameter, 0}));
    if (bias) {
      EXPECT_EQ(l.args[a++], (KernelArg{ArgKind::parameter, 1}));
    }
    EXPECT_EQ(l.args[a++], (KernelArg{ArgKind::output, 0}));
    for (; a < l.args.size(); ++a)
      EXPECT_TRUE(l.args[a].kind == ArgKind::i64 || l.args[a].kind == ArgKind::i32) << config.str();
    EXPECT_EQ(l.args.back(),
              (KernelArg{ArgKind::i32, 0, 0.0, config.at("cache_hint") == "streaming"}));
  });
}

TEST(ConvTransposedGenerator, SourcesFollowTheKnobs) {
  const TaskSpec task = task_spec(72, Scale::kernelbench);  // strided, padded, grouped
  const Candidate base = testing::generate_with(task);
  EXPECT_TRUE(contains(base.source, "extern \"C\" __global__ void kbrl_convt_tiled("));
  EXPECT_TRUE(contains(base.source, "#define TO 4"));
  EXPECT_TRUE(contains(base.source, "#define TC 8"));
  EXPECT_TRUE(contains(base.source, "#define KBRL_SMEM_WEIGHTS 1"));
  EXPECT_TRUE(contains(base.source, "fmaf(a, b, c)"));
  EXPECT_FALSE(contains(base.source, "__half"));
  const auto with = testing::generate_with;
  EXPECT_TRUE(contains(with(task, "precision=fp16_compute").source, "__hmul("));
  EXPECT_TRUE(contains(with(task, "variant=tiled_global").source, "#define KBRL_SMEM_WEIGHTS 0"));
  EXPECT_EQ(with(task, "variant=tiled_global").launches[0].shared_bytes, 0u);
  EXPECT_TRUE(contains(with(task, "items_per_thread=8,tile_n=4").source, "#define TO 8"));
  const Candidate direct = with(task, "variant=direct,items_per_thread=1,tile_n=1");
  EXPECT_TRUE(contains(direct.source, "kbrl_convt_direct("));
  EXPECT_FALSE(contains(direct.source, "kbrl_convt_tiled("));
  // block and cache_hint change only the launch.
  const Candidate other = with(task, "block=256,cache_hint=streaming");
  EXPECT_EQ(other.source, base.source);
  EXPECT_NE(other.launches, base.launches);
  // Shapes are arguments: tasks and scales with the same knobs share the source.
  const TaskSpec t73 = task_spec(73, Scale::small);
  EXPECT_EQ(with(t73, "tile_n=8").source, base.source);
  // The geometry arguments: groups, C_in/groups, C_out/groups, channel tiles, then (d, h, w) of
  // input, output, kernel, stride, padding, dilation.
  const auto& args = base.launches[0].args;
  std::vector<int64_t> v;
  for (size_t i = 2; i < args.size(); ++i)
    if (args[i].kind == ArgKind::i64) v.push_back(args[i].ivalue);
  const std::vector<int64_t> expect = {4, 8, 8, 1, 12, 24, 48, 24, 48, 96, 3, 5, 7,
                                       2, 2, 2, 1, 2, 3,  1,  1,  1};
  ASSERT_GE(v.size(), expect.size());
  EXPECT_EQ(std::vector<int64_t>(v.begin(), v.begin() + expect.size()), expect);
  // Task 73's groups=4 never reaches the module: one group, stride 2, padding 1.
  const auto a73 = with(task_spec(73, Scale::kernelbench), "").launches[0].args;
  EXPECT_EQ(a73[3].ivalue, 1);  // groups
  // 1-d task 79 runs as 3-d with unit leading dims: kernel (1, 1, 3), stride (1, 1, 2).
  const auto a79 = with(task_spec(79, Scale::kernelbench), "").launches[0].args;
  EXPECT_EQ(a79[13].ivalue, 1);
  EXPECT_EQ(a79[15].ivalue, 3);
  EXPECT_EQ(a79[18].ivalue, 2);
}

// Every legal configuration (each task's pairwise cover unless KBRL_EVERY_CONFIG=1) of every task
// compiles for sm_90a, grouped by (source, options); the shapes are kernel arguments, so the small
// scale yields the same units (and is left out). fp16_compute shows in the precision audit; fp32
// shows nothing reduced.
TEST(ConvTransposedGenerator, ConfigsCompileAndUnsafeOnesAreAudited) {
  testing::expect_every_config_compiles(testing::task_specs(kConvTTasks), "conv_transposed");
}

}  // namespace
}  // namespace kbrl
