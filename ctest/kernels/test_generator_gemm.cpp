// The gemm generator (matmul tasks 1-4, 6-11, 13-18): coverage, space sizes, tokenization, the
// expert configuration, launch plans over the task's own tensors (and task 6's declared scratch)
// with grid and block within CUDA's limits, the candidate-file form, sources following the knobs,
// and every legal configuration compiled by NVRTC for sm_90a (no GPU needed). Numerical correctness
// is checked on a GPU: ctest/kernels/test_generator_gpu.cpp evaluates every covered task
// automatically; nothing here runs a kernel on the CPU.
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "generator_testing.h"

#include <kbrl/error.h>
#include <kernels/candidate_file.h>
#include <kernels/generator.h>
#include <reference/task_registry.h>

namespace kbrl {
namespace {

const std::vector<int> kGemmTasks = {1, 2, 3, 4, 6, 7, 8, 9, 10, 11, 13, 14, 15, 16, 17, 18};

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

bool unsafe(const Config& c) {
  return (c.has("precision") && c.at("precision") != "fp32") ||
         (c.has("fast_math") && c.at("fast_math") != "off");
}

int64_t expected_size(int id) { return id == 4 ? 432 : id == 6 ? 864 : 288; }

TEST(GemmGenerator, Coverage) {
  for (int id : kGemmTasks) EXPECT_EQ(generator_for(id).name(), "gemm") << id;
  const std::vector<int> covered = covered_tasks();
  for (int id : kGemmTasks)
    EXPECT_NE(std::find(covered.begin(), covered.end(), id), covered.end()) << id;
  const Generator& g = generator_for(1);
  for (int id = 1; id <= 100; ++id) {
    const bool mine = std::find(kGemmTasks.begin(), kGemmTasks.end(), id) != kGemmTasks.end();
    EXPECT_EQ(g.covers(id), mine) << id;
  }
  EXPECT_FALSE(g.covers(12));  // diagonal matmul belongs to another family
  EXPECT_THROW(g.space(task_spec(19, Scale::small)), InputError);
  EXPECT_THROW(g.expert(task_spec(12, Scale::small)), InputError);
}

TEST(GemmGenerator, SpaceSizesTokensAndKnobNames) {
  for (int id : kGemmTasks) {
    const TaskSpec task = task_spec(id, Scale::kernelbench);
    const KnobSpace space = generator_for(id).space(task);
    const int64_t size = space.size();
    EXPECT_GE(size, 32) << id;
    EXPECT_LE(size, 1024) << id;
    EXPECT_EQ(size, expected_size(id)) << id;
    for (const auto& k : space.knobs()) {
      if (k.name == "split_k") {
        EXPECT_EQ(id, 6);
        continue;
      }
      EXPECT_TRUE(is_canonical_knob(k.name)) << k.name;
    }
    const std::vector<Config> all = space.enumerate();
    EXPECT_EQ(static_cast<int64_t>(all.size()), size);
    // The space does not depend on the scale.
    EXPECT_EQ(generator_for(id).space(task_spec(id, Scale::small)).enumerate(), all) << id;
    // Tokens round-trip, and every legal configuration's tokens are allowed by the masks.
    for (const Config& c : all) {
      const std::vector<int> tokens = space.tokenize(c);
      ASSERT_EQ(tokens.size(), space.knobs().size());
      EXPECT_EQ(space.detokenize(tokens), c);
      for (size_t k = 0; k < tokens.size(); ++k) {
        const std::vector<bool> mask = space.legal_mask(std::span<const int>(tokens.data(), k));
        EXPECT_TRUE(mask.at(static_cast<size_t>(tokens[k]))) << c.str() << " at " << k;
      }
    }
  }
}

TEST(GemmGenerator, ExpertIsLegalAndSafe) {
  for (int id : kGemmTasks) {
    for (const Scale scale : {Scale::kernelbench, Scale::small}) {
      const TaskSpec task = task_spec(id, scale);
      const Generator& g = generator_for(id);
      const Config expert = g.expert(task);
      EXPECT_TRUE(g.space(task).is_legal(expert)) << g.space(task).why_illegal(expert);
      EXPECT_FALSE(unsafe(expert)) << expert.str();
      const Candidate c = g.generate(task, expert);
      EXPECT_TRUE(c.options.empty());
      EXPECT_FALSE(contains(c.source, "wmma")) << id;
    }
  }
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
  EXPECT_THROW(g.generate(task_spec(19, Scale::small), g.expert(task)), InputError);
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

TEST(GemmGenerator, PlansUseOnlyTheTasksArguments) {
  int64_t checked = 0;
  for (const Scale scale : {Scale::kernelbench, Scale::small}) {
    for (int id : kGemmTasks) {
      const TaskSpec task = task_spec(id, scale);
      const Generator& g = generator_for(id);
      const Dims d = dims_of(task);
      for (const Config& config : g.space(task).enumerate()) {
        const Candidate c = g.generate(task, config);
        EXPECT_EQ(c.task_id, id);
        ASSERT_FALSE(c.launches.empty());
        for (const Launch& l : c.launches) {
          const uint64_t threads = uint64_t{l.block.x} * l.block.y * l.block.z;
          EXPECT_GE(threads, 32u);
          EXPECT_LE(threads, 1024u);
          EXPECT_EQ(threads % 32, 0u);
          EXPECT_GE(l.grid.x, 1u);
          EXPECT_LE(l.grid.x, 2147483647u);
          EXPECT_LE(l.grid.y, 65535u);
          EXPECT_LE(l.grid.z, 65535u);
          EXPECT_LE(l.shared_bytes, 227u * 1024u);
          for (const KernelArg& a : l.args) {
            switch (a.kind) {
              case ArgKind::input:
                EXPECT_LT(a.index, 2);
                break;
              case ArgKind::output:
                EXPECT_EQ(a.index, 0);
                break;
              case ArgKind::scratch:
                EXPECT_LT(static_cast<size_t>(a.index), c.scratch.size());
                break;
              case ArgKind::i32:
              case ArgKind::i64:
                break;
              default:
                ADD_FAILURE() << "task " << id << ": unexpected argument kind";
            }
          }
        }
        // Every plan writes output 0.
        bool writes = false;
        for (const Launch& l : c.launches)
          for (const KernelArg& a : l.args) writes |= a.kind == ArgKind::output;
        EXPECT_TRUE(writes);
        if (id == 4) {
          ASSERT_EQ(c.launches.size(), 1u);
          const Launch& l = c.launches[0];
          EXPECT_EQ(l.kernel, "kbrl_gemv");
          EXPECT_EQ(l.block.x, config.integer("block"));
          const int64_t per = config.integer("tile_m") *
                              (config.at("variant") == "warp_per_row" ? l.block.x / 32 : 1);
          EXPECT_EQ(static_cast<int64_t>(l.grid.x), (d.m + per - 1) / per);
          EXPECT_TRUE(c.scratch.empty());
          EXPECT_EQ(c.options.empty(), config.at("fast_math") == "off");
        } else {
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
            EXPECT_GE(splits * chunk, d.k);  // the chunks cover K ...
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
        }
        if (checked++ % 97 == 0) {
          const Candidate parsed =
              parse_candidate_file(candidate_file_text(c, task, {"header"}), task, "gen.cu");
          EXPECT_EQ(parsed.launches, c.launches);
          EXPECT_EQ(parsed.options, c.options);
          EXPECT_EQ(parsed.scratch, c.scratch);
        }
      }
    }
  }
}

TEST(GemmGenerator, SourcesFollowTheKnobs) {
  const TaskSpec task = task_spec(1, Scale::kernelbench);
  const Generator& g = generator_for(1);
  const KnobSpace space = g.space(task);
  auto with = [&](const TaskSpec& t, const char* overrides) {
    const Generator& gt = generator_for(t.id);
    return gt.generate(t, gt.space(t).with_overrides(gt.expert(t), Config::parse(overrides)));
  };
  const Candidate base = g.generate(task, g.expert(task));
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
    const TaskSpec t = task_spec(id, Scale::kernelbench);
    const Candidate c = generator_for(id).generate(t, generator_for(id).expert(t));
    EXPECT_EQ(c.source, base.source) << id;
    const auto& a = c.launches[0].args;
    EXPECT_EQ(a[14].ivalue, (id == 16 || id == 18) ? 1 : 0) << id;  // trans_a
    EXPECT_EQ(a[15].ivalue, (id == 17 || id == 18) ? 1 : 0) << id;  // trans_b
    EXPECT_EQ(a[18].ivalue, id == 14 ? 1 : id == 15 ? 2 : 0) << id;  // tri
  }
  // Task 3 batches over grid.y with per-batch strides.
  const TaskSpec t3 = task_spec(3, Scale::kernelbench);
  const Candidate c3 = generator_for(3).generate(t3, generator_for(3).expert(t3));
  EXPECT_EQ(c3.launches[0].grid.y, 128u);
  EXPECT_EQ(c3.launches[0].args[9].ivalue, 512 * 1024);
  EXPECT_EQ(c3.launches[0].args[10].ivalue, 1024 * 2048);
  EXPECT_EQ(c3.launches[0].args[11].ivalue, 512 * 2048);
  // Task 6: 64 chunks of 8192 at KernelBench's scale.
  const TaskSpec t6 = task_spec(6, Scale::kernelbench);
  const Candidate c6 = generator_for(6).generate(t6, generator_for(6).expert(t6));
  EXPECT_EQ(c6.launches[0].grid.y, 64u);
  EXPECT_EQ(c6.launches[0].args[12].ivalue, 8192);
  EXPECT_EQ(c6.scratch[0].bytes, int64_t{64} * 256 * 256 * 4);
  EXPECT_EQ(with(t6, "split_k=256").launches[0].grid.y, 256u);
  // Task 4: the matrix-vector kernel.
  const TaskSpec t4 = task_spec(4, Scale::kernelbench);
  const Candidate c4 = generator_for(4).generate(t4, generator_for(4).expert(t4));
  EXPECT_TRUE(contains(c4.source, "constexpr int ROWS = 2, UNROLL = 4;"));
  EXPECT_TRUE(contains(c4.source, "__ldcs(p)"));
  EXPECT_FALSE(contains(with(t4, "cache_hint=none").source, "__ldcs(p)"));
  EXPECT_EQ(with(t4, "fast_math=on").options, std::vector<std::string>{"--use_fast_math"});
  EXPECT_EQ(with(t4, "variant=warp_per_row,block=128,vec=1").source, c4.source);
  EXPECT_EQ(with(t4, "variant=warp_per_row,block=128").launches[0].grid.x, 2048u / 8u);
  EXPECT_EQ(c4.launches[0].grid.x, 1024u);
}

// Every legal configuration of every task compiles for sm_90a: configurations are grouped by
// (source, options) and each distinct unit compiled once. The sources do not depend on the scale
// (shapes are kernel arguments), so the KernelBench scale covers the small one too. Unsafe
// configurations show in the precision audit; safe ones show nothing reduced.
TEST(GemmGenerator, EveryConfigCompilesAndUnsafeOnesAreAudited) {
  std::vector<TaskSpec> tasks;
  for (int id : kGemmTasks) tasks.push_back(task_spec(id, Scale::kernelbench));
  // The scale-independence of the sources, checked on a sample.
  for (int id : kGemmTasks) {
    const Generator& g = generator_for(id);
    const TaskSpec kb = task_spec(id, Scale::kernelbench), small = task_spec(id, Scale::small);
    const std::vector<Config> all = g.space(kb).enumerate();
    for (size_t i = 0; i < all.size(); i += 17)
      EXPECT_EQ(g.generate(kb, all[i]).source, g.generate(small, all[i]).source) << id;
  }
  testing::expect_every_config_compiles(tasks, "gemm");
}

}  // namespace
}  // namespace kbrl
