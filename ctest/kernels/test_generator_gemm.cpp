// The gemm generator (matmul tasks 1-4, 6-11, 13-18): coverage, space sizes, tokenization, the
// expert configuration, launch plans over the task's own tensors (and task 6's declared scratch)
// with grid and block within CUDA's limits, the candidate-file form, sources following the knobs,
// and every legal configuration compiled by NVRTC for sm_90a (no GPU needed). Numerical correctness
// is checked on a GPU: ctest/kernels/test_generator_gpu.cpp evaluates every covered task
// automatically; nothing here runs a kernel on the CPU.
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

const std::vector<int> kGemmTasks = {1, 2, 3, 4, 6, 7, 8, 9, 10, 11, 13, 14, 15, 16, 17, 18};

const testing::FamilySpec kGemm = {
    .name = "gemm",
    .space_sizes = testing::sizes_of(kGemmTasks,
                                     [](int id) { return id == 4 ? 432 : id == 6 ? 864 : 288; }),
    .extra_knobs = {"split_k"},  // task 6's only
    .foreign_tasks = {12, 19},   // 12 (diagonal matmul) belongs to another family
    .arg_kinds = {ArgKind::input, ArgKind::output, ArgKind::scratch, ArgKind::i32, ArgKind::i64},
    .round_trip_every = 97,
};

TEST(GemmGenerator, Coverage) { testing::expect_coverage(kGemm); }

TEST(GemmGenerator, SpaceSizesTokensAndKnobNames) {
  testing::expect_knob_spaces(kGemm, [](const TaskSpec& task, const KnobSpace& space, const auto&) {
    EXPECT_EQ(space.knob_index("split_k") >= 0, task.id == 6) << task.id;
  });
}

TEST(GemmGenerator, ExpertIsLegalAndSafe) {
  testing::expect_expert_legal_and_safe(
      kGemm, [](const TaskSpec& task, const Config&, const Candidate& c) {
        EXPECT_FALSE(contains(c.source, "wmma")) << task.id;
      });
}

TEST(GemmGenerator, RejectsIllegalConfigs) {
  const TaskSpec task = task_spec(1, Scale::small);
  const Generator& g = generator_for(1);
  Config c = g.expert(task);
  c.set("items_per_thread", "4");  // 128 x 128 with 4 x 4 per thread: 1024 threads, not offered
  EXPECT_THROW(g.generate(task, c), InputError);
  c = g.expert(task);
  c.set("tile_m", "32");  // 32 x 128 / 8: not a listed tile
  EXPECT_THROW(g.generate(task, c), InputError);
  c = g.expert(task);
  c.set("tile_k", "64");
  EXPECT_THROW(g.generate(task, c), InputError);
  c = g.expert(task);
  c.set("split_k", "64");  // only task 6 splits K
  EXPECT_THROW(g.generate(task, c), InputError);
  const TaskSpec t6 = task_spec(6, Scale::small);
  Config c6 = g.expert(t6);
  c6.set("split_k", "7");
  EXPECT_THROW(g.generate(t6, c6), InputError);
  const TaskSpec t4 = task_spec(4, Scale::small);
  Config c4 = g.expert(t4);
  c4.set("block", "1024");
  EXPECT_THROW(g.generate(t4, c4), InputError);
  EXPECT_THROW(g.generate(task, g.expert(t4)), InputError);  // matvec knobs on a GEMM task
}

/// M, N, K, batch as the generator must read them from the task's tensors.
struct Dims {
  int64_t m, n, k, batch;
};

Dims dims_of(const TaskSpec& t) {
  const auto& a = t.inputs[0].shape;
  const auto& b = t.inputs[1].shape;
  if (t.id == 3) return {a[1], b[2], a[2], a[0]};
  const bool ta = t.id == 16 || t.id == 18, tb = t.id == 17 || t.id == 18;
  int64_t m = 1;
  for (size_t i = 0; i + 1 < a.size(); ++i) m *= a[i];
  if (ta) return {a[1], tb ? b[0] : b[1], a[0], 1};
  return {m, tb ? b[0] : b[1], a.back(), 1};
}

