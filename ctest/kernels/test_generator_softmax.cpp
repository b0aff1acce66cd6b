// The softmax generator (tasks 23 softmax, 24 log_softmax over dim 1): coverage, space sizes,
// tokenization, the expert configuration, launch plans over the task's own tensors, and every
// legal configuration compiled by NVRTC for sm_90a (no GPU needed). Whether the kernels compute
// the right numbers is for the gpu tests.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <future>
#include <map>
#include <thread>

#include <unistd.h>

#include <gtest/gtest.h>

#include "generator_testing.h"

#include <harness/compile.h>
#include <harness/compile_cache.h>
#include <harness/compile_pool.h>
#include <kbrl/error.h>
#include <kernels/candidate_file.h>
#include <kernels/generator.h>
#include <reference/task_registry.h>

namespace kbrl {
namespace {

const std::vector<int> kSoftmaxTasks = {23, 24};

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

bool unsafe(const Config& c) {
  return c.at("precision") != "fp32" || c.at("fast_math") != "off";
}

TEST(SoftmaxGenerator, Coverage) {
  for (int id : kSoftmaxTasks) EXPECT_EQ(generator_for(id).name(), "softmax");
  const std::vector<int> covered = covered_tasks();
  for (int id : kSoftmaxTasks)
    EXPECT_NE(std::find(covered.begin(), covered.end(), id), covered.end()) << id;
  const Generator& g = generator_for(23);
  for (int id = 1; id <= 100; ++id) EXPECT_EQ(g.covers(id), id == 23 || id == 24) << id;
  EXPECT_THROW(g.space(task_spec(19, Scale::small)), InputError);
  EXPECT_THROW(g.expert(task_spec(19, Scale::small)), InputError);
}

TEST(SoftmaxGenerator, SpaceSizesTokensAndKnobNames) {
  for (int id : kSoftmaxTasks) {
    const TaskSpec task = task_spec(id, Scale::kernelbench);
    const KnobSpace space = generator_for(id).space(task);
    const int64_t size = space.size();
    EXPECT_GE(size, 32) << id;
    EXPECT_LE(size, 1024) << id;
    EXPECT_EQ(size, 288) << id;
    for (const auto& k : space.knobs()) EXPECT_TRUE(is_canonical_knob(k.name)) << k.name;
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
        const std::vector<bool> mask =
            space.legal_mask(std::span<const int>(tokens.data(), k));
        EXPECT_TRUE(mask.at(static_cast<size_t>(tokens[k]))) << c.str() << " at " << k;
      }
    }
  }
}

TEST(SoftmaxGenerator, ExpertIsLegalAndSafe) {
  for (int id : kSoftmaxTasks) {
    for (const Scale scale : {Scale::kernelbench, Scale::small}) {
      const TaskSpec task = task_spec(id, scale);
      const Generator& g = generator_for(id);
      const Config expert = g.expert(task);
      EXPECT_TRUE(g.space(task).is_legal(expert)) << g.space(task).why_illegal(expert);
      EXPECT_FALSE(unsafe(expert)) << expert.str();
      EXPECT_TRUE(g.generate(task, expert).options.empty());
    }
  }
}

TEST(SoftmaxGenerator, RejectsIllegalConfigs) {
  const TaskSpec task = task_spec(23, Scale::small);
  const Generator& g = generator_for(23);
  Config c = g.expert(task);
  c.set("precision", "fp16_compute");
  c.set("fast_math", "on");  // one unsafe precision knob at a time
  EXPECT_THROW(g.generate(task, c), InputError);
  c = g.expert(task);
  c.set("vec", "2");
  EXPECT_THROW(g.generate(task, c), InputError);
  EXPECT_THROW(g.generate(task_spec(19, Scale::small), g.expert(task)), InputError);
}

