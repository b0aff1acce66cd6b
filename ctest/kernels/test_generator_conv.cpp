// The conv generator (standard Conv1d/2d/3d tasks 50, 54-56, 59, 60, 62, 63, 66, 67, 76, 80, 87;
// depthwise 82-85; depthwise-separable 86): coverage, space sizes, tokenization, the expert
// configuration, launch plans over the task's own tensors and declared scratch, sources that follow
// the knobs, and every legal configuration compiled by NVRTC for sm_90a (no GPU needed). Numerical
// correctness is checked on a GPU by ctest/kernels/test_generator_gpu.cpp, which covers every
// covered task automatically, not on CPU.
#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "generator_testing.h"

#include <kbrl/error.h>
#include <kernels/generator.h>
#include <reference/task_registry.h>

namespace kbrl {
namespace {

const std::vector<int> kStandard = {50, 54, 55, 56, 59, 60, 62, 63, 66, 67, 76, 80, 87};
const std::vector<int> kDepthwise = {82, 83, 84, 85};
constexpr int kSeparable = 86;

std::vector<int> all_tasks() {
  std::vector<int> ids = kStandard;
  ids.insert(ids.end(), kDepthwise.begin(), kDepthwise.end());
  ids.push_back(kSeparable);
  std::sort(ids.begin(), ids.end());
  return ids;
}

bool is_depthwise(int id) {
  return std::find(kDepthwise.begin(), kDepthwise.end(), id) != kDepthwise.end();
}

int64_t space_size(int id) { return is_depthwise(id) ? 108 : id == kSeparable ? 96 : 176; }

using testing::contains;

const testing::FamilySpec kConv = {
    .name = "conv",
    .space_sizes = testing::sizes_of(all_tasks(), space_size),
    .extra_knobs = {"rows_per_thread"},
    .foreign_tasks = {19, 57},  // 57: transposed convolutions belong to another family
    .arg_kinds = {ArgKind::input, ArgKind::output, ArgKind::parameter, ArgKind::scratch,
                  ArgKind::i32, ArgKind::i64},
    .round_trip_every = 97,
};

TEST(ConvGenerator, Coverage) { testing::expect_coverage(kConv); }

TEST(ConvGenerator, SpaceSizesTokensAndKnobNames) { testing::expect_knob_spaces(kConv); }

// The standard and separable experts use a GEMM-tiled variant, not the direct one.
TEST(ConvGenerator, ExpertIsLegalAndSafe) {
  testing::expect_expert_legal_and_safe(
      kConv, [](const TaskSpec& task, const Config& expert, const Candidate&) {
        if (!is_depthwise(task.id)) {
          EXPECT_NE(expert.at("variant"), "direct") << task.id;
        }
      });
}

TEST(ConvGenerator, RejectsIllegalConfigs) {
  const TaskSpec task = task_spec(55, Scale::small);
  const Generator& g = generator_for(55);
  Config c = g.expert(task);
  c.set("precision", "tf32");  // tensor cores need items_per_thread=32
  EXPECT_THROW(g.generate(task, c), InputError);
  c.set("items_per_thread", "32");
  EXPECT_THROW(g.generate(task, c), InputError);  // and tile_k=16
  c.set("tile_k", "16");
  EXPECT_NO_THROW(g.generate(task, c));
  c.set("tail", "dropped");  // one unsafe knob at a time
  EXPECT_THROW(g.generate(task, c), InputError);
  c = g.expert(task);
  c.set("items_per_thread", "8");  // 8 outputs per thread only for the direct variant
  EXPECT_THROW(g.generate(task, c), InputError);
  c = g.expert(task);
  c.set("tile_n", "32");
  c.set("items_per_thread", "64");
  c.set("tile_m", "64");  // 32 threads
  EXPECT_THROW(g.generate(task, c), InputError);
  c = g.expert(task);
  c.set("stages", "1");  // one stage only with tile_k=16
  EXPECT_THROW(g.generate(task, c), InputError);
  c = g.expert(task);
  c.set("variant", "direct");  // direct with GEMM tile knobs
  EXPECT_THROW(g.generate(task, c), InputError);
  c = g.expert(task);
  c.set("block", "256");
  EXPECT_THROW(g.generate(task, c), InputError);
  const TaskSpec t82 = task_spec(82, Scale::small);
  Config d = generator_for(82).expert(t82);
  d.set("precision", "fp16_compute");
  d.set("tail", "dropped");
  EXPECT_THROW(generator_for(82).generate(t82, d), InputError);
  d = generator_for(82).expert(t82);
  d.set("rows_per_thread", "3");
  EXPECT_THROW(generator_for(82).generate(t82, d), InputError);
  const TaskSpec t86 = task_spec(86, Scale::small);
  Config s = generator_for(86).expert(t86);
  s.set("variant", "implicit_gemm");
  EXPECT_THROW(generator_for(86).generate(t86, s), InputError);
}

// One-dimensional launches of whole warps without dynamic shared memory, each kernel defined in the
// source; x is input 0. Depthwise is one launch of `block` threads; the others prepare (copy the
// bias or run the depthwise part) then write y, covering every output tile unless tail=dropped.
TEST(ConvGenerator, PlansUseOnlyTheTasksArguments) {
  testing::expect_plans_use_only_task_arguments(kConv, [](const TaskSpec& task,
                                                           const Config& config,
                                                           const Candidate& c) {
    const int id = task.id;
    EXPECT_EQ(task.inputs.size(), 1u);
    EXPECT_EQ(task.outputs.size(), 1u);
    EXPECT_TRUE(c.options.empty());
    size_t expected_launches = is_depthwise(id) ? 1 : 2;
    if (id == kSeparable && config.at("variant") == "two_pass") expected_launches = 3;
    EXPECT_EQ(c.launches.size(), expected_launches) << config.str();
    for (const Launch& l : c.launches) {
      EXPECT_TRUE(contains(c.source, "void " + l.kernel + "(") ||
                  contains(c.source, ") " + l.kernel + "("))
          << l.kernel;
      EXPECT_EQ(l.grid.y * l.grid.z * l.block.y * l.block.z, 1u);
      EXPECT_EQ(l.shared_bytes, 0u);
    }
    // The last launch writes y; its grid covers every output tile unless tail=dropped.
    const Launch& last = c.launches.back();
    EXPECT_EQ(last.args[is_depthwise(id) ? 2 : 3], (KernelArg{ArgKind::output, 0}));
    if (!is_depthwise(id) && config.at("tail") == "safe") {
      const auto& y = task.outputs[0].shape;
      int64_t positions = y[0];
      for (size_t i = 2; i < y.size(); ++i) positions *= y[i];
      const int64_t tile_m = config.integer("tile_m");
      const int64_t tile_n = config.at("variant") == "direct" ? config.integer("items_per_thread")
                                                              : config.integer("tile_n");
      EXPECT_EQ(static_cast<int64_t>(last.grid.x),
                ((positions + tile_m - 1) / tile_m) * ((y[1] + tile_n - 1) / tile_n))
          << config.str();
    }
    if (is_depthwise(id)) {
      EXPECT_TRUE(c.scratch.empty());
      EXPECT_EQ(last.block.x, config.integer("block"));
    }
  });
}

TEST(ConvGenerator, SourcesFollowTheKnobs) {
  const TaskSpec task = task_spec(55, Scale::kernelbench);
  const Generator& g = generator_for(55);
  const auto with = testing::generate_with;
  const Candidate base = g.generate(task, g.expert(task));
  EXPECT_TRUE(contains(base.source, "kbrl_conv_igemm("));
  EXPECT_TRUE(contains(base.source, "#define TILE_M 128"));
  EXPECT_TRUE(contains(base.source, "#define TM 8"));
  EXPECT_TRUE(contains(base.source, "#define TN 8"));
  EXPECT_TRUE(contains(base.source, "Two stages"));
  EXPECT_FALSE(contains(base.source, "wmma"));
  EXPECT_EQ(base.launches[0].kernel, "kbrl_conv_prep");
  EXPECT_EQ(base.launches[1].kernel, "kbrl_conv_igemm");
  EXPECT_EQ(base.launches[1].block.x, 128u * 128u / 64u);
  EXPECT_TRUE(contains(with(task, "stages=1,tile_k=16").source, "One stage"));
  EXPECT_TRUE(contains(with(task, "tile_k=16").source, "#define TILE_K 16"));
  EXPECT_TRUE(contains(with(task, "items_per_thread=32").source, "#define TN 4"));
  const Candidate tf32 = with(task, "precision=tf32,items_per_thread=32,tile_k=16");
  EXPECT_TRUE(contains(tf32.source, "wmma::mma_sync"));
  EXPECT_FALSE(contains(tf32.source, "a_lo"));
  EXPECT_TRUE(contains(with(task, "precision=tf32x3,items_per_thread=32,tile_k=16").source, "a_lo"));
  const Candidate direct =
      with(task, "variant=direct,tile_n=32,items_per_thread=16,stages=1,tile_m=64");
  EXPECT_TRUE(contains(direct.source, "kbrl_conv_direct("));
  EXPECT_EQ(direct.launches[1].block.x, 64u);
  // grid and tail change only the launch; shapes are arguments, so tasks share sources.
  const Candidate other = with(task, "grid=m_major,tail=dropped");
  EXPECT_EQ(other.source, base.source);
  EXPECT_NE(other.launches, base.launches);
  const TaskSpec t63 = task_spec(63, Scale::kernelbench);
  EXPECT_EQ(with(t63, "tile_n=128").source, with(task, "tile_n=128").source);
  EXPECT_EQ(with(task_spec(63, Scale::small), "tile_n=128").source, with(t63, "tile_n=128").source);
  // Bias (task 50) through the prep kernel that copies it; no bias elsewhere.
  const TaskSpec t50 = task_spec(50, Scale::kernelbench);
  const Candidate c50 = with(t50, "");
  EXPECT_EQ(c50.launches[0].kernel, "kbrl_conv_prep_bias");
  EXPECT_EQ(c50.launches[0].args[1], (KernelArg{ArgKind::parameter, 1}));
  // Depthwise: the kernel's shape is compiled in; fp16_compute shows in the source.
  const TaskSpec t85 = task_spec(85, Scale::kernelbench);
  const Candidate c85 = with(t85, "");
  EXPECT_TRUE(contains(c85.source, "#define DW_KH 3\n#define DW_KW 7"));
  EXPECT_TRUE(contains(c85.source, "#define DW_ROWS 4"));
  EXPECT_TRUE(contains(with(t85, "precision=fp16_compute").source, "__hmul("));
  EXPECT_EQ(with(t85, "block=64").source, c85.source);
  EXPECT_EQ(with(t85, "block=64").launches[0].block.x, 64u);
  // 86: fused computes the depthwise conv while staging; two_pass goes through scratch.
  const TaskSpec t86 = task_spec(86, Scale::kernelbench);
  const Candidate fused = with(t86, "");
  EXPECT_TRUE(contains(fused.source, "#define DKH 3"));
  EXPECT_EQ(fused.scratch.size(), 2u);
  const Candidate two = with(t86, "variant=two_pass");
  EXPECT_EQ(two.launches[0].kernel, "kbrl_conv_dw");
  ASSERT_EQ(two.scratch.size(), 3u);
  EXPECT_EQ(two.scratch[2].bytes, 16LL * 64 * 512 * 512 * 4);
  EXPECT_EQ(two.launches[2].args[0], (KernelArg{ArgKind::scratch, 2}));
}

// Every legal configuration (each task's pairwise cover unless KBRL_EVERY_CONFIG=1) of every task
// compiles for sm_90a; configurations are grouped by (source, options) and each distinct unit
// compiled once (shapes are kernel arguments, so the small scale adds no unit). Unsafe precisions
// show in the precision audit; safe ones show nothing.
TEST(ConvGenerator, ConfigsCompileAndUnsafeOnesAreAudited) {
  testing::expect_every_config_compiles(testing::task_specs(all_tasks()), "conv");
}

}  // namespace
}  // namespace kbrl
