// The reduction generator (tasks 47, 48, 49, 51, 52, 53): coverage, space sizes, expert configs,
// tokenization, launch plans over the task's own tensors and declared scratch, the candidate-file
// form, and every distinct (source, options) of every legal configuration compiled by NVRTC for
// sm_90a (no GPU needed). Numerical correctness is for the gpu tests.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <future>
#include <map>
#include <set>
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

const std::vector<int> kReductionTasks = {47, 48, 49, 51, 52, 53};
const std::set<int> kSumTasks = {47, 48};
const std::set<int> kArgTasks = {51, 52};

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

bool unsafe(const Config& c) {
  return (c.has("precision") && c.at("precision") != "fp32") ||
         (c.has("tail") && c.at("tail") != "safe");
}

TEST(ReductionGenerator, Coverage) {
  const std::vector<int> covered = covered_tasks();
  for (int id : kReductionTasks) {
    EXPECT_EQ(generator_for(id).name(), "reduction") << id;
    EXPECT_NE(std::find(covered.begin(), covered.end(), id), covered.end()) << id;
  }
  const Generator& g = generator_for(47);
  for (int id : {1, 19, 50, 23}) EXPECT_FALSE(g.covers(id)) << id;
  EXPECT_THROW(g.space(task_spec(19, Scale::small)), InputError);
  EXPECT_THROW(g.expert(task_spec(19, Scale::small)), InputError);
  // No other family claims these tasks.
  for (int id : kReductionTasks)
    for (const Generator* other : generators()) {
      if (other != &g) {
        EXPECT_FALSE(other->covers(id)) << other->name() << " " << id;
      }
    }
}

TEST(ReductionGenerator, SpaceSizesAndTokens) {
  for (int id : kReductionTasks) {
    const TaskSpec task = task_spec(id, Scale::kernelbench);
    const KnobSpace space = generator_for(id).space(task);
    const int64_t size = space.size();
    EXPECT_GE(size, 32) << id;
    EXPECT_LE(size, 1024) << id;
    EXPECT_EQ(size, kSumTasks.count(id) ? 756 : 378) << id;
    const std::vector<Config> all = space.enumerate();
    EXPECT_EQ(static_cast<int64_t>(all.size()), size);
    EXPECT_EQ(generator_for(id).space(task_spec(id, Scale::small)).enumerate(), all) << id;
    for (const Config& c : all) {
      const std::vector<int> tokens = space.tokenize(c);
      ASSERT_EQ(tokens.size(), space.knobs().size());
      EXPECT_EQ(space.detokenize(tokens), c);
      // Every token is offered by the legal mask of its prefix.
      for (size_t i = 0; i < tokens.size(); ++i) {
        const std::vector<bool> mask =
            space.legal_mask(std::span<const int>(tokens.data(), i));
        EXPECT_TRUE(mask[static_cast<size_t>(tokens[i])]) << c.str() << " at " << i;
      }
      EXPECT_EQ(space.parse(c.str()), c);
    }
  }
}

TEST(ReductionGenerator, ExpertIsLegalAndSafe) {
  for (int id : kReductionTasks) {
    const TaskSpec task = task_spec(id, Scale::kernelbench);
    const Generator& g = generator_for(id);
    const Config expert = g.expert(task);
    EXPECT_TRUE(g.space(task).is_legal(expert)) << g.space(task).why_illegal(expert);
    EXPECT_FALSE(unsafe(expert)) << expert.str();
    const Candidate c = g.generate(task, expert);
    EXPECT_TRUE(c.options.empty());
    EXPECT_TRUE(c.scratch.empty());
    ASSERT_EQ(c.launches.size(), 1u);
    EXPECT_EQ(c.launches[0].grid.x, 128u);  // cdiv(4095, 32)
    EXPECT_EQ(c.launches[0].grid.y, 128u);  // B
    EXPECT_EQ(c.launches[0].block.x * c.launches[0].block.y, 256u);
  }
}

TEST(ReductionGenerator, RejectsIllegalConfigs) {
  const TaskSpec task = task_spec(47, Scale::small);
  const Generator& g = generator_for(47);
  const KnobSpace space = g.space(task);
  Config c = g.expert(task);
  c.set("cols_per_block", "block");  // only for column_per_thread
  EXPECT_THROW(g.generate(task, c), InputError);
  c = g.expert(task);
  c.set("row_splits", "4");  // only for two_kernel
  EXPECT_THROW(g.generate(task, c), InputError);
  c = g.expert(task);
  c.set("unroll", "1");  // accumulators 4 > unroll 1
  EXPECT_THROW(g.generate(task, c), InputError);
  c = g.expert(task);
  c.set("tail", "dropped");  // sum has no tail knob
  EXPECT_THROW(g.generate(task, c), InputError);
  const TaskSpec t51 = task_spec(51, Scale::small);
  c = generator_for(51).expert(t51);
  c.set("precision", "fp16_compute");  // argmax has no precision knob
  EXPECT_THROW(generator_for(51).generate(t51, c), InputError);
  EXPECT_THROW(g.generate(task_spec(19, Scale::small), g.expert(task)), InputError);
}

