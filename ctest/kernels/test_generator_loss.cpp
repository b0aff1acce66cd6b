// The loss generator (tasks 94 MSE, 95 cross-entropy, 96 Huber, 98 KL divergence, 99 triplet
// margin, 100 hinge): coverage, space sizes, tokenization, the expert configuration, two-launch
// plans over the task's own tensors and one declared scratch buffer, sources that follow the knobs,
// and every legal configuration compiled by NVRTC for sm_90a (no GPU needed). Numerical correctness
// (and the bitwise determinism of the two-stage reduction) is checked on a GPU:
// ctest/kernels/test_generator_gpu.cpp covers every covered task automatically, not this test.
#include <algorithm>
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

const std::vector<int> kLossTasks = {94, 95, 96, 98, 99, 100};

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

bool row_wise(int id) { return id == 95 || id == 99 || id == 100; }
bool transcendental(int id) { return id == 95 || id == 98 || id == 99; }

bool unsafe(const Config& c) {
  return c.at("precision") != "fp32" || (c.has("fast_math") && c.at("fast_math") != "off") ||
         c.at("tail") != "safe";
}

int64_t expected_size(int id) {
  switch (id) {
    case 94:
    case 96:
      return 480;
    case 98:
      return 600;
    case 95:
    case 99:
      return 450;
    case 100:
      return 360;
  }
  return -1;
}

TEST(LossGenerator, Coverage) {
  for (int id : kLossTasks) EXPECT_EQ(generator_for(id).name(), "loss");
  const std::vector<int> covered = covered_tasks();
  for (int id : kLossTasks)
    EXPECT_NE(std::find(covered.begin(), covered.end(), id), covered.end()) << id;
  const Generator& g = generator_for(94);
  for (int id = 1; id <= 100; ++id)
    EXPECT_EQ(g.covers(id), std::find(kLossTasks.begin(), kLossTasks.end(), id) != kLossTasks.end())
        << id;
  EXPECT_THROW(g.space(task_spec(19, Scale::small)), InputError);
  EXPECT_THROW(g.expert(task_spec(97, Scale::small)), InputError);
}

TEST(LossGenerator, SpaceSizesTokensAndKnobNames) {
  for (int id : kLossTasks) {
    const TaskSpec task = task_spec(id, Scale::kernelbench);
    const KnobSpace space = generator_for(id).space(task);
    const int64_t size = space.size();
    EXPECT_GE(size, 32) << id;
    EXPECT_LE(size, 1024) << id;
    EXPECT_EQ(size, expected_size(id)) << id;
    // Canonical names, except the family's own `accumulate`.
    for (const auto& k : space.knobs())
      EXPECT_TRUE(is_canonical_knob(k.name) || k.name == "accumulate") << k.name;
    EXPECT_EQ(space.knob_index("variant") >= 0, row_wise(id)) << id;
    EXPECT_EQ(space.knob_index("fast_math") >= 0, transcendental(id)) << id;
    EXPECT_EQ(space.knob_index("cache_hint") >= 0, !row_wise(id)) << id;
    const std::vector<Config> all = space.enumerate();
    EXPECT_EQ(static_cast<int64_t>(all.size()), size);
    // The space does not depend on the scale.
    EXPECT_EQ(generator_for(id).space(task_spec(id, Scale::small)).enumerate(), all) << id;
    int64_t unsafe_count = 0;
    for (const Config& c : all) {
      // Tokens round-trip, and every legal configuration's tokens are allowed by the masks.
      const std::vector<int> tokens = space.tokenize(c);
      ASSERT_EQ(tokens.size(), space.knobs().size());
      EXPECT_EQ(space.detokenize(tokens), c);
      for (size_t k = 0; k < tokens.size(); ++k) {
        const std::vector<bool> mask = space.legal_mask(std::span<const int>(tokens.data(), k));
        EXPECT_TRUE(mask.at(static_cast<size_t>(tokens[k]))) << c.str() << " at " << k;
      }
      EXPECT_GE(c.integer("vec") * c.integer("items_per_thread"), 2) << c.str();
      if (unsafe(c)) {
        ++unsafe_count;
        EXPECT_EQ(c.at("accumulate"), "fp32") << c.str();
      }
    }
    EXPECT_GT(unsafe_count, 0) << id;
  }
}

