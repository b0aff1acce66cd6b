// The scan generator (tasks 89 cumsum, 90 cumprod, 91 reverse cumsum, 92 exclusive cumsum, 93 masked
// cumsum, along dim 1): coverage, space sizes, tokenization, the expert configuration, launch plans
// over the task's own tensors, sources that follow the knobs, and every legal configuration
// compiled by NVRTC for sm_90a (no GPU needed). Numerical correctness is checked on a GPU:
// ctest/kernels/test_generator_gpu.cpp runs every covered task through the evaluator; this test
// does not check numbers on the CPU.
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

const std::vector<int> kScanTasks = {89, 90, 91, 92, 93};

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

bool unsafe(const Config& c) { return c.at("precision") != "fp32" || c.at("tail") != "safe"; }

TEST(ScanGenerator, Coverage) {
  for (int id : kScanTasks) EXPECT_EQ(generator_for(id).name(), "scan");
  const std::vector<int> covered = covered_tasks();
  for (int id : kScanTasks)
    EXPECT_NE(std::find(covered.begin(), covered.end(), id), covered.end()) << id;
  const Generator& g = generator_for(89);
  for (int id = 1; id <= 100; ++id) EXPECT_EQ(g.covers(id), id >= 89 && id <= 93) << id;
  EXPECT_THROW(g.space(task_spec(19, Scale::small)), InputError);
  EXPECT_THROW(g.expert(task_spec(19, Scale::small)), InputError);
}

TEST(ScanGenerator, SpaceSizesTokensAndKnobNames) {
  for (int id : kScanTasks) {
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
        const std::vector<bool> mask = space.legal_mask(std::span<const int>(tokens.data(), k));
        EXPECT_TRUE(mask.at(static_cast<size_t>(tokens[k]))) << c.str() << " at " << k;
      }
    }
  }
}

