// The attention generator (task 97, scaled dot-product attention): coverage, space size, knob
// names, tokenization, the expert configuration, the three-launch plan over Q, K, V, the output and
// the declared score scratch, candidate files, sources following the knobs, and every legal
// configuration compiled by NVRTC for sm_90a (no GPU needed). Numerical correctness is checked on
// a GPU, not here: ctest/kernels/test_generator_gpu.cpp runs the expert and two more safe
// configurations of every covered task through the evaluator.
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "generator_testing.h"

#include <kbrl/error.h>
#include <kernels/generator.h>
#include <reference/task_registry.h>

namespace kbrl {
namespace {

constexpr int kTask = 97;

using testing::contains;

const testing::FamilySpec kAttention = {
    .name = "attention",
    .space_sizes = {{kTask, 96}},
    .foreign_tasks = {1},
    .arg_kinds = {ArgKind::input, ArgKind::output, ArgKind::scratch, ArgKind::f32, ArgKind::i32,
                  ArgKind::i64},
    .round_trip_every = 7,
};

Candidate with(const TaskSpec& t, const char* overrides) {
  return testing::generate_with(t, overrides);
}

TEST(AttentionGenerator, Coverage) { testing::expect_coverage(kAttention); }

TEST(AttentionGenerator, SpaceSizeTokensAndKnobNames) { testing::expect_knob_spaces(kAttention); }

TEST(AttentionGenerator, ExpertIsLegalAndSafe) {
  testing::expect_expert_legal_and_safe(kAttention);
}

TEST(AttentionGenerator, RejectsIllegalConfigs) {
  const TaskSpec task = task_spec(kTask, Scale::small);
  const Generator& g = generator_for(kTask);
  Config c = g.expert(task);
  c.set("precision", "fp16_compute");
  c.set("fast_math", "on");
  EXPECT_THROW(g.generate(task, c), InputError);
  c = g.expert(task);
  c.set("tile_m", "32");
  EXPECT_THROW(g.generate(task, c), InputError);
}

// Three launches: scores = Q K^T * scale into the declared scratch, a softmax over each score
// row in place, then the scores times V into the output.
TEST(AttentionGenerator, PlansUseOnlyTheTasksArguments) {
  testing::expect_plans_use_only_task_arguments(
      kAttention, [](const TaskSpec& task, const Config& config, const Candidate& c) {
        const auto& shape = task.inputs[0].shape;
        const int64_t bh = shape[0] * shape[1], L = shape[2], D = shape[3];
        ASSERT_EQ(c.scratch.size(), 1u);
        EXPECT_EQ(c.scratch[0].bytes, bh * L * L * 4);
        ASSERT_EQ(c.launches.size(), 3u);
        const int64_t bm = config.integer("tile_m"), bn = config.integer("tile_n");
        const Launch& s = c.launches[0];
        const Launch& p = c.launches[1];
        const Launch& o = c.launches[2];
        EXPECT_EQ(s.kernel, "kbrl_attn_scores");
        EXPECT_EQ(o.kernel, "kbrl_attn_output");
        EXPECT_EQ(p.kernel, config.at("variant") == "warp_per_row" ? "kbrl_attn_softmax_warp"
                                                                    : "kbrl_attn_softmax_block");
        for (const Launch* l : {&s, &o}) {
          EXPECT_EQ(l->block.x, bm * bn / 64);
          EXPECT_LE(l->block.x, 1024u);
          EXPECT_EQ(l->grid.y, static_cast<uint32_t>((L + bm - 1) / bm));
          EXPECT_EQ(l->grid.z, static_cast<uint32_t>(bh));
          EXPECT_EQ(l->shared_bytes, 0u);
        }
        EXPECT_EQ(s.grid.x, static_cast<uint32_t>((L + bn - 1) / bn));
        EXPECT_EQ(o.grid.x, static_cast<uint32_t>((D + bn - 1) / bn));
        EXPECT_EQ(s.args[0], (KernelArg{ArgKind::input, 0}));
        EXPECT_EQ(s.args[1], (KernelArg{ArgKind::input, 1}));
        EXPECT_EQ(s.args[2], (KernelArg{ArgKind::scratch, 0}));
        const double scale = 1.0 / std::sqrt(static_cast<double>(D));
        EXPECT_EQ(s.args[6], (KernelArg{ArgKind::f32, 0, scale, 0}));
        EXPECT_EQ(p.args[0], (KernelArg{ArgKind::scratch, 0}));
        EXPECT_EQ(p.args[1], (KernelArg{ArgKind::i64, 0, 0.0, bh * L}));
        EXPECT_EQ(o.args[0], (KernelArg{ArgKind::scratch, 0}));
        EXPECT_EQ(o.args[1], (KernelArg{ArgKind::input, 2}));
        EXPECT_EQ(o.args[2], (KernelArg{ArgKind::output, 0}));
        // Every score row gets a warp (or a block).
        const int64_t rows_covered = config.at("variant") == "warp_per_row"
                                         ? static_cast<int64_t>(p.grid.x) * p.block.x / 32
                                         : static_cast<int64_t>(p.grid.x);
        EXPECT_GE(rows_covered, bh * L);
      });
}

TEST(AttentionGenerator, SourcesFollowTheKnobs) {
  const TaskSpec task = task_spec(kTask, Scale::kernelbench);
  const Candidate base = with(task, "");
  EXPECT_TRUE(contains(base.source, "constexpr int kBM = 128;"));
  EXPECT_TRUE(contains(base.source, "constexpr int kBN = 128;"));
  EXPECT_TRUE(contains(base.source, "constexpr int kBK = 8;"));
  EXPECT_TRUE(contains(base.source, "#define KBRL_STAGES 2"));
  EXPECT_TRUE(contains(base.source, "#define KBRL_HALF 0"));
  EXPECT_FALSE(contains(base.source, "cuda_fp16.h"));
  EXPECT_TRUE(contains(with(task, "tile_m=64").source, "constexpr int kBM = 64;"));
  EXPECT_TRUE(contains(with(task, "tile_k=16").source, "constexpr int kBK = 16;"));
  EXPECT_TRUE(contains(with(task, "stages=1").source, "#define KBRL_STAGES 1"));
  EXPECT_TRUE(contains(with(task, "precision=fp16_compute").source, "#include <cuda_fp16.h>"));
  EXPECT_TRUE(contains(with(task, "fast_math=on").source, "#define KBRL_FAST 1"));
  EXPECT_EQ(with(task, "fast_math=on").options, std::vector<std::string>{"--use_fast_math"});
  // The softmax variant changes only the launch; shapes are arguments.
  const Candidate block = with(task, "variant=block_per_row");
  EXPECT_EQ(block.source, base.source);
  EXPECT_NE(block.launches, base.launches);
  EXPECT_EQ(with(task_spec(kTask, Scale::small), "").source, base.source);
}

// Every legal configuration (each task's pairwise cover unless KBRL_EVERY_CONFIG=1) compiles for
// sm_90a; unsafe ones show in the precision audit, safe ones show nothing reduced. Sources do not
// depend on the scale (checked above).
TEST(AttentionGenerator, ConfigsCompileAndUnsafeOnesAreAudited) {
  testing::expect_every_config_compiles(testing::task_specs({kTask}), "attention");
}

}  // namespace
}  // namespace kbrl
