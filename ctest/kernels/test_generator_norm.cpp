// The norm generator (tasks 33-40): coverage, space sizes, knob names, tokenization, the expert
// configuration, launch plans over the task's own tensors and declared scratch, candidate files,
// sources following the knobs, and every legal configuration compiled by NVRTC for sm_90a (no GPU
// needed). Numerical correctness is checked on a GPU, not here: ctest/kernels/test_generator_gpu.cpp
// runs the expert and two more safe configurations of every covered task through the evaluator.
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

const testing::FamilySpec kNorm = {
    .name = "norm",
    .space_sizes = {{33, 432}, {34, 504}, {35, 504}, {36, 138},
                    {37, 108}, {38, 252}, {39, 252}, {40, 432}},
    .extra_knobs = {"stats"},
    .foreign_tasks = {23},
    .arg_kinds = {ArgKind::input, ArgKind::output, ArgKind::parameter, ArgKind::scratch,
                  ArgKind::f32, ArgKind::i32, ArgKind::i64},
    .round_trip_every = 41,
};

Candidate with(const TaskSpec& t, const char* overrides) {
  return testing::generate_with(t, overrides);
}

TEST(NormGenerator, Coverage) { testing::expect_coverage(kNorm); }

TEST(NormGenerator, SpaceSizesTokensAndKnobNames) { testing::expect_knob_spaces(kNorm); }

TEST(NormGenerator, ExpertIsLegalAndSafe) { testing::expect_expert_legal_and_safe(kNorm); }

TEST(NormGenerator, RejectsIllegalConfigs) {
  const TaskSpec task = task_spec(34, Scale::small);
  const Generator& g = generator_for(34);
  Config c = g.expert(task);
  c.set("precision", "fp16_compute");
  c.set("fast_math", "on");  // one unsafe precision knob at a time
  EXPECT_THROW(g.generate(task, c), InputError);
  c = g.expert(task);
  c.set("vec", "2");  // not a value
  EXPECT_THROW(g.generate(task, c), InputError);
  c = g.expert(task);
  c.set("items_per_thread", "32");  // block_per_segment covers the whole segment
  EXPECT_THROW(g.generate(task, c), InputError);
  // Few segments: no block per segment for 33, 37, 40; 37 (one segment) only splits.
  const TaskSpec t37 = task_spec(37, Scale::small);
  Config f = g.expert(t37);
  f.set("variant", "block_per_segment");
  f.set("items_per_thread", "segment");
  EXPECT_THROW(g.generate(t37, f), InputError);
  f = g.expert(t37);
  f.set("variant", "split_inline");
  EXPECT_THROW(g.generate(t37, f), InputError);
  // 37 has no stats knob; 36 has its own space.
  f = g.expert(t37);
  f.set("stats", "welford");
  EXPECT_THROW(g.generate(t37, f), InputError);
  const TaskSpec t36 = task_spec(36, Scale::small);
  Config r = g.expert(t36);
  r.set("vec", "4");  // registers holds 64 * vec values
  EXPECT_THROW(g.generate(t36, r), InputError);
  r = g.expert(t36);
  r.set("unroll", "8");  // registers holds all 64
  EXPECT_THROW(g.generate(t36, r), InputError);
  r = g.expert(t36);
  r.set("vec", "2");
  EXPECT_NO_THROW(g.generate(t36, r));
  r.set("block", "512");  // 128 values per thread: at most 256 threads
  EXPECT_THROW(g.generate(t36, r), InputError);
}