TEST(ScanGenerator, ExpertIsLegalAndSafe) {
  for (int id : kScanTasks) {
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

TEST(ScanGenerator, RejectsIllegalConfigs) {
  const TaskSpec task = task_spec(89, Scale::small);
  const Generator& g = generator_for(89);
  Config c = g.expert(task);
  c.set("precision", "fp16_compute");
  c.set("tail", "dropped");  // one unsafe knob at a time
  EXPECT_THROW(g.generate(task, c), InputError);
  c = g.expert(task);
  c.set("vec", "2");
  EXPECT_THROW(g.generate(task, c), InputError);
  c = g.expert(task);
  c.set("fast_math", "on");  // no such knob
  EXPECT_THROW(g.generate(task, c), InputError);
  EXPECT_THROW(g.generate(task_spec(19, Scale::small), g.expert(task)), InputError);
}

TEST(ScanGenerator, PlansUseOnlyTheTasksArguments) {
  int64_t checked = 0;
  for (const Scale scale : {Scale::kernelbench, Scale::small}) {
    for (int id : kScanTasks) {
      const TaskSpec task = task_spec(id, scale);
      const Generator& g = generator_for(id);
      const int64_t rows = task.inputs[0].shape[0], cols = task.inputs[0].shape[1];
      for (const Config& config : g.space(task).enumerate()) {
        const Candidate c = g.generate(task, config);
        EXPECT_EQ(c.task_id, id);
        ASSERT_EQ(c.launches.size(), 1u);
        const Launch& l = c.launches[0];
        EXPECT_EQ(l.kernel, "kbrl_scan");
        EXPECT_EQ(l.block.x, config.integer("block"));
        EXPECT_EQ(l.block.y * l.block.z * l.grid.y * l.grid.z, 1u);
        const int64_t rows_per_block =
            config.at("variant") == "block_per_row" ? 1 : config.integer("block") / 32;
        EXPECT_EQ(static_cast<int64_t>(l.grid.x), (rows + rows_per_block - 1) / rows_per_block);
        EXPECT_EQ(l.shared_bytes, 0u);
        EXPECT_TRUE(c.scratch.empty());
        EXPECT_TRUE(c.options.empty());
        size_t a = 0;
        ASSERT_EQ(l.args.size(), id == 93 ? 5u : 4u);
        EXPECT_EQ(l.args[a++], (KernelArg{ArgKind::input, 0}));
        if (id == 93) {
          EXPECT_EQ(l.args[a++], (KernelArg{ArgKind::input, 1}));
        }
        EXPECT_EQ(l.args[a++], (KernelArg{ArgKind::output, 0}));
        EXPECT_EQ(l.args[a++], (KernelArg{ArgKind::i64, 0, 0.0, rows}));
        EXPECT_EQ(l.args[a++], (KernelArg{ArgKind::i64, 0, 0.0, cols}));
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

TEST(ScanGenerator, SourcesFollowTheKnobs) {
  const TaskSpec task = task_spec(89, Scale::kernelbench);
  const Generator& g = generator_for(89);
  auto with = [&](const TaskSpec& t, const char* overrides) {
    const Generator& gen = generator_for(t.id);
    return gen.generate(t, gen.space(t).with_overrides(gen.expert(t), Config::parse(overrides)));
  };
  const Candidate base = g.generate(task, g.expert(task));
  EXPECT_TRUE(contains(base.source, "__shared__ T totals[2][32];"));
  EXPECT_TRUE(contains(base.source, "constexpr int kItems = 8;"));
  EXPECT_TRUE(contains(base.source, "constexpr bool kVec4 = true;"));
  EXPECT_TRUE(contains(base.source, "constexpr bool kReverse = false;"));
  EXPECT_TRUE(contains(base.source, "constexpr bool kExclusive = false;"));
  EXPECT_TRUE(contains(base.source, "constexpr bool kSafeTail = true;"));
  EXPECT_TRUE(contains(base.source, "return a + b;"));
  EXPECT_TRUE(contains(base.source, "__ldcs("));
  EXPECT_TRUE(contains(base.source, "__stcs("));
  EXPECT_FALSE(contains(with(task, "cache_hint=none").source, "__ldcs("));
  EXPECT_TRUE(contains(with(task, "vec=1").source, "constexpr bool kVec4 = false;"));
  EXPECT_TRUE(contains(with(task, "items_per_thread=16").source, "constexpr int kItems = 16;"));
  EXPECT_TRUE(contains(with(task, "tail=dropped").source, "constexpr bool kSafeTail = false;"));
  EXPECT_TRUE(contains(with(task, "precision=fp16_compute").source, "__hadd("));
  const Candidate warp = with(task, "variant=warp_per_row");
  EXPECT_FALSE(contains(warp.source, "__shared__"));
  EXPECT_FALSE(contains(warp.source, "__syncthreads"));
  // block changes only the launch; both scales share the source.
  const Candidate other = with(task, "block=1024");
  EXPECT_EQ(other.source, base.source);
  EXPECT_NE(other.launches, base.launches);
  EXPECT_EQ(g.generate(task_spec(89, Scale::small), g.expert(task)).source, base.source);
  // The tasks' math.
  EXPECT_TRUE(contains(with(task_spec(90, Scale::small), "").source, "return a * b;"));
  EXPECT_TRUE(contains(with(task_spec(90, Scale::small), "precision=fp16_compute").source,
                       "__hmul("));
  EXPECT_TRUE(contains(with(task_spec(91, Scale::small), "").source,
                       "constexpr bool kReverse = true;"));
  EXPECT_TRUE(contains(with(task_spec(92, Scale::small), "").source,
                       "constexpr bool kExclusive = true;"));
  const Candidate c93 = with(task_spec(93, Scale::small), "");
  EXPECT_TRUE(contains(c93.source, "const unsigned char* __restrict__ mask"));
  EXPECT_TRUE(contains(c93.source, "ld_x(xr + i) * (float)mr[i]"));
}

// Every legal configuration of every task compiles for sm_90a: configurations are grouped by
// (source, options) and each distinct unit compiled once. Shapes are kernel arguments, so the small
// scale's sources are the KernelBench scale's (checked above) and only that scale is compiled.
// Unsafe configurations show in the precision audit; safe ones show nothing reduced.
TEST(ScanGenerator, EveryConfigCompilesAndUnsafeOnesAreAudited) {
  std::vector<TaskSpec> tasks;
  for (int id : kScanTasks) tasks.push_back(task_spec(id, Scale::kernelbench));
  testing::expect_every_config_compiles(tasks, "scan");
}

}  // namespace
}  // namespace kbrl