// Plans read A and B, write C (task 6 through its declared split-K scratch), and launch the
// kernels the task's shape calls for.
TEST(GemmGenerator, PlansUseOnlyTheTasksArguments) {
  testing::expect_plans_use_only_task_arguments(kGemm, [](const TaskSpec& task,
                                                           const Config& config,
                                                           const Candidate& c) {
    const int id = task.id;
    const Dims d = dims_of(task);
    EXPECT_EQ(task.inputs.size(), 2u);  // A and B
    EXPECT_EQ(task.outputs.size(), 1u);
    if (id == 4) {
      ASSERT_EQ(c.launches.size(), 1u);
      const Launch& l = c.launches[0];
      EXPECT_EQ(l.kernel, "kbrl_gemv");
      EXPECT_EQ(l.block.x, config.integer("block"));
      const int64_t per = config.integer("tile_m") *
                          (config.at("variant") == "warp_per_row" ? l.block.x / 32 : 1);
      EXPECT_EQ(static_cast<int64_t>(l.grid.x), (d.m + per - 1) / per);
      EXPECT_TRUE(c.scratch.empty());
      return;
    }
    const int64_t bm = config.integer("tile_m"), bn = config.integer("tile_n");
    const int64_t ipt = config.integer("items_per_thread");
    const Launch& l = c.launches[0];
    EXPECT_EQ(l.kernel, "kbrl_gemm");
    EXPECT_EQ(static_cast<int64_t>(l.block.x), (bm / ipt) * (bn / ipt));
    EXPECT_EQ(static_cast<int64_t>(l.grid.x), ((d.m + bm - 1) / bm) * ((d.n + bn - 1) / bn));
    ASSERT_EQ(l.args.size(), 20u);
    EXPECT_EQ(l.args[3].ivalue, d.m);
    EXPECT_EQ(l.args[4].ivalue, d.n);
    EXPECT_EQ(l.args[5].ivalue, d.k);
    EXPECT_TRUE(c.options.empty());
    if (id == 6) {
      ASSERT_EQ(c.launches.size(), 2u);
      ASSERT_EQ(c.scratch.size(), 1u);
      const int64_t splits = l.grid.y;
      const int64_t chunk = l.args[12].ivalue;
      EXPECT_LE(splits, config.integer("split_k"));
      EXPECT_GE(splits * chunk, d.k);        // the chunks cover K ...
      EXPECT_LT((splits - 1) * chunk, d.k);  // ... and none is empty
      EXPECT_EQ(chunk % config.integer("tile_k"), 0);
      EXPECT_EQ(c.scratch[0].bytes, splits * d.m * d.n * 4);
      EXPECT_EQ(l.args[2], (KernelArg{ArgKind::scratch, 0}));
      EXPECT_EQ(c.launches[1].kernel, "kbrl_splitk_reduce");
      EXPECT_EQ(c.launches[1].args[4].ivalue, splits);
      EXPECT_GE(int64_t{c.launches[1].grid.x} * c.launches[1].block.x, d.m * d.n);
    } else {
      EXPECT_EQ(c.launches.size(), 1u);
      EXPECT_TRUE(c.scratch.empty());
      EXPECT_EQ(static_cast<int64_t>(l.grid.y), d.batch);
      EXPECT_EQ(l.args[2], (KernelArg{ArgKind::output, 0}));
    }
  });
}

