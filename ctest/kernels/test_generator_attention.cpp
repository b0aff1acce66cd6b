// The attention generator (task 97, scaled dot-product attention): coverage, space size, knob
// names, tokenization, the expert configuration, the three-launch plan over Q, K, V, the output and
// the declared score scratch, candidate files, sources following the knobs, and every legal
// configuration compiled by NVRTC for sm_90a (no GPU needed). Numerical correctness is checked on
// a GPU, not here: ctest/kernels/test_generator_gpu.cpp runs the expert and two more safe
// configurations of every covered task through the evaluator.
#include <algorithm>

#include <gtest/gtest.h>

#include "generator_testing.h"

#include <kbrl/error.h>
#include <kernels/candidate_file.h>
#include <kernels/generator.h>
#include <reference/task_registry.h>

namespace kbrl {
namespace {

constexpr int kTask = 97;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

bool unsafe(const Config& c) {
  return c.at("precision") != "fp32" || c.at("fast_math") != "off";
}

Candidate with(const TaskSpec& t, const char* overrides) {
  const Generator& g = generator_for(t.id);
  return g.generate(t, g.space(t).with_overrides(g.expert(t), Config::parse(overrides)));
}

TEST(AttentionGenerator, Coverage) {
  EXPECT_EQ(generator_for(kTask).name(), "attention");
  const std::vector<int> covered = covered_tasks();
  EXPECT_NE(std::find(covered.begin(), covered.end(), kTask), covered.end());
  const Generator& g = generator_for(kTask);
  for (int id = 1; id <= 100; ++id) EXPECT_EQ(g.covers(id), id == kTask) << id;
  EXPECT_THROW(g.space(task_spec(1, Scale::small)), InputError);
  EXPECT_THROW(g.expert(task_spec(1, Scale::small)), InputError);
}

TEST(AttentionGenerator, SpaceSizeTokensAndKnobNames) {
  const TaskSpec task = task_spec(kTask, Scale::kernelbench);
  const KnobSpace space = generator_for(kTask).space(task);
  EXPECT_EQ(space.size(), 96);
  for (const auto& k : space.knobs()) EXPECT_TRUE(is_canonical_knob(k.name)) << k.name;
  const std::vector<Config> all = space.enumerate();
  EXPECT_EQ(static_cast<int64_t>(all.size()), 96);
  EXPECT_EQ(generator_for(kTask).space(task_spec(kTask, Scale::small)).enumerate(), all);
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

TEST(AttentionGenerator, ExpertIsLegalAndSafe) {
  for (const Scale scale : {Scale::kernelbench, Scale::small}) {
    const TaskSpec task = task_spec(kTask, scale);
    const Generator& g = generator_for(kTask);
    const Config expert = g.expert(task);
    EXPECT_TRUE(g.space(task).is_legal(expert)) << g.space(task).why_illegal(expert);
    EXPECT_FALSE(unsafe(expert)) << expert.str();
    EXPECT_TRUE(g.generate(task, expert).options.empty());
  }
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
  EXPECT_THROW(g.generate(task_spec(1, Scale::small), g.expert(task)), InputError);
}

TEST(AttentionGenerator, PlansUseOnlyTheTasksArguments) {
  int64_t checked = 0;
  for (const Scale scale : {Scale::kernelbench, Scale::small}) {
    const TaskSpec task = task_spec(kTask, scale);
    const auto& shape = task.inputs[0].shape;
    const int64_t bh = shape[0] * shape[1], L = shape[2], D = shape[3];
    const Generator& g = generator_for(kTask);
    for (const Config& config : g.space(task).enumerate()) {
      const Candidate c = g.generate(task, config);
      EXPECT_EQ(c.task_id, kTask);
      ASSERT_EQ(c.scratch.size(), 1u);
      EXPECT_EQ(c.scratch[0].bytes, bh * L * L * 4);
      ASSERT_EQ(c.launches.size(), 3u);
      EXPECT_EQ(c.options.empty(), config.at("fast_math") == "off");
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
      EXPECT_EQ(s.args[6], (KernelArg{ArgKind::f32, 0, 1.0 / std::sqrt(static_cast<double>(D)), 0}));
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
      if (checked++ % 7 == 0) {
        const Candidate parsed =
            parse_candidate_file(candidate_file_text(c, task, {"header"}), task, "gen.cu");
        EXPECT_EQ(parsed.launches, c.launches);
        EXPECT_EQ(parsed.scratch, c.scratch);
        EXPECT_EQ(parsed.options, c.options);
      }
    }
  }
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

// Every legal configuration compiles for sm_90a; unsafe ones show in the precision audit, safe
// ones show nothing reduced. Sources do not depend on the scale (checked above).
TEST(AttentionGenerator, EveryConfigCompilesAndUnsafeOnesAreAudited) {
  testing::expect_every_config_compiles({task_spec(kTask, Scale::kernelbench)}, "attention");
}

}  // namespace
}  // namespace kbrl
