// The loss generator (tasks 94 MSE, 95 cross-entropy, 96 Huber, 98 KL divergence, 99 triplet
// margin, 100 hinge): coverage, space sizes, tokenization, the expert configuration, two-launch
// plans over the task's own tensors and one declared scratch buffer, sources that follow the knobs,
// and every legal configuration compiled by NVRTC for sm_90a (no GPU needed). Numerical correctness
// (and the bitwise determinism of the two-stage reduction) is checked on a GPU:
// ctest/kernels/test_generator_gpu.cpp covers every covered task automatically, not this test.
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

const testing::FamilySpec kLoss = {
    .name = "loss",
    .space_sizes = {{94, 480}, {95, 450}, {96, 480}, {98, 600}, {99, 450}, {100, 360}},
    .extra_knobs = {"accumulate"},
    .foreign_tasks = {19, 97},
    .arg_kinds = {ArgKind::input, ArgKind::output, ArgKind::scratch, ArgKind::i64},
};

bool row_wise(int id) { return id == 95 || id == 99 || id == 100; }
bool transcendental(int id) { return id == 95 || id == 98 || id == 99; }

TEST(LossGenerator, Coverage) { testing::expect_coverage(kLoss); }

// Row-wise tasks choose a variant, streamed ones a cache hint; fast_math only where there is a
// transcendental. Each thread handles at least two values; unsafe configurations (there are some)
// accumulate in fp32.
TEST(LossGenerator, SpaceSizesTokensAndKnobNames) {
  testing::expect_knob_spaces(kLoss, [](const TaskSpec& task, const KnobSpace& space,
                                        const std::vector<Config>& all) {
    const int id = task.id;
    EXPECT_EQ(space.knob_index("variant") >= 0, row_wise(id)) << id;
    EXPECT_EQ(space.knob_index("fast_math") >= 0, transcendental(id)) << id;
    EXPECT_EQ(space.knob_index("cache_hint") >= 0, !row_wise(id)) << id;
    int64_t unsafe_count = 0;
    for (const Config& c : all) {
      EXPECT_GE(c.integer("vec") * c.integer("items_per_thread"), 2) << c.str();
      if (testing::is_unsafe(c)) {
        ++unsafe_count;
        EXPECT_EQ(c.at("accumulate"), "fp32") << c.str();
      }
    }
    EXPECT_GT(unsafe_count, 0) << id;
  });
}

TEST(LossGenerator, ExpertIsLegalAndSafe) {
  testing::expect_expert_legal_and_safe(
      kLoss, [](const TaskSpec& task, const Config& expert, const Candidate&) {
        EXPECT_EQ(expert.at("vec"), "4") << task.id;
      });
}

TEST(LossGenerator, RejectsIllegalConfigs) {
  const TaskSpec task = task_spec(98, Scale::small);
  const Generator& g = generator_for(98);
  auto rejects = [&](const TaskSpec& t, const char* overrides) {
    Config c = generator_for(t.id).expert(t);
    const Config o = Config::parse(overrides);
    for (const auto& [k, v] : o.entries()) c.set(k, v);
    EXPECT_THROW(generator_for(t.id).generate(t, c), InputError) << overrides;
  };
  rejects(task, "precision=fp16_compute,fast_math=on,accumulate=fp32");  // two unsafe values
  rejects(task, "tail=dropped,accumulate=fp64");                         // unsafe with fp64
  rejects(task, "vec=1,items_per_thread=1");
  rejects(task, "vec=2");
  rejects(task, "grid=16");
  rejects(task_spec(99, Scale::small), "block=1024");  // row-wise blocks stop at 512
  rejects(task_spec(99, Scale::small), "variant=flat");
  Config c = g.expert(task);
  c.set("variant", "warp_per_row");  // no variant knob for the flat tasks
  EXPECT_THROW(g.generate(task, c), InputError);
  c = generator_for(94).expert(task_spec(94, Scale::small));
  c.set("fast_math", "off");  // no fast_math knob for MSE
  EXPECT_THROW(g.generate(task_spec(94, Scale::small), c), InputError);
}

