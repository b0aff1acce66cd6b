// The generator registry and the elementwise generator: coverage, space sizes, expert configs,
// launch plans over the task's own tensors, the candidate-file form, and every legal configuration
// of every covered task compiled by NVRTC for sm_90a (no GPU needed). Whether safe configurations
// compute the right numbers cannot be checked here (the source is CUDA): the gpu tests do that.
// The checks every family shares are in generator_testing.h.
#include <algorithm>
#include <set>
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

// Tasks whose math has a transcendental or a division (fast_math applies).
const std::set<int> kApproximable = {21, 22, 25, 26, 27, 29, 30, 31, 88};

const testing::FamilySpec kElementwise = {
    .name = "elementwise",
    .space_sizes = testing::sizes_of({5, 12, 19, 20, 21, 22, 25, 26, 27, 28, 29, 30, 31, 32, 88},
                                     [](int id) { return kApproximable.count(id) ? 972 : 648; }),
    .foreign_tasks = {1, 23},
    .arg_kinds = {ArgKind::input, ArgKind::output, ArgKind::task_scalar, ArgKind::i64},
};

TEST(GeneratorRegistry, CoversEveryTaskExactlyOnce) {
  // Every level-1 task has exactly one generator; an id outside the suite is an input error.
  std::vector<int> all(100);
  for (int i = 0; i < 100; ++i) all[static_cast<size_t>(i)] = i + 1;
  EXPECT_EQ(covered_tasks(), all);
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
}

TEST(ElementwiseGenerator, Coverage) { testing::expect_coverage(kElementwise); }

TEST(ElementwiseGenerator, SpaceSizesTokensAndKnobNames) {
  testing::expect_knob_spaces(kElementwise);
}

TEST(ElementwiseGenerator, ExpertIsLegalAndSafe) {
  testing::expect_expert_legal_and_safe(kElementwise);
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
}

// One launch of `block` threads over the task's tensors and scalar; the only constant is n.
TEST(ElementwiseGenerator, PlansUseOnlyTheTasksArguments) {
  testing::expect_plans_use_only_task_arguments(
      kElementwise, [](const TaskSpec& task, const Config& config, const Candidate& c) {
        ASSERT_EQ(c.launches.size(), 1u);
        const Launch& l = c.launches[0];
        EXPECT_EQ(l.block.x, config.integer("block"));
        const int64_t tile =
            config.integer("block") * config.integer("vec") * config.integer("items_per_thread");
        const int64_t n = task.outputs[0].numel();
        if (config.at("grid") == "exact") {
          EXPECT_EQ(l.grid.x, (n + tile - 1) / tile);
        }
        for (const KernelArg& a : l.args) {
          if (a.kind == ArgKind::i64) {
            EXPECT_EQ(a.ivalue, n);
          }
        }
      });
}

TEST(ElementwiseGenerator, SourcesFollowTheKnobs) {
  const TaskSpec task = task_spec(21, Scale::kernelbench);
  const Candidate base = generate_with(task);
  EXPECT_TRUE(contains(base.source, "float4"));
  EXPECT_TRUE(contains(base.source, "__ldcs("));
  EXPECT_TRUE(contains(base.source, "__stcs("));
  EXPECT_TRUE(contains(base.source, "expf(v)"));
  EXPECT_TRUE(contains(base.source, "the last, partial tile"));
  auto with = [&](const char* overrides) { return generate_with(task, overrides); };
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
  const Candidate c12 = generate_with(task_spec(12, Scale::kernelbench));
  EXPECT_TRUE(contains(c12.source, "constexpr long long kCols = 4096;"));
  EXPECT_EQ(c12.launches[0].args[0], (KernelArg{ArgKind::input, 1}));
  EXPECT_EQ(c12.launches[0].args[3], (KernelArg{ArgKind::input, 0}));
  const Candidate c5 = generate_with(task_spec(5, Scale::kernelbench));
  EXPECT_EQ(c5.launches[0].args[3], (KernelArg{ArgKind::task_scalar, 0}));
}

// The generator tests' pairwise cover (generator_testing.h) holds every pair of knob settings that
// some legal configuration holds, in fewer configurations: on an elementwise and a gemm task.
TEST(GeneratorTesting, PairwiseCoverHoldsEveryPairOfKnobSettings) {
  for (int id : {19, 1}) {
    const TaskSpec task = task_spec(id, Scale::kernelbench);
    const std::vector<Config> all = generator_for(id).space(task).enumerate();
    const std::vector<Config> cover = testing::pairwise_cover(all);
    auto pairs = [](const std::vector<Config>& configs) {
      std::set<std::string> out;
      for (const Config& c : configs)
        for (size_t i = 0; i < c.entries().size(); ++i)
          for (size_t j = i + 1; j < c.entries().size(); ++j)
            out.insert(c.entries()[i].first + "=" + c.entries()[i].second + "," + c.entries()[j].first + "=" +
                       c.entries()[j].second);
      return out;
    };
    EXPECT_EQ(pairs(cover), pairs(all)) << "task " << id;
    EXPECT_LT(cover.size() * 3, all.size()) << "task " << id << ": " << cover.size() << " of " << all.size();
    for (const Config& c : cover) EXPECT_NE(std::find(all.begin(), all.end(), c), all.end()) << c.str();
  }
}

// Every legal configuration (each task's pairwise cover unless KBRL_EVERY_CONFIG=1) of every
// covered task compiles for sm_90a. block and grid change only the launch, so configurations are
// grouped by their (source, options); each distinct unit is compiled once, at the KernelBench scale
// (the small scale's sources are the same except task 12's row length, which is compiled too).
// Unsafe configurations show in the precision audit.
TEST(ElementwiseGenerator, ConfigsCompileAndUnsafeOnesAreAudited) {
  std::vector<TaskSpec> tasks = testing::task_specs(kElementwise.tasks());
  tasks.push_back(task_spec(12, Scale::small));
  testing::expect_every_config_compiles(tasks, "elementwise");
}

}  // namespace
}  // namespace kbrl
