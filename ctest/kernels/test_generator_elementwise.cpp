// The generator registry and the elementwise generator: coverage, space sizes, expert configs,
// launch plans over the task's own tensors, the candidate-file form, and every legal configuration
// of every covered task compiled by NVRTC for sm_90a (no GPU needed). Whether safe configurations
// compute the right numbers cannot be checked here (the source is CUDA): the gpu tests do that.
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

#include <algorithm>

#include <harness/compile.h>
#include <harness/compile_cache.h>
#include <harness/compile_pool.h>
#include <kbrl/error.h>
#include <kernels/candidate_file.h>
#include <kernels/generator.h>
#include <reference/task_registry.h>

namespace kbrl {
namespace {

const std::vector<int> kElementwiseTasks = {5, 12, 19, 20, 21, 22, 25, 26, 27,
                                            28, 29, 30, 31, 32, 88};
// Tasks whose math has a transcendental or a division (fast_math applies).
const std::set<int> kApproximable = {21, 22, 25, 26, 27, 29, 30, 31, 88};

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

bool unsafe(const Config& c) {
  return c.at("precision") != "fp32" || c.at("fast_math") != "off" || c.at("tail") != "safe";
}

TEST(GeneratorRegistry, CoversEveryTaskExactlyOnce) {
  const std::vector<int> covered = covered_tasks();
  for (int id : kElementwiseTasks) {
    EXPECT_TRUE(std::find(covered.begin(), covered.end(), id) != covered.end()) << id;
    EXPECT_EQ(generator_for(id).name(), "elementwise");
  }
  // Every level-1 task has exactly one generator; an id outside the suite is an input error.
  std::vector<int> all(100);
  for (int i = 0; i < 100; ++i) all[static_cast<size_t>(i)] = i + 1;
  EXPECT_EQ(covered, all);
  for (int id = 1; id <= 100; ++id) {
    int families = 0;
    for (const Generator* g : generators()) families += g->covers(id) ? 1 : 0;
    EXPECT_EQ(families, 1) << "task " << id;
  }
  try {
    generator_for(101);
    FAIL() << "task 101 does not exist";
  } catch (const InputError& e) {
    EXPECT_TRUE(contains(e.what(), "task 101")) << e.what();
  }
  const Generator& g = generator_for(19);
  EXPECT_THROW(g.space(task_spec(1, Scale::small)), InputError);
  EXPECT_THROW(g.expert(task_spec(1, Scale::small)), InputError);
}

TEST(ElementwiseGenerator, SpaceSizesAndKnobNames) {
  for (int id : kElementwiseTasks) {
    const TaskSpec task = task_spec(id, Scale::kernelbench);
    const KnobSpace space = generator_for(id).space(task);
    const int64_t size = space.size();
    EXPECT_GE(size, 32) << id;
    EXPECT_LE(size, 1024) << id;
    EXPECT_EQ(size, kApproximable.count(id) ? 972 : 648) << id;
    for (const auto& k : space.knobs()) EXPECT_TRUE(is_canonical_knob(k.name)) << k.name;
    // The space does not depend on the scale: tokens mean the same at both.
    const KnobSpace small = generator_for(id).space(task_spec(id, Scale::small));
    EXPECT_EQ(small.enumerate(), space.enumerate()) << id;
  }
}

TEST(ElementwiseGenerator, ExpertIsLegalAndSafe) {
  for (int id : kElementwiseTasks) {
    const TaskSpec task = task_spec(id, Scale::kernelbench);
    const Generator& g = generator_for(id);
    const Config expert = g.expert(task);
    EXPECT_TRUE(g.space(task).is_legal(expert)) << g.space(task).why_illegal(expert);
    EXPECT_FALSE(unsafe(expert)) << expert.str();
    EXPECT_TRUE(g.generate(task, expert).options.empty());
  }
}

TEST(ElementwiseGenerator, RejectsIllegalConfigs) {
  const TaskSpec task = task_spec(19, Scale::small);
  const Generator& g = generator_for(19);
  Config c = g.expert(task);
  c.set("fast_math", "on");  // relu has nothing to approximate
  EXPECT_THROW(g.generate(task, c), InputError);
  c = g.expert(task);
  c.set("vec", "3");
  EXPECT_THROW(g.generate(task, c), InputError);
  EXPECT_THROW(g.generate(task_spec(23, Scale::small), g.expert(task)), InputError);
}

// Plans name only the task's tensors and scalar, with launches CUDA accepts; the candidate-file
// form parses back to the same plan.
TEST(ElementwiseGenerator, PlansUseOnlyTheTasksArguments) {
  int64_t checked = 0;
  for (const Scale scale : {Scale::kernelbench, Scale::small}) {
    for (int id : kElementwiseTasks) {
      const TaskSpec task = task_spec(id, scale);
      const Generator& g = generator_for(id);
      for (const Config& config : g.space(task).enumerate()) {
        const Candidate c = g.generate(task, config);
        ASSERT_EQ(c.launches.size(), 1u);
        const Launch& l = c.launches[0];
        EXPECT_EQ(l.block.x, config.integer("block"));
        EXPECT_GE(l.grid.x, 1u);
        EXPECT_LE(l.grid.x, 2147483647u);
        EXPECT_TRUE(c.scratch.empty());
        const int64_t tile =
            config.integer("block") * config.integer("vec") * config.integer("items_per_thread");
        const int64_t n = task.outputs[0].numel();
        if (config.at("grid") == "exact") {
          EXPECT_EQ(l.grid.x, (n + tile - 1) / tile);
        }
        for (const KernelArg& a : l.args) {
          switch (a.kind) {
            case ArgKind::input: EXPECT_LT(a.index, static_cast<int>(task.inputs.size())); break;
            case ArgKind::output: EXPECT_LT(a.index, static_cast<int>(task.outputs.size())); break;
            case ArgKind::task_scalar:
              EXPECT_LT(a.index, static_cast<int>(task.scalars.size()));
              break;
            case ArgKind::i64: EXPECT_EQ(a.ivalue, n); break;
            default: ADD_FAILURE() << "unexpected argument kind in task " << id;
          }
          EXPECT_GE(a.index, 0);
        }
        EXPECT_EQ(c.options.empty(), config.at("fast_math") == "off");
        // The candidate-file form (what `kbrl gen` prints) reads back to the same plan.
        if (checked++ % 37 == 0) {
          const Candidate parsed =
              parse_candidate_file(candidate_file_text(c, task, {"header"}), task, "gen.cu");
          EXPECT_EQ(parsed.launches, c.launches);
          EXPECT_EQ(parsed.options, c.options);
        }
      }
    }
  }
}

TEST(ElementwiseGenerator, SourcesFollowTheKnobs) {
  const TaskSpec task = task_spec(21, Scale::kernelbench);
  const Generator& g = generator_for(21);
  const KnobSpace space = g.space(task);
  const Config expert = g.expert(task);
  const Candidate base = g.generate(task, expert);
  EXPECT_TRUE(contains(base.source, "float4"));
  EXPECT_TRUE(contains(base.source, "__ldcs("));
  EXPECT_TRUE(contains(base.source, "__stcs("));
  EXPECT_TRUE(contains(base.source, "expf(v)"));
  EXPECT_TRUE(contains(base.source, "the last, partial tile"));
  auto with = [&](const char* overrides) {
    return g.generate(task, space.with_overrides(expert, Config::parse(overrides)));
  };
  EXPECT_TRUE(contains(with("fast_math=on").source, "__expf"));
  EXPECT_EQ(with("fast_math=on").options, std::vector<std::string>{"--use_fast_math"});
  EXPECT_TRUE(contains(with("precision=fp16_compute").source, "typedef __half T;"));
  EXPECT_FALSE(contains(with("tail=dropped").source, "the last, partial tile"));
  EXPECT_TRUE(contains(with("vec=2").source, "float2"));
  EXPECT_TRUE(contains(with("cache_hint=ldg").source, "__ldg("));
  // block and grid change only the launch.
  const Candidate other = with("block=128,grid=exact");
  EXPECT_EQ(other.source, base.source);
  EXPECT_NE(other.launches, base.launches);
  // Task 12 scales rows by A and reads B; task 5 passes the scalar s.
  const TaskSpec t12 = task_spec(12, Scale::kernelbench);
  const Candidate c12 = generator_for(12).generate(t12, generator_for(12).expert(t12));
  EXPECT_TRUE(contains(c12.source, "constexpr long long kCols = 4096;"));
  EXPECT_EQ(c12.launches[0].args[0], (KernelArg{ArgKind::input, 1}));
  EXPECT_EQ(c12.launches[0].args[3], (KernelArg{ArgKind::input, 0}));
  const TaskSpec t5 = task_spec(5, Scale::kernelbench);
  const Candidate c5 = generator_for(5).generate(t5, generator_for(5).expert(t5));
  EXPECT_EQ(c5.launches[0].args[3], (KernelArg{ArgKind::task_scalar, 0}));
}

// Every legal configuration of every covered task compiles for sm_90a. block and grid change only
// the launch, so configurations are grouped by their (source, options); each distinct unit is
// compiled once, at the KernelBench scale (the small scale's sources are the same except task 12's
// row length, which is compiled too). Unsafe configurations show in the precision audit.
TEST(ElementwiseGenerator, EveryConfigCompilesAndUnsafeOnesAreAudited) {
  std::vector<TaskSpec> tasks;
  for (int id : kElementwiseTasks) tasks.push_back(task_spec(id, Scale::kernelbench));
  tasks.push_back(task_spec(12, Scale::small));
  testing::expect_every_config_compiles(tasks, "elementwise");
}

}  // namespace
}  // namespace kbrl