// One-dimensional launches of `block` threads without dynamic shared memory; x is never written
// (it is only ever passed as input 0). A segment-wide plan is one launch; the others compute
// per-chunk statistics into scratch (float2 per chunk), then apply them over the same chunks.
TEST(NormGenerator, PlansUseOnlyTheTasksArguments) {
  testing::expect_plans_use_only_task_arguments(
      kNorm, [](const TaskSpec& task, const Config& config, const Candidate& c) {
        EXPECT_EQ(task.inputs.size(), 1u);
        EXPECT_EQ(task.outputs.size(), 1u);
        for (const Launch& l : c.launches) {
          EXPECT_EQ(l.grid.y * l.grid.z, 1u);
          EXPECT_EQ(l.block.x, config.integer("block"));
          EXPECT_EQ(l.block.y * l.block.z, 1u);
          EXPECT_EQ(l.shared_bytes, 0u);
        }
        const std::string variant = config.at("variant");
        if (task.id == 36 || variant == "block_per_segment") {
          EXPECT_EQ(c.launches.size(), 1u);
          EXPECT_TRUE(c.scratch.empty());
          return;
        }
        ASSERT_EQ(c.launches.size(), variant == "split" ? 3u : 2u);
        EXPECT_EQ(c.launches[0].kernel, "kbrl_norm_stats");
        EXPECT_EQ(c.launches.back().kernel,
                  variant == "split" ? "kbrl_norm_apply" : "kbrl_norm_apply_inline");
        // The stats and apply launches cover the same chunks; one float2 per chunk.
        EXPECT_EQ(c.launches[0].grid.x, c.launches.back().grid.x);
        ASSERT_EQ(c.scratch.size(), variant == "split" ? 2u : 1u);
        EXPECT_EQ(c.scratch[0].bytes, 8 * static_cast<int64_t>(c.launches[0].grid.x));
        // Chunks of at most block * vec * items_per_thread elements cover x.
        const int64_t chunk =
            config.integer("block") * config.integer("vec") * config.integer("items_per_thread");
        EXPECT_GE(static_cast<int64_t>(c.launches[0].grid.x) * chunk, task.inputs[0].numel());
      });
}

TEST(NormGenerator, GeometryOfTheTasks) {
  // Chunk counts at KernelBench scale for the expert (64K-element chunks).
  const TaskSpec t33 = task_spec(33, Scale::kernelbench);  // 64 channels x 64 images x 4 chunks
  EXPECT_EQ(with(t33, "").launches[0].grid.x, 64u * 64u * 4u);
  EXPECT_EQ(with(t33, "").launches[1].grid.x, 64u);  // finalize: one block per channel
  const TaskSpec t37 = task_spec(37, Scale::kernelbench);
  EXPECT_EQ(with(t37, "").launches[1].grid.x, 1u);
  EXPECT_EQ(with(t37, "").launches[0].grid.x, (112ull * 64 * 512 * 512 + 65535) / 65536);
  const TaskSpec t35 = task_spec(35, Scale::kernelbench);  // 112 x 8 groups x 8 channels x 4
  EXPECT_EQ(with(t35, "").launches[0].grid.x, 112u * 8u * 8u * 4u);
  const TaskSpec t40 = task_spec(40, Scale::kernelbench);  // 16 samples x 64 chunks
  EXPECT_EQ(with(t40, "").launches[0].grid.x, 16u * 64u);
  EXPECT_EQ(with(t40, "").launches.back().args.size(), 16u);  // x, y, w, b, coef, 10 i64, vec4
  const TaskSpec t38 = task_spec(38, Scale::kernelbench);
  EXPECT_EQ(with(t38, "").launches[0].grid.x, 32768u);  // a block per row
  const TaskSpec t34 = task_spec(34, Scale::kernelbench);
  EXPECT_EQ(with(t34, "").launches[0].grid.x, 112u * 64u);
  EXPECT_EQ(with(t34, "").launches[0].args.size(), 12u);  // x, y, 8 i64, eps, vec4: no affine
  EXPECT_EQ(with(t34, "").launches[0].args.back(), (KernelArg{ArgKind::i32, 0, 0.0, 1}));
  EXPECT_EQ(with(t34, "vec=1").launches[0].args.back(), (KernelArg{ArgKind::i32, 0, 0.0, 0}));
  const TaskSpec t36 = task_spec(36, Scale::kernelbench);
  EXPECT_EQ(with(t36, "").launches[0].grid.x, 112u * 512u * 512u / 256u);
  EXPECT_EQ(with(t36, "vec=4,variant=two_pass,unroll=8").launches[0].grid.x,
            112u * 512u * 512u / 4u / 256u);
}