// Two launches: per-block partials of the accumulate type into one scratch buffer, then one block
// that sums them into the 0-d output and divides by torch's count.
TEST(LossGenerator, PlansUseOnlyTheTasksArguments) {
  testing::expect_plans_use_only_task_arguments(
      kLoss, [](const TaskSpec& task, const Config& config, const Candidate& c) {
        const int id = task.id;
        const int64_t numel = task.inputs[0].numel();
        const int64_t rows = task.inputs[0].shape[0];
        ASSERT_EQ(c.launches.size(), 2u);
        const Launch& p = c.launches[0];
        const Launch& f = c.launches[1];
        EXPECT_EQ(p.kernel, "kbrl_loss_partial");
        EXPECT_EQ(f.kernel, "kbrl_loss_final");
        EXPECT_EQ(p.block.x, config.integer("block"));
        EXPECT_EQ(p.block.y * p.block.z * p.grid.y * p.grid.z, 1u);
        EXPECT_LE(static_cast<int64_t>(p.grid.x), config.integer("grid") * 132);
        if (row_wise(id)) {
          EXPECT_LE(static_cast<int64_t>(p.grid.x), rows);
        }
        EXPECT_EQ(f.grid, (Dim3{1, 1, 1}));
        EXPECT_EQ(f.block, (Dim3{256, 1, 1}));
        EXPECT_EQ(p.shared_bytes, 0u);
        EXPECT_EQ(f.shared_bytes, 0u);
        // One scratch buffer: a partial per block of the accumulate type.
        ASSERT_EQ(c.scratch.size(), 1u);
        EXPECT_EQ(c.scratch[0].bytes,
                  static_cast<int64_t>(p.grid.x) * (config.at("accumulate") == "fp64" ? 8 : 4));
        // The partial launch: the task's inputs in order, the scratch, then i64 sizes.
        const size_t inputs = task.inputs.size();
        ASSERT_EQ(p.args.size(), inputs + 1 + (row_wise(id) ? 2 : 1));
        for (size_t i = 0; i < inputs; ++i)
          EXPECT_EQ(p.args[i], (KernelArg{ArgKind::input, static_cast<int>(i)}));
        EXPECT_EQ(p.args[inputs], (KernelArg{ArgKind::scratch, 0}));
        if (row_wise(id)) {
          EXPECT_EQ(p.args[inputs + 1], (KernelArg{ArgKind::i64, 0, 0.0, rows}));
          EXPECT_EQ(p.args[inputs + 2],
                    (KernelArg{ArgKind::i64, 0, 0.0, task.inputs[0].shape[1]}));
        } else {
          EXPECT_EQ(p.args[inputs + 1], (KernelArg{ArgKind::i64, 0, 0.0, numel}));
        }
        for (const KernelArg& a : p.args) EXPECT_NE(a.kind, ArgKind::output);
        // The final launch: partials -> the 0-d output, divided by torch's count.
        const int64_t denom = (id == 95 || id == 98 || id == 99) ? rows : numel;
        ASSERT_EQ(f.args.size(), 4u);
        EXPECT_EQ(f.args[0], (KernelArg{ArgKind::scratch, 0}));
        EXPECT_EQ(f.args[1], (KernelArg{ArgKind::output, 0}));
        EXPECT_EQ(f.args[2], (KernelArg{ArgKind::i64, 0, 0.0, static_cast<int64_t>(p.grid.x)}));
        EXPECT_EQ(f.args[3], (KernelArg{ArgKind::i64, 0, 0.0, denom}));
      });
}