TEST(SoftmaxGenerator, PlansUseOnlyTheTasksArguments) {
  int64_t checked = 0;
  for (const Scale scale : {Scale::kernelbench, Scale::small}) {
    for (int id : kSoftmaxTasks) {
      const TaskSpec task = task_spec(id, scale);
      const Generator& g = generator_for(id);
      const int64_t rows = task.inputs[0].shape[0], cols = task.inputs[0].shape[1];
      for (const Config& config : g.space(task).enumerate()) {
        const Candidate c = g.generate(task, config);
        EXPECT_EQ(c.task_id, id);
        ASSERT_EQ(c.launches.size(), 1u);
        const Launch& l = c.launches[0];
        EXPECT_EQ(l.block.x, config.integer("block"));
        EXPECT_EQ(l.block.y * l.block.z * l.grid.y * l.grid.z, 1u);
        EXPECT_GE(l.grid.x, 1u);
        EXPECT_LE(static_cast<int64_t>(l.grid.x), rows);
        if (config.at("grid") == "exact") {
          EXPECT_EQ(static_cast<int64_t>(l.grid.x), rows);
        }
        EXPECT_EQ(l.shared_bytes, 0u);
        EXPECT_TRUE(c.scratch.empty());
        ASSERT_EQ(l.args.size(), 4u);
        EXPECT_EQ(l.args[0], (KernelArg{ArgKind::input, 0}));
        EXPECT_EQ(l.args[1], (KernelArg{ArgKind::output, 0}));
        EXPECT_EQ(l.args[2], (KernelArg{ArgKind::i64, 0, 0.0, rows}));
        EXPECT_EQ(l.args[3], (KernelArg{ArgKind::i64, 0, 0.0, cols}));
        EXPECT_EQ(c.options.empty(), config.at("fast_math") == "off");
        if (checked++ % 23 == 0) {
          const Candidate parsed =
              parse_candidate_file(candidate_file_text(c, task, {"header"}), task, "gen.cu");
          EXPECT_EQ(parsed.launches, c.launches);
          EXPECT_EQ(parsed.options, c.options);
        }
      }
    }
  }
}

TEST(SoftmaxGenerator, SourcesFollowTheKnobs) {
  const TaskSpec task = task_spec(23, Scale::kernelbench);
  const Generator& g = generator_for(23);
  const KnobSpace space = g.space(task);
  const Config expert = g.expert(task);
  const Candidate base = g.generate(task, expert);
  EXPECT_TRUE(contains(base.source, "float4"));
  EXPECT_TRUE(contains(base.source, "__ldcs("));
  EXPECT_TRUE(contains(base.source, "__stcs("));
  EXPECT_TRUE(contains(base.source, "k_div(k_exp("));
  EXPECT_TRUE(contains(base.source, "return expf(d);"));
  EXPECT_TRUE(contains(base.source, "kbrl_add(st, v);"));
  EXPECT_FALSE(contains(base.source, "__shared__ __align__(16) float cache"));
  auto with = [&](const TaskSpec& t, const char* overrides) {
    return generator_for(t.id).generate(
        t, space.with_overrides(generator_for(t.id).expert(t), Config::parse(overrides)));
  };
  EXPECT_TRUE(contains(with(task, "fast_math=on").source, "__expf"));
  EXPECT_EQ(with(task, "fast_math=on").options, std::vector<std::string>{"--use_fast_math"});
  EXPECT_TRUE(contains(with(task, "precision=fp16_compute").source, "hexp("));
  EXPECT_FALSE(contains(with(task, "vec=1").source, "float4"));
  EXPECT_FALSE(contains(with(task, "cache_hint=none").source, "__ldcs("));
  EXPECT_TRUE(contains(with(task, "variant=three_pass").source, "MaxOp{}"));
  EXPECT_TRUE(contains(with(task, "variant=block_per_row_cached").source,
                       "constexpr long long kCache = 8192;"));
  EXPECT_TRUE(contains(with(task_spec(23, Scale::small), "variant=block_per_row_cached").source,
                       "constexpr long long kCache = 1000;"));
  // block and grid change only the launch.
  const Candidate other = with(task, "block=128,grid=waves");
  EXPECT_EQ(other.source, base.source);
  EXPECT_NE(other.launches, base.launches);
  // log_softmax: x - max - log(sum).
  const TaskSpec t24 = task_spec(24, Scale::kernelbench);
  const Candidate c24 = generator_for(24).generate(t24, generator_for(24).expert(t24));
  EXPECT_TRUE(contains(c24.source, "const float logsum = k_log(sum);"));
  EXPECT_TRUE(contains(c24.source, "q.x - m - logsum"));
  EXPECT_TRUE(contains(with(t24, "fast_math=on").source, "__logf"));
}

// Every legal configuration of both tasks, at both scales, compiles for sm_90a: configurations are
// grouped by (source, options) and each distinct unit compiled once. Unsafe configurations show in
// the precision audit; safe ones show nothing reduced.
TEST(SoftmaxGenerator, EveryConfigCompilesAndUnsafeOnesAreAudited) {
  std::vector<TaskSpec> tasks;
  for (const Scale scale : {Scale::kernelbench, Scale::small})
    for (int id : kSoftmaxTasks) tasks.push_back(task_spec(id, scale));
  testing::expect_every_config_compiles(tasks, "softmax");
}

}  // namespace
}  // namespace kbrl