TEST(NormGenerator, SourcesFollowTheKnobs) {
  const TaskSpec t34 = task_spec(34, Scale::kernelbench);
  const Candidate base = with(t34, "");
  EXPECT_TRUE(contains(base.source, "#define KBRL_KIND 0"));
  EXPECT_TRUE(contains(base.source, "#define KBRL_AFFINE 0"));
  EXPECT_TRUE(contains(base.source, "#define KBRL_STREAM 1"));
  EXPECT_TRUE(contains(base.source, "#define KBRL_HALF 0"));
  EXPECT_FALSE(contains(base.source, "cuda_fp16.h"));
  EXPECT_EQ(base.launches[0].kernel, "kbrl_norm_segment");
  EXPECT_TRUE(contains(with(t34, "stats=sum_sumsq").source, "#define KBRL_KIND 1"));
  EXPECT_TRUE(contains(with(t34, "cache_hint=none").source, "#define KBRL_STREAM 0"));
  EXPECT_TRUE(contains(with(t34, "precision=fp16_compute").source, "#include <cuda_fp16.h>"));
  EXPECT_TRUE(contains(with(t34, "fast_math=on").source, "#define KBRL_FAST 1"));
  EXPECT_EQ(with(t34, "fast_math=on").options, std::vector<std::string>{"--use_fast_math"});
  // variant, block, vec and items_per_thread change only the launches.
  const Candidate other = with(t34, "variant=split,block=256,vec=1,items_per_thread=8");
  EXPECT_EQ(other.source, base.source);
  EXPECT_NE(other.launches, base.launches);
  // The tasks' kinds and affines; 37 and 39 share their units (and so do 33 and 35).
  EXPECT_TRUE(contains(with(task_spec(33, Scale::small), "").source, "#define KBRL_AFFINE 1"));
  EXPECT_TRUE(contains(with(task_spec(40, Scale::small), "").source, "#define KBRL_AFFINE 2"));
  EXPECT_TRUE(contains(with(task_spec(38, Scale::small), "").source, "#define KBRL_KIND 3"));
  const TaskSpec t37 = task_spec(37, Scale::kernelbench), t39 = task_spec(39, Scale::kernelbench);
  EXPECT_TRUE(contains(with(t37, "").source, "#define KBRL_KIND 2"));
  EXPECT_EQ(with(t37, "").source, with(t39, "variant=split,items_per_thread=32,block=512").source);
  EXPECT_EQ(with(task_spec(33, Scale::kernelbench), "").source,
            with(task_spec(35, Scale::kernelbench), "").source);
  // RMSNorm.
  const TaskSpec t36 = task_spec(36, Scale::kernelbench);
  const Candidate rms = with(t36, "");
  EXPECT_TRUE(contains(rms.source, "#define KBRL_REGISTERS 1"));
  EXPECT_TRUE(contains(rms.source, "constexpr int kC = 64;"));
  EXPECT_TRUE(contains(rms.source, "#define KBRL_VEC 1"));
  const Candidate two = with(t36, "variant=two_pass,unroll=8,vec=4");
  EXPECT_TRUE(contains(two.source, "#define KBRL_REGISTERS 0"));
  EXPECT_TRUE(contains(two.source, "#define KBRL_VEC 4"));
  EXPECT_TRUE(contains(two.source, "#pragma unroll 8\n"));
  EXPECT_FALSE(contains(two.source, "KBRL_UNROLL"));
  EXPECT_EQ(with(t36, "block=512").source, rms.source);
  // Shapes are arguments: both scales share the source.
  EXPECT_EQ(with(task_spec(36, Scale::small), "").source, rms.source);
  EXPECT_EQ(with(task_spec(34, Scale::small), "").source, base.source);
}

// Every legal configuration (each task's pairwise cover unless KBRL_EVERY_CONFIG=1) of every task
// compiles for sm_90a; unsafe ones show in the precision audit, safe ones show nothing reduced.
// Sources do not depend on the scale (shapes are kernel arguments, checked above), so the
// KernelBench scale covers every unit.
TEST(NormGenerator, ConfigsCompileAndUnsafeOnesAreAudited) {
  testing::expect_every_config_compiles(testing::task_specs(kNorm.tasks()), "norm");
}

}  // namespace
}  // namespace kbrl