TEST(LossGenerator, SourcesFollowTheKnobs) {
  auto gen = [](int id, const char* overrides, Scale scale = Scale::kernelbench) {
    return testing::generate_with(task_spec(id, scale), overrides);
  };
  const Candidate mse = gen(94, "");
  EXPECT_TRUE(contains(mse.source, "typedef double Acc;"));
  EXPECT_TRUE(contains(mse.source, "float4"));
  EXPECT_TRUE(contains(mse.source, "__ldcs("));
  EXPECT_TRUE(contains(mse.source, "constexpr int kItems = 4;"));
  EXPECT_TRUE(contains(mse.source, "return d * d;"));
  EXPECT_TRUE(contains(mse.source, "// scalar tail"));
  EXPECT_FALSE(contains(mse.source, "atomicAdd"));
  EXPECT_TRUE(contains(gen(94, "accumulate=fp32").source, "typedef float Acc;"));
  EXPECT_FALSE(contains(gen(94, "vec=1").source, "float4"));
  EXPECT_TRUE(contains(gen(94, "items_per_thread=2").source, "constexpr int kItems = 2;"));
  EXPECT_FALSE(contains(gen(94, "cache_hint=none").source, "__ldcs("));
  EXPECT_FALSE(contains(gen(94, "tail=dropped,accumulate=fp32").source, "// scalar tail"));
  EXPECT_TRUE(contains(gen(94, "precision=fp16_compute,accumulate=fp32").source, "typedef __half Run;"));
  // block and grid change only the launch; both scales share the source.
  EXPECT_EQ(gen(94, "block=128,grid=8").source, mse.source);
  EXPECT_NE(gen(94, "block=128,grid=8").launches, mse.launches);
  EXPECT_EQ(gen(94, "", Scale::small).source, mse.source);
  // Per-task math.
  EXPECT_TRUE(contains(gen(96, "").source, "constexpr float kBeta = 1.0f;"));
  EXPECT_TRUE(contains(gen(98, "").source, "t * k_log(t)"));
  EXPECT_TRUE(contains(gen(98, "").source, "return logf(v);"));
  EXPECT_TRUE(contains(gen(98, "fast_math=on,accumulate=fp32").source, "__logf"));
  EXPECT_EQ(gen(98, "fast_math=on,accumulate=fp32").options,
            std::vector<std::string>{"--use_fast_math"});
  EXPECT_TRUE(contains(gen(100, "").source, "__fmul_rn(p, t)"));
  EXPECT_TRUE(contains(gen(100, "").source, "kbrl_ldv_keep(t,"));
  // Row-wise variants.
  const Candidate ce = gen(95, "");
  EXPECT_TRUE(contains(ce.source, "warp_per_row"));
  EXPECT_TRUE(contains(ce.source, "kbrl_warp_reduce(st, MergeOp{})"));
  EXPECT_TRUE(contains(ce.source, "k_log(st.s)"));
  EXPECT_TRUE(contains(ce.source, "__ldcs("));  // row-wise tasks always stream their rows
  EXPECT_TRUE(contains(gen(95, "variant=block_per_row").source, "kbrl_block_reduce(st, MaxSum"));
  EXPECT_TRUE(contains(gen(95, "precision=fp16_compute").source, "hexp("));
  EXPECT_TRUE(contains(gen(95, "fast_math=on").source, "__expf"));
  EXPECT_EQ(gen(95, "", Scale::small).source, ce.source);
  const Candidate tri = gen(99, "");
  EXPECT_TRUE(contains(tri.source, "constexpr float kEps = 1e-6f;"));
  EXPECT_TRUE(contains(tri.source, "k_sq((v[0][k][c] - v[1][k][c]) + kEps)"));
  EXPECT_TRUE(contains(gen(99, "precision=fp16_compute").source, "__hmul(h, h)"));
  EXPECT_TRUE(contains(gen(99, "variant=block_per_row").source, "PairSumOp{}"));
  EXPECT_TRUE(contains(gen(100, "variant=warp_per_row").source, "const long long G = 32;"));
}

// Every legal configuration (each task's pairwise cover unless KBRL_EVERY_CONFIG=1) of every task
// compiles for sm_90a: configurations are grouped by (source, options) and each distinct unit
// compiled once. The sources do not depend on the scale (checked above), so the KernelBench scale
// covers every unit. Unsafe configurations show in the precision audit; safe ones show nothing
// reduced.
TEST(LossGenerator, ConfigsCompileAndUnsafeOnesAreAudited) {
  testing::expect_every_config_compiles(testing::task_specs(kLoss.tasks()), "loss");
}

}  // namespace
}  // namespace kbrl