TEST(GemmGenerator, SourcesFollowTheKnobs) {
  const TaskSpec task = task_spec(1, Scale::kernelbench);
  const auto with = generate_with;
  const Candidate base = generate_with(task);
  EXPECT_TRUE(contains(base.source, "constexpr int BM = 128, BN = 128, BK = 16, TM = 8, TN = 8;"));
  EXPECT_TRUE(contains(base.source, "fmaf(a[i], b[j], acc[i][j])"));
  EXPECT_FALSE(contains(base.source, "mma.h"));
  EXPECT_TRUE(contains(with(task, "tile_m=64,tile_n=64,items_per_thread=4,tile_k=32").source,
                       "constexpr int BM = 64, BN = 64, BK = 32, TM = 4, TN = 4;"));
  // Tensor-core precisions: one unit for tf32 and tf32x3 (x3 is an argument).
  const Candidate x3 = with(task, "precision=tf32x3");
  const Candidate tf = with(task, "precision=tf32");
  EXPECT_TRUE(contains(x3.source, "wmma::mma_sync"));
  EXPECT_TRUE(contains(x3.source, "__float_to_tf32"));
  EXPECT_EQ(x3.source, tf.source);
  EXPECT_EQ(x3.launches[0].args.back().ivalue, 1);
  EXPECT_EQ(tf.launches[0].args.back().ivalue, 0);
  // vec and stages change only the launch (arguments; stages also the shared memory).
  const Candidate other = with(task, "vec=1,stages=1");
  EXPECT_EQ(other.source, base.source);
  EXPECT_NE(other.launches, base.launches);
  EXPECT_LT(other.launches[0].shared_bytes, base.launches[0].shared_bytes);
  // All GEMM tasks share units: layouts and triangularity are arguments.
  for (int id : {2, 3, 7, 8, 10, 11, 13, 14, 15, 16, 17, 18}) {
    const Candidate c = generate_with(task_spec(id, Scale::kernelbench));
    EXPECT_EQ(c.source, base.source) << id;
    const auto& a = c.launches[0].args;
    EXPECT_EQ(a[14].ivalue, (id == 16 || id == 18) ? 1 : 0) << id;  // trans_a
    EXPECT_EQ(a[15].ivalue, (id == 17 || id == 18) ? 1 : 0) << id;  // trans_b
    EXPECT_EQ(a[18].ivalue, id == 14 ? 1 : id == 15 ? 2 : 0) << id;  // tri
  }
  // Task 3 batches over grid.y with per-batch strides.
  const TaskSpec t3 = task_spec(3, Scale::kernelbench);
  const Candidate c3 = generate_with(t3);
  EXPECT_EQ(c3.launches[0].grid.y, 128u);
  EXPECT_EQ(c3.launches[0].args[9].ivalue, 512 * 1024);
  EXPECT_EQ(c3.launches[0].args[10].ivalue, 1024 * 2048);
  EXPECT_EQ(c3.launches[0].args[11].ivalue, 512 * 2048);
  // Task 6: 64 chunks of 8192 at KernelBench's scale.
  const TaskSpec t6 = task_spec(6, Scale::kernelbench);
  const Candidate c6 = generate_with(t6);
  EXPECT_EQ(c6.launches[0].grid.y, 64u);
  EXPECT_EQ(c6.launches[0].args[12].ivalue, 8192);
  EXPECT_EQ(c6.scratch[0].bytes, int64_t{64} * 256 * 256 * 4);
  EXPECT_EQ(with(t6, "split_k=256").launches[0].grid.y, 256u);
  // Task 4: the matrix-vector kernel.
  const TaskSpec t4 = task_spec(4, Scale::kernelbench);
  const Candidate c4 = generate_with(t4);
  EXPECT_TRUE(contains(c4.source, "constexpr int ROWS = 2, UNROLL = 4;"));
  EXPECT_TRUE(contains(c4.source, "__ldcs(p)"));
  EXPECT_FALSE(contains(with(t4, "cache_hint=none").source, "__ldcs(p)"));
  EXPECT_EQ(with(t4, "fast_math=on").options, std::vector<std::string>{"--use_fast_math"});
  EXPECT_EQ(with(t4, "variant=warp_per_row,block=128,vec=1").source, c4.source);
  EXPECT_EQ(with(t4, "variant=warp_per_row,block=128").launches[0].grid.x, 2048u / 8u);
  EXPECT_EQ(c4.launches[0].grid.x, 1024u);
}

// Every legal configuration (each task's pairwise cover unless KBRL_EVERY_CONFIG=1) of every task
// compiles for sm_90a: configurations are grouped by (source, options) and each distinct unit
// compiled once. The sources do not depend on the scale (shapes are kernel arguments), so the
// KernelBench scale covers the small one too. Unsafe configurations show in the precision audit;
// safe ones show nothing reduced.
TEST(GemmGenerator, ConfigsCompileAndUnsafeOnesAreAudited) {
  // The scale-independence of the sources, checked on a sample.
  for (int id : kGemmTasks) {
    const Generator& g = generator_for(id);
    const TaskSpec kb = task_spec(id, Scale::kernelbench), small = task_spec(id, Scale::small);
    const std::vector<Config> all = g.space(kb).enumerate();
    for (size_t i = 0; i < all.size(); i += 17)
      EXPECT_EQ(g.generate(kb, all[i]).source, g.generate(small, all[i]).source) << id;
  }
  testing::expect_every_config_compiles(testing::task_specs(kGemmTasks), "gemm");
}

}  // namespace
}  // namespace kbrl