// Plans name only the task's input x, output y and the scratch the candidate declares; launches
// are within CUDA's limits; the candidate-file form parses back to the same plan.
TEST(ReductionGenerator, PlansUseOnlyTheTasksArguments) {
  int64_t checked = 0;
  for (const Scale scale : {Scale::kernelbench, Scale::small}) {
    for (int id : kReductionTasks) {
      const TaskSpec task = task_spec(id, scale);
      const Generator& g = generator_for(id);
      const int64_t B = task.inputs[0].shape[0], K = task.inputs[0].shape[2];
      for (const Config& config : g.space(task).enumerate()) {
        const Candidate c = g.generate(task, config);
        const bool two = config.at("variant") == "two_kernel";
        ASSERT_EQ(c.launches.size(), two ? 2u : 1u) << config.str();
        EXPECT_EQ(c.scratch.size(), two ? (kArgTasks.count(id) ? 2u : 1u) : 0u);
        for (const ScratchBuffer& s : c.scratch) {
          EXPECT_EQ(s.bytes, B * config.integer("row_splits") * K * 4);
        }
        const Launch& main = c.launches[0];
        EXPECT_EQ(main.block.x * main.block.y, config.integer("block")) << config.str();
        EXPECT_EQ(static_cast<int64_t>(main.grid.x) * main.block.x >= K, true);
        for (const Launch& l : c.launches) {
          EXPECT_GE(l.grid.x, 1u);
          EXPECT_LE(l.grid.y, 65535u);
          EXPECT_LE(l.grid.z, 65535u);
          EXPECT_LE(l.block.x * l.block.y * l.block.z, 1024u);
          EXPECT_LE(l.shared_bytes, 48u * 1024u);
          for (const KernelArg& a : l.args) {
            EXPECT_GE(a.index, 0);
            switch (a.kind) {
              case ArgKind::input: EXPECT_EQ(a.index, 0); break;
              case ArgKind::output: EXPECT_EQ(a.index, 0); break;
              case ArgKind::scratch:
                EXPECT_LT(a.index, static_cast<int>(c.scratch.size()));
                break;
              case ArgKind::i64: EXPECT_GT(a.ivalue, 0); break;
              case ArgKind::f32: EXPECT_GT(a.value, 0.0); break;
              default: ADD_FAILURE() << "unexpected argument kind in task " << id;
            }
          }
        }
        EXPECT_TRUE(c.options.empty());
        if (checked++ % 17 == 0) {
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

TEST(ReductionGenerator, SourcesFollowTheKnobs) {
  const TaskSpec task = task_spec(48, Scale::kernelbench);
  const Generator& g = generator_for(48);
  const KnobSpace space = g.space(task);
  const Config expert = g.expert(task);
  const Candidate base = g.generate(task, expert);
  EXPECT_TRUE(contains(base.source, "__ldcs("));
  EXPECT_TRUE(contains(base.source, "typedef float Acc;"));
  EXPECT_TRUE(contains(base.source, "constexpr int kAcc = 4;"));
  // Mean is the sum times 1/R.
  EXPECT_EQ(base.launches[0].args.back(), (KernelArg{ArgKind::f32, 0, 1.0 / 4096, 0}));
  const TaskSpec t47 = task_spec(47, Scale::kernelbench);
  const Candidate sum = generator_for(47).generate(t47, generator_for(47).expert(t47));
  EXPECT_EQ(sum.source, base.source);
  EXPECT_EQ(sum.launches[0].args.back(), (KernelArg{ArgKind::f32, 0, 1.0, 0}));
  auto with = [&](const char* overrides) {
    return g.generate(task, space.with_overrides(expert, Config::parse(overrides)));
  };
  EXPECT_TRUE(contains(with("precision=fp16_compute").source, "typedef __half Acc;"));
  EXPECT_TRUE(contains(with("cache_hint=ldg").source, "__ldg("));
  EXPECT_EQ(with("block=512,cols_per_block=64").source, base.source);
  const Candidate two = with("variant=two_kernel,row_splits=16");
  EXPECT_TRUE(contains(two.source, "kbrl_reduce_combine"));
  EXPECT_EQ(two.launches[0].grid.y, 16u);
  const TaskSpec t51 = task_spec(51, Scale::kernelbench);
  const Candidate am = generator_for(51).generate(t51, generator_for(51).expert(t51));
  EXPECT_TRUE(contains(am.source, "long long* __restrict__ y"));
  EXPECT_TRUE(contains(am.source, "k_better"));
  const Config dropped =
      generator_for(51).space(t51).with_overrides(generator_for(51).expert(t51),
                                                   Config::parse("tail=dropped"));
  EXPECT_TRUE(contains(generator_for(51).generate(t51, dropped).source, "tail=dropped (unsafe)"));
}

// Every distinct (source, options) of every legal configuration of every task (both scales'
// sources are the same; they are added anyway) compiles for sm_90a; fp16_compute shows in the
// precision audit and fp32 configurations show nothing.
TEST(ReductionGenerator, EveryConfigCompilesAndUnsafeOnesAreAudited) {
  std::vector<TaskSpec> tasks;
  for (const Scale scale : {Scale::kernelbench, Scale::small})
    for (int id : kReductionTasks) tasks.push_back(task_spec(id, scale));
  testing::expect_every_config_compiles(tasks, "reduction");
}

}  // namespace
}  // namespace kbrl