TEST(LossGenerator, ExpertIsLegalAndSafe) {
  for (int id : kLossTasks) {
    for (const Scale scale : {Scale::kernelbench, Scale::small}) {
      const TaskSpec task = task_spec(id, scale);
      const Generator& g = generator_for(id);
      const Config expert = g.expert(task);
      EXPECT_TRUE(g.space(task).is_legal(expert)) << g.space(task).why_illegal(expert);
      EXPECT_FALSE(unsafe(expert)) << expert.str();
      EXPECT_EQ(expert.at("vec"), "4") << id;
      EXPECT_TRUE(g.generate(task, expert).options.empty());
    }
  }
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
  EXPECT_THROW(g.generate(task_spec(19, Scale::small), g.expert(task)), InputError);
}

TEST(LossGenerator, PlansUseOnlyTheTasksArguments) {
  int64_t checked = 0;
  for (const Scale scale : {Scale::kernelbench, Scale::small}) {
    for (int id : kLossTasks) {
      const TaskSpec task = task_spec(id, scale);
      const Generator& g = generator_for(id);
      const int64_t numel = task.inputs[0].numel();
      const int64_t rows = task.inputs[0].shape[0];
      for (const Config& config : g.space(task).enumerate()) {
        const Candidate c = g.generate(task, config);
        EXPECT_EQ(c.task_id, id);
        ASSERT_EQ(c.launches.size(), 2u);
        const Launch& p = c.launches[0];
        const Launch& f = c.launches[1];
        EXPECT_EQ(p.kernel, "kbrl_loss_partial");
        EXPECT_EQ(f.kernel, "kbrl_loss_final");
        EXPECT_EQ(p.block.x, config.integer("block"));
        EXPECT_LE(p.block.x, 1024u);
        EXPECT_EQ(p.block.x % 32, 0u);
        EXPECT_EQ(p.block.y * p.block.z * p.grid.y * p.grid.z, 1u);
        EXPECT_GE(p.grid.x, 1u);
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
        EXPECT_EQ(c.options.empty(), !config.has("fast_math") || config.at("fast_math") == "off");
        if (checked++ % 37 == 0) {
          const Candidate parsed =
              parse_candidate_file(candidate_file_text(c, task, {"header"}), task, "gen.cu");
          EXPECT_EQ(parsed.launches, c.launches);
          EXPECT_EQ(parsed.scratch, c.scratch);
          EXPECT_EQ(parsed.options, c.options);
        }
      }
    }
  }
}

TEST(LossGenerator, SourcesFollowTheKnobs) {
  auto gen = [](int id, const char* overrides, Scale scale = Scale::kernelbench) {
    const TaskSpec t = task_spec(id, scale);
    const Generator& g = generator_for(id);
    return g.generate(t, g.space(t).with_overrides(g.expert(t), Config::parse(overrides)));
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

// Every legal configuration of every task compiles for sm_90a: configurations are grouped by
// (source, options) and each distinct unit compiled once. The sources do not depend on the scale
// (checked above), so the KernelBench scale covers every unit. Unsafe configurations show in the
// precision audit; safe ones show nothing reduced.
TEST(LossGenerator, EveryConfigCompilesAndUnsafeOnesAreAudited) {
  std::vector<TaskSpec> tasks;
  for (int id : kLossTasks) tasks.push_back(task_spec(id, Scale::kernelbench));
  testing::expect_every_config_compiles(tasks, "loss");
}

}  // namespace
}  // namespace kbrl
